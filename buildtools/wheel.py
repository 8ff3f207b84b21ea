"""Build the pure-Python ``csi`` wheel that the worker installs (a zip, written directly)."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

# Modules that run only in CPython (they import numpy/onnxruntime); the browser wheel omits them.
CPYTHON_ONLY = {"cpython_backend.py"}


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build_wheel(package_dir: Path, version: str, out_dir: Path) -> Path:
    """Write ``csi-<version>-py3-none-any.whl`` from ``package_dir``; deterministic bytes."""
    files: list[tuple[str, bytes]] = []
    for path in sorted(package_dir.rglob("*.py")):
        if path.name in CPYTHON_ONLY or "__pycache__" in path.parts:
            continue
        files.append((f"csi/{path.relative_to(package_dir).as_posix()}", path.read_bytes()))
    dist_info = f"csi-{version}.dist-info"
    metadata = (f"Metadata-Version: 2.1\nName: csi\nVersion: {version}\n"
                "Summary: csi-web's Python engine (browser build)\nRequires-Dist: pydantic>=2.14\n").encode()
    wheel = b"Wheel-Version: 1.0\nGenerator: csi-web build.py\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    files += [(f"{dist_info}/METADATA", metadata), (f"{dist_info}/WHEEL", wheel)]
    record = "\n".join([_record_line(n, d) for n, d in files] + [f"{dist_info}/RECORD,,", ""]).encode()
    files.append((f"{dist_info}/RECORD", record))
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"csi-{version}-py3-none-any.whl"
    tmp = out.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files:
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    tmp.replace(out)
    return out
