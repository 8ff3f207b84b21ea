"""Wheels written directly as zips, with deterministic bytes, from files at hand (``write_wheel``):
the pure-Python ``csi`` wheel the worker installs (buildtools/site/csi_wheel.py) and the packages
skills import (``skill_packages``)."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

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
