"""The sampling kernel's WebAssembly (worker/sampling/kernel.wasm), compiled at build time from
worker/sampling/kernel/*.ts by npm's AssemblyScript, cached by a hash of the sources, the compiler's
version and its flags (a rebuild with nothing changed compiles nothing)."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

from ..deps.deps import CACHE, ROOT, log

SOURCES = ROOT / "worker" / "sampling" / "kernel"
COMPILER = ROOT / "node_modules" / "assemblyscript"
FLAGS = ["-O3", "--enable", "simd", "--runtime", "stub", "--noAssert", "--use", "abort="]


def kernel_digest() -> str:
    """What the kernel is made from: its sources, the compiler's version, the flags."""
    h = hashlib.sha256()
    for p in sorted(SOURCES.glob("*.ts")):
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    h.update(json.loads((COMPILER / "package.json").read_text())["version"].encode())
    h.update(" ".join(FLAGS).encode())
    return h.hexdigest()[:16]


def build_kernel(cache: Path = CACHE / "kernel") -> Path:
    """The compiled kernel, from the cache when its inputs are unchanged."""
    out = cache / f"sampling-{kernel_digest()}.wasm"
    if out.exists():
        return out
    if not (COMPILER / "bin" / "asc.js").exists():
        raise SystemExit(f"missing {COMPILER}: run `npm ci --ignore-scripts`")
    log("compiling the sampling kernel (AssemblyScript)")
    cache.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    subprocess.run(["node", str(COMPILER / "bin" / "asc.js"), str(SOURCES / "kernel.ts"), "-o", str(tmp), *FLAGS],
                   check=True, cwd=ROOT, timeout=300)
    tmp.replace(out)
    return out
