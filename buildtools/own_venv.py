"""build.py's own Python environment: a virtual environment inside the checkout (``.venv/``), made
with the interpreter that runs build.py, which then runs itself there.

Only the standard library is used here: this runs before anything is installed. pip installs go
only into ``.venv/``, so a system Python (Debian's, Ubuntu's, Homebrew's: "externally managed",
PEP 668) works unchanged and its own site-packages are never touched.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
# Written last: a venv without it (an interrupted make) is made again.
STAMP_NAME = ".csi-python"
MIN_PYTHON = (3, 11)


def venv_python(venv: Path = VENV) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def interpreter_id() -> str:
    """What the venv was made from: the running interpreter's real path and full version."""
    base = getattr(sys, "_base_executable", sys.executable)
    return f"{os.path.realpath(base)}\n{sys.version}"


def running_in(venv: Path = VENV) -> bool:
    return sys.prefix != sys.base_prefix and Path(sys.prefix).resolve() == venv.resolve()


def _say(msg: str) -> None:
    print(f"[build] {msg}", file=sys.stderr, flush=True)


def _missing_venv_support() -> str | None:
    """One line naming what to install when this Python cannot make a venv with pip in it."""
    try:
        import ensurepip  # noqa: F401  (Debian and Ubuntu ship it in python3-venv)
        import venv  # noqa: F401
    except ImportError:
        ver = f"{sys.version_info[0]}.{sys.version_info[1]}"
        return (f"{sys.executable} cannot make a virtual environment (its venv/ensurepip modules are missing): "
                f"install them, e.g. `sudo apt-get install python3-venv` (or python{ver}-venv) on Debian/Ubuntu")
    return None


def make(venv: Path = VENV) -> None:
    """Make ``venv`` with the running interpreter (removing a stale or half-made one)."""
    if (missing := _missing_venv_support()) is not None:
        raise SystemExit(missing)
    if venv.is_symlink():
        venv.unlink()
    elif venv.exists():
        shutil.rmtree(venv)
    _say(f"making the virtual environment {venv} with {sys.executable} (Python {sys.version.split()[0]})")
    # `python -m venv` in a child, so a failure of ensurepip is reported as one line, not a traceback.
    out = subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True)
    if out.returncode != 0 or not venv_python(venv).exists():
        shutil.rmtree(venv, ignore_errors=True)
        detail = (out.stderr or out.stdout).strip().splitlines()[-1:] or ["no output"]
        raise SystemExit(f"{sys.executable} -m venv {venv} failed ({detail[0]}): on Debian/Ubuntu "
                         "`sudo apt-get install python3-venv`")
    (venv / STAMP_NAME).write_text(interpreter_id())


def is_current(venv: Path = VENV) -> bool:
    stamp = venv / STAMP_NAME
    return venv_python(venv).exists() and stamp.exists() and stamp.read_text() == interpreter_id()


def enter(script: Path, argv: list[str]) -> None:
    """Run ``script`` with ``argv`` inside the checkout's venv, making it first when needed.

    Returns only when already inside it. A venv made by another interpreter (another Python found
    first on PATH) is made again with this one, as the README promises.
    """
    if sys.version_info < MIN_PYTHON:
        raise SystemExit(f"csi-web's build.py needs Python {MIN_PYTHON[0]}.{MIN_PYTHON[1]} or newer; "
                         f"this is {sys.version.split()[0]} ({sys.executable})")
    if running_in(VENV):
        return
    if not is_current(VENV):
        make(VENV)
    python = venv_python(VENV)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONHOME", "PYTHONPATH")}
    env["VIRTUAL_ENV"] = str(VENV)
    env["PATH"] = f"{python.parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("PIP_USER", None)
    cmd = [str(python), str(script), *argv]
    if os.name == "nt":  # no exec there: run it and hand on its status
        raise SystemExit(subprocess.call(cmd, env=env))
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(str(python), cmd, env)
