"""Pharia Kernel's SDK in a virtualenv of its own, and its `pharia-skill build` run on a skill file.

pharia-skill 0.20.0 pins pydantic 2.11.7 (ours is 2.14.3) and needs Python 3.11, so it gets a separate
venv under .cache/kernel-sdk/, made once and stamped. ``build_component`` runs the SDK's own command,
which installs the SDK's WASI pydantic-core into ``wasi_deps/`` and calls componentize-py.
"""

from __future__ import annotations

import ast
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from buildtools.deps.deps import CACHE, log

# pharia-skill 0.20.0 and everything it pulls, as resolved from PyPI (a lock: the build is repeatable).
SDK_PINS = {
    "pharia-skill": "0.20.0",
    "componentize-py": "0.17.2",
    "pharia-skill-cli": "0.4.9",
    "pydantic": "2.11.7",
    "pydantic-core": "2.33.2",
    "typing-extensions": "4.16.0",
    "typing-inspection": "0.4.5",
    "annotated-types": "0.8.0",
    "typer": "0.15.4",
    "click": "8.1.8",
    "rich": "14.3.4",
    "markdown-it-py": "4.3.0",
    "mdurl": "0.1.2",
    "pygments": "2.21.0",
    "shellingham": "1.5.4",
    "python-dotenv": "1.2.4",
    "requests": "2.34.2",
    "urllib3": "2.8.0",
    "idna": "3.20",
    "certifi": "2026.10.19.post1",
    "charset-normalizer": "3.5.3",
    "opentelemetry-api": "1.45.2",
    "opentelemetry-sdk": "1.45.2",
    "opentelemetry-proto": "1.45.2",
    "opentelemetry-semantic-conventions": "0.66b2",
    "opentelemetry-exporter-otlp-proto-http": "1.45.2",
    "opentelemetry-exporter-otlp-proto-common": "1.45.2",
    "opentelemetry-exporter-otlp-common": "0.66b2",
    "opentelemetry-exporter-http-transport": "0.66b2",
    "googleapis-common-protos": "1.76.0",
    "protobuf": "7.36.2",
}
# resolved: .cache may be a symlink (worktrees share it), and a venv's scripts name its path
SDK_DIR = (CACHE / "kernel-sdk").resolve()
VENV = SDK_DIR / "venv"
STAMP = VENV / ".csi-stamp"

# The decorator a skill uses -> the world `pharia-skill build --skill-type` targets.
WORLDS = {"skill": "skill", "message_stream": "message-stream-skill"}


class KernelBuildError(Exception):
    """`pharia-skill build` failed, or the skill file cannot be handed to it; ``stderr`` is the command's."""

    def __init__(self, message: str, stdout: str = "", stderr: str = "") -> None:
        super().__init__(message)
        self.stdout = stdout
        self.stderr = stderr


def _base_python() -> str:
    """A Python 3.11 (pharia-skill says ``Requires-Python ~=3.11.0``)."""
    if sys.version_info[:2] == (3, 11):
        return sys.executable
    found = shutil.which("python3.11")
    if not found:
        raise KernelBuildError("pharia-skill 0.20.0 needs Python 3.11: no python3.11 on PATH")
    return found


def _digest(python: str) -> str:
    version = subprocess.run([python, "-c", "import sys; print(sys.version)"], capture_output=True,
                             text=True, check=True).stdout
    pins = "\n".join(f"{name}=={pin}" for name, pin in sorted(SDK_PINS.items()))
    # the venv's own path too: one made through another path (a removed worktree) is made again
    return hashlib.sha256(f"{version}\n{pins}\n{VENV}".encode()).hexdigest()


def ensure_sdk() -> Path:
    """The venv's bin/ folder, with pharia-skill and its pins installed (made once; locked against
    other processes, since .cache is shared)."""
    SDK_DIR.mkdir(parents=True, exist_ok=True)
    python = _base_python()
    digest = _digest(python)
    with open(SDK_DIR / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if STAMP.exists() and STAMP.read_text() == digest:
            return VENV / "bin"
        # A venv cannot be moved (its scripts name their interpreter by absolute path), so it is
        # made in place and only counts once stamped.
        if VENV.exists():
            shutil.rmtree(VENV)
        subprocess.run([python, "-m", "venv", str(VENV)], check=True)
        pins = [f"{name}=={pin}" for name, pin in SDK_PINS.items()]
        log(f"kernel SDK venv: pip install {' '.join(pins[:2])} ... ({len(pins)} pins)")
        out = subprocess.run([str(VENV / "bin" / "python"), "-m", "pip", "install", "-q", *pins],
                             capture_output=True, text=True)
        if out.returncode != 0:
            raise KernelBuildError(f"installing pharia-skill into {VENV} failed", out.stdout, out.stderr)
        STAMP.write_text(digest)
    return VENV / "bin"


def skill_world(source: str) -> str:
    """The world the file's decorator targets: ``skill`` or ``message-stream-skill``."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef):
            for deco in node.decorator_list:
                name = deco.id if isinstance(deco, ast.Name) else deco.attr if isinstance(deco, ast.Attribute) else ""
                if name in WORLDS:
                    found.add(WORLDS[name])
    if len(found) != 1:
        raise KernelBuildError("a skill file needs exactly one kind of decorator, @skill or @message_stream; "
                               f"found {sorted(found) or 'none'}")
    return found.pop()


def _build_env(bin_dir: Path) -> dict[str, str]:
    # The CLI runs `pip3` and `componentize-py` from PATH; our PYTHONPATH (py/, the repo) must not leak in.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", VIRTUAL_ENV=str(bin_dir.parent),
               _TYPER_STANDARD_TRACEBACK="1", NO_COLOR="1", TERM="dumb", COLUMNS="100", PIP_QUIET="1")
    return env


def build_component(skill_file: Path, out_dir: Path) -> Path:
    """Run ``pharia-skill build <module> --skill-type <world> --no-interactive`` on ``skill_file`` alone in
    a temporary folder; return the .wasm component, moved into ``out_dir``."""
    module = skill_file.stem
    if not module.isidentifier():
        raise KernelBuildError(f"{skill_file.name}: `pharia-skill build` takes a module name, so the file's "
                               "name must be a Python identifier")
    source = skill_file.read_text()
    world = skill_world(source)
    bin_dir = ensure_sdk()
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kernel-build-") as tmp:
        work = Path(tmp)
        (work / f"{module}.py").write_text(source)
        cmd = [str(bin_dir / "pharia-skill"), "build", module, "--skill-type", world, "--no-interactive"]
        out = subprocess.run(cmd, cwd=work, env=_build_env(bin_dir), stdin=subprocess.DEVNULL,
                             capture_output=True, text=True)
        wasm = work / f"{module}.wasm"
        if out.returncode != 0 or not wasm.is_file():
            raise KernelBuildError(f"`pharia-skill build {module} --skill-type {world}` failed "
                                   f"(exit {out.returncode}):\n{out.stdout.strip()}\n{out.stderr[-6000:]}",
                                   out.stdout, out.stderr)
        target = out_dir / wasm.name
        shutil.move(wasm, target)
    return target


def main(argv: list[str]) -> int:
    """``python3 -m buildtools.deps.kernel_sdk SKILL.py [OUT_DIR]``: build one skill file for Pharia Kernel."""
    if len(argv) not in (1, 2) or not argv[0].endswith(".py"):
        print("usage: python3 -m buildtools.deps.kernel_sdk SKILL.py [OUT_DIR]", file=sys.stderr)
        return 2
    try:
        wasm = build_component(Path(argv[0]), Path(argv[1] if len(argv) == 2 else "."))
    except KernelBuildError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(wasm)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
