"""The bench's ``package`` section: the npm package's size, and the page-to-first-token time of a
Vite app built with it (buildtools/site/npm_app.py), cold (a new browser profile) and warm (a reload),
served by a plain static server (no COOP/COEP: one thread, as on most static hosts)."""

from __future__ import annotations

import statistics
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from ..site.assemble import DIST
from ..site.npm_app import make_vite_app
from ..site.pack import pack
from ..site.serve import serve_in_thread


def _first_token_ms(page: Any) -> float:
    page.wait_for_function("() => window.demo?.done", timeout=600_000)
    demo = page.evaluate("() => window.demo")
    if demo["error"] or demo["firstTokenMs"] is None:
        raise RuntimeError(f"the Vite app did not answer: {demo['error']}")
    return float(demo["firstTokenMs"])


def package_bench(playwright: Any, chromium: str, args: list[str], rounds: int = 3) -> dict[str, Any]:
    """Medians over ``rounds`` new profiles, each visiting the built app twice."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        tgz = pack(DIST, work)
        with tarfile.open(tgz) as tar:
            members = tar.getmembers()
        by_folder: dict[str, int] = {}
        for m in members:
            top = m.name.removeprefix("package/").split("/")[0]
            by_folder[top] = by_folder.get(top, 0) + m.size
        app = make_vite_app(work / "app", tgz)
        server, url = serve_in_thread(app / "dist", isolate=False)
        cold, warm = [], []
        try:
            for _ in range(rounds):
                with tempfile.TemporaryDirectory() as profile:
                    context = playwright.chromium.launch_persistent_context(profile, executable_path=chromium,
                                                                            args=args)
                    try:
                        page = context.new_page()
                        page.goto(url)
                        cold.append(_first_token_ms(page))
                        page.reload()
                        warm.append(_first_token_ms(page))
                    finally:
                        context.close()
        finally:
            server.shutdown()
        return {
            "package": {"file": tgz.name, "packed_bytes": tgz.stat().st_size,
                        "unpacked_bytes": sum(m.size for m in members), "files": len(members),
                        "unpacked_bytes_by_folder": dict(sorted(by_folder.items(), key=lambda kv: -kv[1]))},
            "vite_app_first_token_ms": {"model": "smollm2-135m-instruct", "device": "wasm", "rounds": rounds,
                                        "cold": statistics.median(cold), "warm": statistics.median(warm),
                                        "cold_all": cold, "warm_all": warm},
        }
