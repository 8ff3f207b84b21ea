"""Cold and warm start to the first token (WASM), split by stage, with the browser's peak memory.

Cold: the first visit, in a new browser profile (empty HTTP cache, code cache and storage). Warm:
the next visit in the same profile, the first page closed (what a returning user gets: models come
from Cache Storage, and Python starts from the snapshot and bytecode the first visit kept:
worker/pyodide_boot.js, worker/pyc_cache.js). Peak memory: the resident set of every Chromium
process, sampled every 50 ms."""

from __future__ import annotations

import statistics
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

START_SCRIPT = """
async ([model]) => {
  const t0 = performance.now();
  const { CreateWebWorkerEngine } = await import('/web/engine.js');
  const t1 = performance.now();
  const engine = await CreateWebWorkerEngine(new Worker('/worker/worker.js', {type: 'module'}), model,
                                             {device: 'wasm'});
  const t2 = performance.now();
  const s = await engine.chat.completions.create({messages: [{role: 'user', content: 'Hello!'}], stream: true,
                                                  max_tokens: 4, temperature: 0});
  let first = null;
  for await (const c of s) if (first === null && c.choices[0]?.delta?.content) first = performance.now();
  const boot = await engine.send('boot_timings');
  engine.terminate();
  return {engine_module_s: (t1 - t0) / 1000, engine_ready_s: (t2 - t0) / 1000,
          first_token_s: ((first ?? performance.now()) - t0) / 1000, boot};
}
"""


@contextmanager
def peak_browser_rss() -> Iterator[dict[str, int]]:
    """The peak sum of the resident sets of this process's Chromium descendants (``"sum"``) and the
    peak of the largest one (``"largest"``: the renderer, where the wasm memory lives), in bytes,
    sampled every 50 ms while the block runs (filled when it ends)."""
    import psutil

    peak = {"sum": 0, "largest": 0}
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            sizes = []
            for p in psutil.Process().children(recursive=True):
                try:
                    if "chrom" in p.name():
                        sizes.append(p.memory_info().rss)
                except psutil.Error:
                    continue
            peak["sum"] = max(peak["sum"], sum(sizes))
            peak["largest"] = max(peak["largest"], max(sizes, default=0))
            time.sleep(0.05)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield peak
    finally:
        done.set()
        thread.join()


def _visit(context: Any, url: str, model: str) -> dict[str, Any]:
    page = context.new_page()
    page.set_default_timeout(600_000)
    page.goto(url + "web/engine.js")  # a document of the site that runs nothing itself
    with peak_browser_rss() as peak:
        r = page.evaluate(START_SCRIPT, [model])
    page.close()
    boot = r.pop("boot")
    in_python = boot["pyodide_s"] + boot["wheels_s"] + boot["imports_s"]
    return {"to_first_token_s": r["first_token_s"], "pyodide_boot_s": boot["pyodide_s"],
            "wheels_s": boot["wheels_s"], "imports_s": boot["imports_s"],
            "model_and_rest_to_ready_s": r["engine_ready_s"] - r["engine_module_s"] - in_python,
            "first_request_to_first_token_s": r["first_token_s"] - r["engine_ready_s"],
            "engine_module_s": r["engine_module_s"], "peak_browser_rss_mb": peak["sum"] / 2**20}


def startup_bench(playwright: Any, url: str, chromium: str, args: list[str], rounds: int = 3,
                  model: str = "tiny-chat") -> dict[str, Any]:
    """Medians over ``rounds`` fresh profiles, each visited twice (cold, then warm)."""
    cold, warm = [], []
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as profile:
            context = playwright.chromium.launch_persistent_context(profile, executable_path=chromium, args=args)
            try:
                cold.append(_visit(context, url, model))
                warm.append(_visit(context, url, model))
            finally:
                context.close()

    def med(rows: list[dict[str, float]]) -> dict[str, float]:
        return {k: statistics.median(r[k] for r in rows) for k in rows[0]}

    return {"model": model, "device": "wasm", "rounds": rounds, "cold": med(cold), "warm": med(warm),
            "targets_s": {"cold": 3.0, "warm": 1.5}}
