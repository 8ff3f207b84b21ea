"""The Vercel AI SDK (npm ``ai`` and ``@ai-sdk/openai``) bundled for a page by npm's esbuild, as an
app would bundle it: the tests drive csi-web's ``/v1/`` with it unmodified (its default OpenAI path is
the Responses API). Cached by a hash of the entry and the packages' versions."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

from ..deps.deps import CACHE, ROOT, log

ENTRY = Path(__file__).with_name("ai_sdk_entry.mjs")
NODE = ROOT / "node_modules"
PACKAGES = ("ai", "@ai-sdk/openai", "@ai-sdk/provider-utils", "esbuild")


def build_ai_sdk(cache: Path = CACHE / "ai-sdk") -> Path:
    """The bundle (one ES module), from the cache when its inputs are unchanged."""
    h = hashlib.sha256(ENTRY.read_bytes())
    for name in PACKAGES:
        h.update(json.loads((NODE / name / "package.json").read_text())["version"].encode())
    out = cache / f"ai-sdk-{h.hexdigest()[:16]}.mjs"
    if out.exists():
        return out
    log("bundling the AI SDK for the tests' pages (esbuild)")
    cache.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    subprocess.run(["node", str(NODE / "esbuild" / "bin" / "esbuild"), str(ENTRY), "--bundle", "--format=esm",
                    "--platform=browser", "--log-level=warning", f"--outfile={tmp}"], check=True, cwd=ROOT, timeout=300)
    tmp.replace(out)
    return out
