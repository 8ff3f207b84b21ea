"""The README's two commands with Debian's own, externally managed /usr/bin/python3, in a fresh clone:
build.py makes .venv/ in the checkout with that interpreter and installs only there, so the
interpreter's packages are the same before and after. The built models and npm packages are taken
from this checkout's caches (set-up may be cached); the environment decision is not."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.support.paths import ROOT

SYSTEM_PYTHON = Path("/usr/bin/python3")
# .cache parts the clone makes itself: environments an interpreter made, and this suite's own scratch
OWN_CACHE = {"llama-server", "kernel-sdk", "pack"}

needs_system_python = pytest.mark.skipif(not SYSTEM_PYTHON.exists(), reason="no /usr/bin/python3 on this machine")


def _freeze(python: Path) -> str:
    out = subprocess.run([str(python), "-m", "pip", "freeze", "--all"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def _user_site(python: Path) -> list[str]:
    site = subprocess.run([str(python), "-m", "site", "--user-site"], capture_output=True, text=True).stdout.strip()
    return sorted(p.name for p in Path(site).iterdir()) if Path(site).is_dir() else []


def _clean_env() -> dict[str, str]:
    """The environment a person's shell has: none of this suite's venv or paths."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    venv_bin = str(Path(sys.prefix) / "bin")
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != venv_bin)
    return env


def _fresh_clone(dest: Path) -> Path:
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(dest)], check=True, timeout=300)
    cache = dest / ".cache"
    cache.mkdir()
    for part in (ROOT / ".cache").iterdir():
        if part.name not in OWN_CACHE:
            (cache / part.name).symlink_to(part.resolve())
    # the tests' llama.cpp server: its compiled wheel and its GGUF are shared, its venv is the clone's own
    server = ROOT / ".cache" / "llama-server"
    (cache / "llama-server").mkdir()
    for shared in [server / "wheels", *server.glob("*.gguf")]:
        (cache / "llama-server" / shared.name).symlink_to(shared.resolve())
    (dest / "node_modules").symlink_to((ROOT / "node_modules").resolve())
    return dest


@needs_system_python
def test_serve_and_test_with_debians_python_install_nothing_outside_the_checkout(tmp_path: Path) -> None:
    if "externally-managed" not in subprocess.run([str(SYSTEM_PYTHON), "-m", "pip", "install", "--dry-run", "six"],
                                                  capture_output=True, text=True, env=_clean_env()).stderr:
        pytest.fail("/usr/bin/python3 is not externally managed here: this test would prove nothing")
    before, user_before = _freeze(SYSTEM_PYTHON), _user_site(SYSTEM_PYTHON)
    clone = _fresh_clone(tmp_path / "csi-web")
    assert not (clone / ".venv").exists()

    serve = subprocess.Popen([str(SYSTEM_PYTHON), "build.py", "serve", "--port", "0"], cwd=clone, env=_clean_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert serve.stdout is not None
        lines: list[str] = []
        deadline = time.monotonic() + 1500
        url = None
        while url is None and time.monotonic() < deadline:
            line = serve.stdout.readline()
            if not line:
                break
            lines.append(line)
            if m := re.search(r"served at (http://127\.0\.0\.1:\d+/)", line):
                url = m.group(1)
        assert url, "".join(lines[-40:])
        with urllib.request.urlopen(url + "index.html", timeout=30) as r:
            assert r.status == 200 and b"engine" in r.read()
    finally:
        serve.terminate()
        serve.wait(timeout=30)
    assert "externally-managed-environment" not in "".join(lines)
    assert "Traceback" not in "".join(lines)

    made = (clone / ".venv" / "pyvenv.cfg").read_text()
    assert re.search(r"^home = /usr/bin$", made, re.M), made
    test = subprocess.run([str(SYSTEM_PYTHON), "build.py", "test", "tests/unit/test_own_venv.py", "-q"], cwd=clone,
                          env=_clean_env(), capture_output=True, text=True, timeout=1500)
    assert test.returncode == 0 and re.search(r"\d+ passed", test.stdout), test.stdout[-3000:] + test.stderr[-3000:]

    assert _freeze(SYSTEM_PYTHON) == before
    assert _user_site(SYSTEM_PYTHON) == user_before
