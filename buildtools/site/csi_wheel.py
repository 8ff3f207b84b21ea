"""The pure-Python ``csi`` wheel the worker installs: py/csi less what the browser never imports,
with deterministic bytes."""

from __future__ import annotations

from pathlib import Path

from ..deps.wheel import PURE_WHEEL, write_wheel

# Paths under py/csi the browser never imports (the worker's closure is csi.worker.main and the
# example skills), left out of the browser wheel: the CPython backend (numpy, onnxruntime,
# tokenizers), the local runtime (local.py) with its host (threads, local folders) and its HTTP
# client (asyncio streams; the worker fetches through worker/http_fetch.js), and the scripted backend
# of tests (testing.py). tests/unit/test_wheel_contents.py lists what the wheel ships, and why.
NOT_IN_BROWSER = ("backends/cpython", "backends/local_host.py", "servers/asyncio_http.py", "local.py", "testing.py")


def browser_modules(package_dir: Path) -> list[str]:
    """The modules the browser wheel holds: paths relative to ``package_dir``, sorted."""
    found = []
    for path in sorted(package_dir.rglob("*.py")):
        rel = path.relative_to(package_dir).as_posix()
        if "__pycache__" not in path.parts and not any(rel == p or rel.startswith(f"{p}/") for p in NOT_IN_BROWSER):
            found.append(rel)
    return found


def build_wheel(package_dir: Path, version: str, out_dir: Path) -> Path:
    """Write ``csi-<version>-py3-none-any.whl`` from ``package_dir``; deterministic bytes."""
    files = [(f"csi/{rel}", (package_dir / rel).read_bytes()) for rel in browser_modules(package_dir)]
    dist_info = f"csi-{version}.dist-info"
    metadata = (f"Metadata-Version: 2.1\nName: csi\nVersion: {version}\n"
                "Summary: csi-web's Python engine (browser build)\nRequires-Dist: pydantic>=2.14\n").encode()
    files += [(f"{dist_info}/METADATA", metadata), (f"{dist_info}/WHEEL", PURE_WHEEL)]
    return write_wheel(out_dir / f"csi-{version}-py3-none-any.whl", files, dist_info)
