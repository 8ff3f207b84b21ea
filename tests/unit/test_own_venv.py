"""build.py's own environment (buildtools/own_venv.py): made in the checkout with the interpreter that
runs it, made again for another interpreter, and one clear line where Python cannot make one."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.paths import ROOT

BASE_PYTHON = Path(getattr(sys, "_base_executable", sys.executable))
PROBE = """import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).parent))
from buildtools import own_venv
own_venv.enter(Path(__file__).resolve(), sys.argv[1:])
print("inside", sys.prefix)
"""


def _checkout(tmp: Path) -> Path:
    """A checkout with only what runs before anything is installed."""
    (tmp / "buildtools").mkdir()
    for name in ("__init__.py", "own_venv.py"):
        shutil.copy2(ROOT / "buildtools" / name, tmp / "buildtools" / name)
    (tmp / "probe.py").write_text(PROBE)
    return tmp


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    return {**env, **extra}


def test_the_venv_is_made_in_the_checkout_with_the_running_python_and_kept(tmp_path: Path) -> None:
    root = _checkout(tmp_path)
    first = subprocess.run([str(BASE_PYTHON), "probe.py"], cwd=root, env=_env(), capture_output=True, text=True,
                           timeout=300)
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == f"inside {root / '.venv'}"
    assert "making the virtual environment" in first.stderr
    again = subprocess.run([str(BASE_PYTHON), "probe.py"], cwd=root, env=_env(), capture_output=True, text=True,
                           timeout=300)
    assert again.stdout.strip() == f"inside {root / '.venv'}" and "making" not in again.stderr


def test_a_venv_another_python_made_is_made_again(tmp_path: Path) -> None:
    root = _checkout(tmp_path)
    subprocess.run([str(BASE_PYTHON), "-m", "venv", "--without-pip", str(root / ".venv")], check=True)
    (root / ".venv" / ".csi-python").write_text("/opt/another/python3\n3.12.0")
    out = subprocess.run([str(BASE_PYTHON), "probe.py"], cwd=root, env=_env(), capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0 and "making the virtual environment" in out.stderr, out.stderr
    assert str(BASE_PYTHON.resolve()) in (root / ".venv" / ".csi-python").read_text()


def test_a_python_without_venv_support_gets_one_line_naming_python3_venv(tmp_path: Path) -> None:
    root = _checkout(tmp_path)
    stub = tmp_path / "stub"
    stub.mkdir()
    (stub / "ensurepip.py").write_text("raise ImportError('removed, as Debian does without python3-venv')\n")
    out = subprocess.run([str(BASE_PYTHON), "probe.py"], cwd=root, env=_env(PYTHONPATH=str(stub)),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "python3-venv" in lines[0] and "Traceback" not in out.stderr, out.stderr
    assert not (root / ".venv").exists()
