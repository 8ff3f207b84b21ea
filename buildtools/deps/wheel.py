"""Wheels written directly as zips, with deterministic bytes: the pure-Python ``csi`` wheel the
worker installs, and any wheel whose files are at hand (``write_wheel``)."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

# Paths under py/csi that run only in CPython, left out of the browser wheel: the CPython backend
# (numpy, onnxruntime, tokenizers) and the local runtime with its host (threads, local folders).
CPYTHON_ONLY = ("backends/cpython", "backends/local_host.py", "local.py")

PURE_WHEEL = b"Wheel-Version: 1.0\nGenerator: csi-web build.py\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def write_wheel(out: Path, files: list[tuple[str, bytes]], dist_info: str) -> Path:
    """Write the wheel ``out`` holding ``files`` (paths in the wheel, their METADATA and WHEEL among
    them) and ``<dist_info>/RECORD`` listing them all; same files, same bytes."""
    files = [(n, d) for n, d in files if n != f"{dist_info}/RECORD"]
    record = "\n".join([_record_line(n, d) for n, d in files] + [f"{dist_info}/RECORD,,", ""]).encode()
    files.append((f"{dist_info}/RECORD", record))
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files:
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    tmp.replace(out)
    return out


def browser_modules(package_dir: Path) -> list[str]:
    """The modules the browser wheel holds: paths relative to ``package_dir``, sorted."""
    found = []
    for path in sorted(package_dir.rglob("*.py")):
        rel = path.relative_to(package_dir).as_posix()
        if "__pycache__" not in path.parts and not any(rel == p or rel.startswith(f"{p}/") for p in CPYTHON_ONLY):
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
