"""`python3 build.py bench`: csi-web's full stack against transformers.js, one browser run, JSON out;
then the document index (buildtools/bench/index.py) in a browser profile of its own."""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from ..site.serve import serve_in_thread
from .decode import TIMED_STREAM
from .index import index_bench

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--no-first-run", "--disable-quic"]
MESSAGES = [{"role": "user", "content": "What does json.dumps do?"}]
TOKENS = 128
ROUNDS = 7

EXTRAS_SCRIPT = """
async ([messages, tokens, rounds]) => {
""" + TIMED_STREAM + """
  const { CreateWebWorkerEngine } = await import('/web/engine.js');
  const engine = await CreateWebWorkerEngine(new Worker('/worker/worker.js', {type: 'module'}),
                                             'tiny-chat', {device: 'wasm'});
  async function ours(extra = {}) {
    const {stamps, usage, n} = await timedStream(engine, {messages, temperature: 0, ignore_eos: true,
                                                          max_tokens: tokens, ...extra});
    return {decode_tokens_per_s: (n - 1) / ((stamps.at(-1) - stamps[0]) / 1000),
            grammar_per_token_s: usage.extra.grammar_per_token_s ?? null};
  }
  const runs = {};
  const raw = await engine.chat.completions.create({messages, temperature: 0, max_tokens: tokens, ignore_eos: true,
    extra_body: {enable_latency_breakdown: true}});
  const fw = raw.usage.extra.latencyBreakdown.forwardTime.slice(1).sort((a, b) => a - b);
  runs.raw_forward_ms = fw[fw.length >> 1] * 1000;

  // structured output: grammar compile times for a 20-property schema, and decoding under a schema
  const props = {};
  for (let i = 0; i < 20; i++) {
    props[`field_${i}`] = i % 3 === 0 ? {type: 'integer'} : i % 3 === 1 ? {type: 'string', maxLength: 16}
      : {type: 'boolean'};
  }
  const rf = (schema) => ({type: 'json_schema', json_schema: {name: 'bench', schema}});
  const initOf = async (schema) => (await engine.chat.completions.create(
    {messages, max_tokens: 1, response_format: rf(schema)})).usage.extra.grammar_init_s;
  const grammar = {first_ever_s: await initOf({type: 'object', properties: {a: {type: 'integer'}}}),
                   cold_s: [], cached_s: []};
  for (let i = 0; i < rounds; i++) {
    const fresh = {type: 'object', properties: Object.fromEntries(
      Object.entries(props).map(([k, v]) => [`${k}_${i}`, v])), required: Object.keys(props).map((k) => `${k}_${i}`)};
    grammar.cold_s.push(await initOf(fresh));
    grammar.cached_s.push(await initOf(fresh));
  }
  const longArray = {type: 'array', items: {type: 'integer'}, minItems: 1000};
  runs.csi_web_schema = [];
  runs.csi_web_unconstrained = [];
  for (let i = 0; i < rounds; i++) {
    runs.csi_web_schema.push(await ours({response_format: rf(longArray)}));
    runs.csi_web_unconstrained.push(await ours());
  }
  runs.grammar = grammar;

  // GenerationalGuts on a ~128-token prompt, and decoding before and after its session exists
  runs.csi_web_before_guts = [];
  for (let i = 0; i < rounds; i++) runs.csi_web_before_guts.push(await ours());
  const gutsPrompt = 'The json module encodes Python objects as JSON text and back. '.repeat(10);
  const gutsCall = async (extra) => {
    const t = performance.now();
    const r = await engine.remote.generationalGuts({prompt: gutsPrompt, ...extra});
    return {s: (performance.now() - t) / 1000, tokens: r.tokens.length,
            bytes: new TextEncoder().encode(JSON.stringify(r)).length};
  };
  const guts = {first: await gutsCall({}), defaults: [], full_width: []};
  for (let i = 0; i < rounds; i++) {
    guts.defaults.push(await gutsCall({}));
    guts.full_width.push(await gutsCall({embedding_trunkation: 0, fft_embeddings: false}));
  }
  runs.csi_web_after_guts = [];
  for (let i = 0; i < rounds; i++) runs.csi_web_after_guts.push(await ours());
  runs.guts = guts;
  engine.terminate();
  return runs;
}
"""


CSI_SCRIPT = """
async ([text, langTexts, rounds]) => {
  const { CreateWebWorkerEngine } = await import('/web/engine.js');
  const engine = await CreateWebWorkerEngine(new Worker('/worker/worker.js', {type: 'module'}),
                                             'all-minilm-l6-v2', {device: 'wasm'});
  const params = {model: 'all-minilm-l6-v2', max_tokens: 256, overlap: 32};
  const chunkTimes = [];
  let chunks = null;
  for (let i = 0; i < rounds; i++) {
    const t = performance.now();
    [chunks] = await engine.csi.chunk([{text, params}]);
    chunkTimes.push((performance.now() - t) / 1000);
  }
  const lang = {calls_per_s: [], first_call_s: null};
  const t0 = performance.now();
  await engine.csi.selectLanguage([{text: langTexts[0].text, languages: langTexts[0].languages}]);
  lang.first_call_s = (performance.now() - t0) / 1000;
  for (let r = 0; r < rounds; r++) {
    const t = performance.now();
    for (const q of langTexts) await engine.csi.selectLanguage([q]);
    lang.calls_per_s.push(langTexts.length / ((performance.now() - t) / 1000));
  }
  return {chunk_s: chunkTimes, chunks, lang};
}
"""


def _csi_bench(page: object, dist: Path) -> dict[str, object]:
    """Chunking 1 MB in the worker vs semantic-text-splitter natively; select_language calls/s."""
    from semantic_text_splitter import TextSplitter
    from tokenizers import Tokenizer

    from .lang import language_bench_texts
    from .text import english_text

    text = english_text(1_000_000)
    tokenizer = Tokenizer.from_file(str(dist / "models" / "all-minilm-l6-v2" / "tokenizer.json"))
    splitter = TextSplitter.from_huggingface_tokenizer(tokenizer, capacity=256, overlap=32)
    native_s = []
    for _ in range(3):
        t = time.perf_counter()
        native = splitter.chunks(text)
        native_s.append(time.perf_counter() - t)
    lang_texts = language_bench_texts()
    raw = page.evaluate(CSI_SCRIPT, [text, lang_texts, 3])  # type: ignore[attr-defined]
    per_lang = sorted(json.loads((dist / "lang" / "index.json").read_text())["languages"].values())
    worker = statistics.median(raw["chunk_s"])
    return {
        "chunking_1mb": {"text_chars": len(text), "max_tokens": 256, "overlap": 32, "tokenizer": "all-minilm-l6-v2",
                         "worker_s": worker, "native_semantic_text_splitter_s": statistics.median(native_s),
                         "ratio_worker_to_native": worker / statistics.median(native_s),
                         "chunks": len(raw["chunks"]), "identical_to_native": raw["chunks"] == native},
        "select_language_1kb_5_candidates": {
            "texts": len(lang_texts), "calls_per_s": statistics.median(raw["lang"]["calls_per_s"]),
            "first_call_with_data_fetch_s": raw["lang"]["first_call_s"]},
        "language_data_bytes_per_language": {
            "min": per_lang[0], "median": statistics.median(per_lang), "max": per_lang[-1], "total": sum(per_lang)},
    }


INSIDES_SCRIPT = """
async ([prompt, keep]) => {
  const status = document.getElementById('insides-status');
  const charts = document.getElementById('insides-charts');
  charts.removeAttribute('data-tokens');
  document.getElementById('insides-prompt').value = prompt;
  document.getElementById('insides-keep').value = keep;
  document.getElementById('insides-show').click();
  while (!charts.dataset.tokens) await new Promise((r) => setTimeout(r, 20));
  // how late a frame comes once the charts are set (their progressive rendering runs in frames)
  const t = performance.now();
  await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
  const m = status.textContent.match(/model (\\d+) ms, charts (\\d+) ms/);
  return {tokens: Number(charts.dataset.tokens), model_ms: Number(m[1]), charts_ms: Number(m[2]),
          next_frame_ms: performance.now() - t};
}
"""


def _insides_bench(browser: object, url: str) -> dict[str, object]:
    """The playground's Model insides panel on a 256-token prompt: engine time, chart time, frame lag."""
    page = browser.new_page(viewport={"width": 1000, "height": 900})  # type: ignore[attr-defined]
    page.set_default_timeout(300_000)
    page.goto(url + "index.html")
    page.wait_for_selector("body[data-ready='true']")
    page.click("#tab-insides")
    prompt = "word " * 255  # 256 tokens on tiny-chat
    first = page.evaluate(INSIDES_SCRIPT, [prompt, "25"])
    runs = {keep: [page.evaluate(INSIDES_SCRIPT, [prompt, keep]) for _ in range(3)] for keep in ("25", "0")}
    page.close()

    def med(rs: list[dict[str, float]], key: str) -> float:
        return statistics.median(r[key] for r in rs)

    return {"prompt_tokens": first["tokens"], "first_show_with_session_and_echarts_load": first,
            **{f"values_{'all' if k == '0' else k}": {key: med(rs, key) for key in ("model_ms", "charts_ms",
                                                                                  "next_frame_ms")}
               for k, rs in runs.items()}}


def _extras(runs: dict[str, Any], insides: dict[str, Any]) -> dict[str, Any]:
    """tiny-chat's structured output and GenerationalGuts figures."""
    def med(side: str, key: str) -> float:
        return statistics.median(r[key] for r in runs[side])

    raw_ms = runs["raw_forward_ms"]
    grammar, guts = runs["grammar"], runs["guts"]
    before_guts, after_guts = med("csi_web_before_guts", "decode_tokens_per_s"), med("csi_web_after_guts",
                                                                                      "decode_tokens_per_s")
    schema_tps = med("csi_web_schema", "decode_tokens_per_s")
    plain_tps = med("csi_web_unconstrained", "decode_tokens_per_s")
    mask_s = med("csi_web_schema", "grammar_per_token_s")
    return {
        "structured_output": {
            "grammar_init_s_20_property_schema": {
                "first_grammar_of_the_session": grammar["first_ever_s"],
                "cold": statistics.median(grammar["cold_s"]), "cached": statistics.median(grammar["cached_s"])},
            "decode_tokens_per_s_with_schema": schema_tps,
            "decode_tokens_per_s_unconstrained_same_run": plain_tps,
            "ratio_schema_to_unconstrained": schema_tps / plain_tps,
            "grammar_ms_per_token": mask_s * 1000,
            "grammar_fraction_of_forward": mask_s * 1000 / raw_ms},
        "generational_guts": {
            "prompt_tokens": guts["first"]["tokens"],
            "first_call_with_session_creation_s": guts["first"]["s"],
            "defaults_fft_25_values_top_5": {"s": statistics.median(g["s"] for g in guts["defaults"]),
                                             "bytes_to_page": guts["defaults"][0]["bytes"]},
            "full_width_no_fft": {"s": statistics.median(g["s"] for g in guts["full_width"]),
                                  "bytes_to_page": guts["full_width"][0]["bytes"]},
            "decode_tokens_per_s_before_guts": before_guts,
            "decode_tokens_per_s_with_guts_session_loaded": after_guts,
            "ratio_with_to_before": after_guts / before_guts,
            "playground_view": insides},
    }


# (model, served from the Hub mirror (else built into the site), tokens generated, rounds)
SHAPES = [("tiny-chat", False, 128, 5), ("smollm2-135m-instruct", False, 64, 3),
          ("csi-bench/smollm2-135m-shape", True, 64, 3), ("csi-bench/qwen2.5-0.5b-shape", True, 32, 3)]
REAL_MODEL = "smollm2-135m-instruct"
# the real model's long prompt: ~1,000 tokens (65 sentences of 15)
PREFILL_REPEATS = 65


SECTIONS = ("sampling", "decode", "speculative", "prompt_cache", "webgpu", "embeddings", "extras", "startup", "index",
            "memory", "remote", "package", "peers")


def run_bench(dist: Path, only: list[str] | None = None, device: str = "wasm") -> int:
    """Every section of the bench, or those in ``only`` (names from SECTIONS); JSON on stdout. With
    ``device`` "webgpu", the GPU bench of gpu.py instead (a hardware adapter, or exit status 1)."""
    from playwright.sync_api import sync_playwright

    from ..models.cache import build_bench_models
    from ..models.hub_mirror import Mirror
    from .decode import decode_bench, sampling_bench
    from .embed import embed_bench
    from .gpu import run_webgpu_bench
    from .memory import memory_bench
    from .package import package_bench
    from .peers import peers_bench
    from .prompt_cache import prompt_cache_bench
    from .remote import remote_bench
    from .speculative import speculative_bench
    from .startup import startup_bench

    if device == "webgpu":
        return run_webgpu_bench(dist, ARGS, CHROMIUM, only)
    unknown = sorted(set(only or []) - set(SECTIONS))
    if unknown:
        print(f"unknown bench section(s) {unknown}; the sections are {list(SECTIONS)}", file=sys.stderr)
        return 2
    wanted = set(only or SECTIONS)
    mirror = Mirror(build_bench_models()).start()
    server, url = serve_in_thread(dist)
    result: dict[str, Any] = {}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=[*ARGS, "--enable-unsafe-webgpu"])

            pages: list[Any] = []

            def page_of() -> Any:
                while pages:  # one section at a time: the last one's workers go with its page
                    pages.pop().close()
                page = browser.new_page()
                pages.append(page)
                page.set_default_timeout(1_800_000)
                page.goto(url + "web/engine.js")
                return page

            page = page_of()
            result["cross_origin_isolated"] = page.evaluate("self.crossOriginIsolated")
            result["threads"] = page.evaluate("navigator.hardwareConcurrency")
            if "sampling" in wanted:
                result["sampling"] = sampling_bench(page)
            if "decode" in wanted:
                result["decode_wasm"] = []
                for model, from_hub, tokens, rounds in SHAPES:
                    log(f"bench: decoding on {model} (WASM)")
                    result["decode_wasm"].append(decode_bench(
                        page_of(), model, "wasm", mirror.url if from_hub else None, tokens, rounds,
                        prefill_repeats=PREFILL_REPEATS if model == REAL_MODEL else 0))
            if "speculative" in wanted:
                log(f"bench: speculative decoding on {REAL_MODEL} (WASM)")
                result["speculative"] = speculative_bench(page_of(), REAL_MODEL)
            if "prompt_cache" in wanted:
                log(f"bench: a conversation going on after a reload, with its kept cache, on {REAL_MODEL} (WASM)")
                result["prompt_cache"] = prompt_cache_bench(page_of(), REAL_MODEL)
            if "webgpu" in wanted:
                log("bench: tiny-chat on WebGPU")
                result["decode_webgpu_swiftshader"] = [decode_bench(page_of(), "tiny-chat", "webgpu", None, 32, 3)]
                log(f"bench: {REAL_MODEL} on WebGPU (SwiftShader: a CPU emulating a GPU, slow)")
                result["decode_webgpu_swiftshader"].append(decode_bench(page_of(), REAL_MODEL, "webgpu", None, 4, 1))
            if "embeddings" in wanted:
                log("bench: embeddings")
                result["embeddings"] = embed_bench(page_of())
            if "extras" in wanted:
                log("bench: tiny-chat extras, chunking, languages")
                extras = page_of().evaluate(EXTRAS_SCRIPT, [MESSAGES, TOKENS, ROUNDS])
                result["tiny_chat_extras"] = _extras(extras, _insides_bench(browser, url))
                result |= _csi_bench(page_of(), dist)
            if "remote" in wanted:
                log("bench: a model on a llama.cpp server, straight from the page and through the engine")
                result["remote"] = remote_bench(page_of())
            browser.close()
            if "startup" in wanted:
                log("bench: cold and warm start")
                result["startup"] = startup_bench(p, url, CHROMIUM, ARGS)
                log(f"bench: cold and warm start of {REAL_MODEL}, with peak memory")
                result["startup_real_model"] = startup_bench(p, url, CHROMIUM, ARGS, rounds=2, model=REAL_MODEL)
            if "index" in wanted:
                # a persistent profile of its own (IndexedDB on disk), fresh: the database starts empty
                result["document_index"] = index_bench(p, url, CHROMIUM, ARGS)
            if "memory" in wanted:
                log("bench: memory over 200 generations, 20 load/unload cycles, 10 model switches")
                result["memory"] = memory_bench(p, url, CHROMIUM, ARGS)
            if "package" in wanted:
                log("bench: the npm package, and a Vite app built with it: page to first token, cold and warm")
                result |= package_bench(p, CHROMIUM, ARGS)
            if "peers" in wanted:
                log(f"bench: {REAL_MODEL}'s GGUF in csi-web and in wllama, 1 thread and all threads")
                result["peers"] = peers_bench(p, dist, CHROMIUM, ARGS)
    except Exception as exc:  # the sections measured so far are still printed, with the failure
        result["failed"] = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        server.shutdown()
        mirror.stop()
        print(json.dumps(result, indent=2), flush=True)
    return 0


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)
