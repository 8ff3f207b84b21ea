"""`python3 build.py bench`: csi-web's full stack against transformers.js, one browser run, JSON out;
then the document index (buildtools/index_bench.py) in a browser profile of its own."""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

from .index_bench import index_bench
from .serve import serve_in_thread

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--no-first-run", "--disable-quic"]
MESSAGES = [{"role": "user", "content": "What does json.dumps do?"}]
TOKENS = 128
ROUNDS = 7

PAGE_SCRIPT = """
async ([messages, tokens, rounds]) => {
  const { CreateWebWorkerEngine } = await import('/web/engine.js');
  const t0 = performance.now();
  const engine = await CreateWebWorkerEngine(new Worker('/worker/worker.js', {type: 'module'}),
                                             'tiny-chat', {device: 'wasm'});
  const cold = (performance.now() - t0) / 1000;
  const boot = await engine.send('boot_timings');

  const tjs = new Worker('/bench/tjs_worker.js', {type: 'module'});
  let pageStamps = [];
  const ask = (msg) => new Promise((resolve, reject) => {
    pageStamps = [];
    tjs.onmessage = ({data}) => {
      if ('token' in data) { pageStamps.push(performance.now()); return; }
      data.ok ? resolve(data) : reject(new Error(data.error));
    };
    tjs.postMessage(msg);
  });
  const tjsLoad = await ask({type: 'load', model: 'tiny-chat', device: 'wasm'});

  async function ours(extra = {}) {
    const start = performance.now();
    const stamps = [];
    let usage = null;
    const s = await engine.chat.completions.create({messages, stream: true, temperature: 0, ignore_eos: true,
      max_tokens: tokens, stream_options: {include_usage: true}, return_token_ids: true, ...extra});
    let n = 0;
    for await (const c of s) {
      for (const ch of c.choices) {
        const k = (ch.token_ids ?? []).length;
        for (let i = 0; i < k; i++) stamps.push(performance.now());
        n += k;
      }
      if (c.usage) usage = c.usage;
    }
    return {tokens: n, prompt_tokens: usage.prompt_tokens, ttft_s: (stamps[0] - start) / 1000,
            decode_tokens_per_s: (n - 1) / ((stamps.at(-1) - stamps[0]) / 1000),
            engine_decode_tokens_per_s: usage.extra.decode_tokens_per_s,
            grammar_per_token_s: usage.extra.grammar_per_token_s ?? null};
  }
  const theirs = () => ask({type: 'generate', messages, tokens});
  async function theirsStreamed() {
    const start = performance.now();
    const r = await ask({type: 'generate', messages, tokens, stream: true});
    // the first put() is the prompt; tokens are the later ones, timed where the page receives them
    const s = pageStamps.slice(1);
    return {...r, ttft_s: (s[0] - start) / 1000,
            decode_tokens_per_s: (s.length - 1) / ((s.at(-1) - s[0]) / 1000)};
  }

  const full = {top_p: 0.9, temperature: 0.7, seed: 1, stop: ['<<never>>', '\\n\\n\\n'], logprobs: true,
                top_logprobs: 5};
  for (let i = 0; i < 3; i++) { await ours(); await ours(full); await theirs(); await theirsStreamed(); }  // warm-up
  const runs = {csi_web: [], csi_web_full: [], transformers_js: [], transformers_js_streamed: [], raw: []};
  for (let i = 0; i < rounds; i++) {
    runs.csi_web.push(await ours());
    runs.csi_web_full.push(await ours(full));
    runs.transformers_js.push(await theirs());
    runs.transformers_js_streamed.push(await theirsStreamed());
    runs.raw.push(await ask({type: 'raw', messages, tokens}));
  }

  // second turn: time to first token with the prefix cache, and after resetChat() without it
  const first = await engine.chat.completions.create({messages, temperature: 0, max_tokens: 64});
  const second = [...messages, {role: 'assistant', content: first.choices[0].message.content},
                  {role: 'user', content: 'And what does json.loads do? Explain it in detail, please.'}];
  const turn = {warm: [], cold: [], cached_tokens: 0, prompt_tokens: 0};
  for (let i = 0; i < rounds; i++) {
    await engine.chat.completions.create({messages, temperature: 0, max_tokens: 64});
    const w = await engine.chat.completions.create({messages: second, temperature: 0, max_tokens: 2});
    turn.warm.push(w.usage.extra.time_to_first_token_s);
    turn.cached_tokens = w.usage.prompt_tokens_details.cached_tokens;
    turn.prompt_tokens = w.usage.prompt_tokens;
    await engine.resetChat();
    const c = await engine.chat.completions.create({messages: second, temperature: 0, max_tokens: 2});
    turn.cold.push(c.usage.extra.time_to_first_token_s);
  }
  runs.second_turn = turn;

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
  return {cold_start_s: cold, boot, tjs_load_s: tjsLoad.load_s, isolated: self.crossOriginIsolated,
          threads: navigator.hardwareConcurrency, runs};
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

    from .bench_text import english_text
    from .lang_bench import language_bench_texts

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
    page.click("#insides summary")
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


def run_bench(dist: Path) -> int:
    from playwright.sync_api import sync_playwright

    server, url = serve_in_thread(dist)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page()
            page.set_default_timeout(900_000)
            page.goto(url + "web/engine.js")
            raw = page.evaluate(PAGE_SCRIPT, [MESSAGES, TOKENS, ROUNDS])
            csi_page = browser.new_page()
            csi_page.set_default_timeout(900_000)
            csi_page.goto(url + "web/engine.js")
            csi = _csi_bench(csi_page, dist)
            insides = _insides_bench(browser, url)
            browser.close()
            # a persistent profile of its own (IndexedDB on disk), fresh: the database starts empty
            document_index = index_bench(p, url, CHROMIUM, ARGS)
    finally:
        server.shutdown()

    def med(side: str, key: str) -> float:
        return statistics.median(r[key] for r in raw["runs"][side])

    ours, theirs = med("csi_web", "decode_tokens_per_s"), med("transformers_js", "decode_tokens_per_s")
    streamed = med("transformers_js_streamed", "decode_tokens_per_s")
    full = med("csi_web_full", "decode_tokens_per_s")
    raw_ms = statistics.median(r["raw_forward_ms"] for r in raw["runs"]["raw"])
    turn = raw["runs"].pop("second_turn")
    grammar = raw["runs"].pop("grammar")
    guts = raw["runs"].pop("guts")
    before_guts, after_guts = med("csi_web_before_guts", "decode_tokens_per_s"), med("csi_web_after_guts",
                                                                                      "decode_tokens_per_s")
    schema_tps = med("csi_web_schema", "decode_tokens_per_s")
    plain_tps = med("csi_web_unconstrained", "decode_tokens_per_s")
    mask_s = med("csi_web_schema", "grammar_per_token_s")
    result = {
        "model": "tiny-chat",
        "device": "wasm",
        "cross_origin_isolated": raw["isolated"],
        "prompt_tokens": raw["runs"]["csi_web"][0]["prompt_tokens"],
        "generated_tokens": TOKENS,
        "rounds": ROUNDS,
        # csi_web and transformers_js_streamed are timed on the page, as tokens arrive there;
        # transformers_js inside its worker (model.generate alone, nothing sent to the page).
        "decode_tokens_per_s": {"csi_web": ours, "transformers_js": theirs, "ratio": ours / theirs,
                                "transformers_js_streamed_to_page": streamed,
                                "ratio_vs_streamed": ours / streamed},
        "time_to_first_token_s": {"csi_web": med("csi_web", "ttft_s"),
                                  "transformers_js": med("transformers_js", "ttft_s"),
                                  "transformers_js_streamed_to_page": med("transformers_js_streamed", "ttft_s")},
        "engine_reported_decode_tokens_per_s": med("csi_web", "engine_decode_tokens_per_s"),
        "with_top_p_stop_logprobs": {"csi_web_decode_tokens_per_s": full,
                                     "ratio_vs_transformers_js_greedy": full / theirs},
        "per_token_ms": {"csi_web_full_stack": 1000 / ours, "raw_forward": raw_ms,
                         "overhead": 1000 / ours - raw_ms, "transformers_js_generate": 1000 / theirs},
        "second_turn_time_to_first_token_s": {
            "with_prefix_cache": statistics.median(turn["warm"]),
            "without_prefix_cache": statistics.median(turn["cold"]),
            "cached_tokens": turn["cached_tokens"], "prompt_tokens": turn["prompt_tokens"]},
        "structured_output": {
            "grammar_init_s_20_property_schema": {
                "first_grammar_of_the_session": grammar["first_ever_s"],
                "cold": statistics.median(grammar["cold_s"]), "cached": statistics.median(grammar["cached_s"])},
            "decode_tokens_per_s_with_schema": schema_tps,
            "decode_tokens_per_s_unconstrained_same_run": plain_tps,
            "ratio_schema_to_unconstrained": schema_tps / plain_tps,
            "grammar_ms_per_token": mask_s * 1000,
            "grammar_fraction_of_raw_forward": mask_s * 1000 / raw_ms},
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
        "cold_start_s": {"total": raw["cold_start_s"], **raw["boot"],
                         "model_and_rest": raw["cold_start_s"] - sum(raw["boot"].values())},
        "transformers_js_model_load_s": raw["tjs_load_s"],
        **csi,
        "document_index": document_index,
        "runs": raw["runs"],
    }
    print(json.dumps(result, indent=2))
    return 0
