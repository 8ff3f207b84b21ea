"""Types are checked, not only written: mypy over py/csi and tsc (checkJs) over web/ and worker/."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.paths import ROOT


def test_mypy_finds_no_errors_in_the_python_package() -> None:
    out = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.parametrize("config", ["web/jsconfig.json", "app/jsconfig.json", "worker/jsconfig.json"])
def test_tsc_finds_no_errors_in_the_javascript(config: str) -> None:
    tsc = ROOT / "node_modules" / ".bin" / "tsc"
    out = subprocess.run([str(tsc), "-p", config], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
