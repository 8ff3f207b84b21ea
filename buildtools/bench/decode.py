"""Decoding on one model shape, csi-web against transformers.js in the same browser run: tokens/s
(greedy, and with top_p + stop + logprobs), the per-token split, time to first token, and the
second turn of a chat with and without the prefix cache."""

from __future__ import annotations

import statistics
from typing import Any

MESSAGES = [{"role": "user", "content": "What does json.dumps do?"}]
SECOND = "And what does json.loads do? Explain it in detail, please."

# A streamed request timed on the page: one stamp per token as its chunk arrives. Pasted into the
# scripts below (page.evaluate takes one function).
TIMED_STREAM = """
  async function timedStream(engine, request) {
    const stamps = [];
    let usage = null;
    const s = await engine.chat.completions.create({...request, stream: true, return_token_ids: true,
                                                    stream_options: {include_usage: true}});
    let n = 0;
    for await (const c of s) {
      for (const ch of c.choices) {
        const k = (ch.token_ids ?? []).length;
        for (let i = 0; i < k; i++) stamps.push(performance.now());
        n += k;
      }
      if (c.usage) usage = c.usage;
    }
    return {stamps, usage, n};
  }
"""

DECODE_SCRIPT = """
async ([model, device, hub, messages, second, tokens, rounds, withTjs, prefillRepeats]) => {
""" + TIMED_STREAM + """
  const { CreateWebWorkerEngine } = await import('/web/engine.js');
  const t0 = performance.now();
  const engine = await CreateWebWorkerEngine(new Worker('/worker/worker.js', {type: 'module'}), model,
                                             {device, hubMirror: hub});
  const load_s = (performance.now() - t0) / 1000;
  // transformers.js on its own ORT build (asyncify), and on csi-web's WASM one (plain SIMD)
  let tjs = null, tjsSame = null;
  const askOf = (w) => (msg) => new Promise((resolve, reject) => {
    w.onmessage = ({data}) => data.ok ? resolve(data) : reject(new Error(data.error));
    w.postMessage(msg);
  });
  let tjsLoad = null;
  if (withTjs) {
    tjs = new Worker('/bench/tjs_worker.js', {type: 'module'});
    tjsLoad = await askOf(tjs)({type: 'load', model, device, hub});
    if (device === 'wasm') {
      tjsSame = new Worker('/bench/tjs_worker.js', {type: 'module'});
      await askOf(tjsSame)({type: 'load', model, device, hub, build: 'plain'});
    }
  }

  async function ours(extra = {}) {
    const start = performance.now();
    const {stamps, usage, n} = await timedStream(engine, {messages, temperature: 0, ignore_eos: true,
      max_tokens: tokens, extra_body: {enable_latency_breakdown: true}, ...extra});
    const b = usage.extra.latencyBreakdown;
    const mean = (xs) => xs.slice(1).reduce((a, x) => a + x, 0) / Math.max(1, xs.length - 1);
    const page_tpot = (stamps.at(-1) - stamps[0]) / 1000 / (n - 1);
    return {tokens: n, prompt_tokens: usage.prompt_tokens, ttft_s: (stamps[0] - start) / 1000,
            decode_tokens_per_s: 1 / page_tpot,
            // per decoded token (the prefill step left out), in seconds
            forward_s: mean(b.forwardTime), sampling_s: mean(b.totalTime),
            engine_tpot_s: usage.extra.time_per_output_token_s, page_tpot_s: page_tpot};
  }
  const theirs = (m = messages, n = tokens) => askOf(tjs)({type: 'generate', messages: m, tokens: n});
  const theirsSame = (m = messages, n = tokens) => askOf(tjsSame)({type: 'generate', messages: m, tokens: n});

  const full = {top_p: 0.9, temperature: 0.7, seed: 1, stop: ['<<never>>', '\\n\\n\\n'], logprobs: true,
                top_logprobs: 5};
  await ours(); await ours(full); if (tjs) await theirs(); if (tjsSame) await theirsSame();  // warm-up
  const runs = {greedy: [], full: [], transformers_js: [], transformers_js_same_build: []};
  for (let i = 0; i < rounds; i++) {
    runs.greedy.push(await ours());
    runs.full.push(await ours(full));
    if (tjs) runs.transformers_js.push(await theirs());
    if (tjsSame) runs.transformers_js_same_build.push(await theirsSame());
  }

  // second turn: time to first token with the prefix cache, and after resetChat() without it
  const first = await engine.chat.completions.create({messages, temperature: 0, max_tokens: 16, ignore_eos: true});
  const next = [...messages, {role: 'assistant', content: first.choices[0].message.content},
                {role: 'user', content: second}];
  const turn = {reuse: [], no_reuse: [], cached_tokens: 0, prompt_tokens: 0};
  for (let i = 0; i < rounds; i++) {
    await engine.chat.completions.create({messages, temperature: 0, max_tokens: 16, ignore_eos: true});
    const w = await engine.chat.completions.create({messages: next, temperature: 0, max_tokens: 1});
    turn.reuse.push(w.usage.extra.time_to_first_token_s);
    turn.cached_tokens = w.usage.prompt_tokens_details.cached_tokens;
    turn.prompt_tokens = w.usage.prompt_tokens;
    await engine.resetChat();
    const c = await engine.chat.completions.create({messages: next, temperature: 0, max_tokens: 1});
    turn.no_reuse.push(c.usage.extra.time_to_first_token_s);
  }
  // prefill: a long prompt's first token with nothing cached (ours timed on the page, from the request;
  // transformers.js's from its generate call, after its chat template and tokenizer)
  const prefill = {ours: [], theirs: [], theirs_same_build: [], prompt_tokens: 0};
  if (prefillRepeats > 0) {
    const long = [{role: 'user', content: 'Summarize this text. '
      + 'The json module encodes Python objects as JSON text and decodes them back. '.repeat(prefillRepeats)}];
    for (let i = 0; i < rounds; i++) {
      await engine.resetChat();
      const t = performance.now();
      const {stamps, usage} = await timedStream(engine, {messages: long, temperature: 0, max_tokens: 1});
      prefill.ours.push((stamps[0] - t) / 1000);
      prefill.prompt_tokens = usage.prompt_tokens;
      if (tjs) prefill.theirs.push((await theirs(long, 1)).ttft_s);
      if (tjsSame) prefill.theirs_same_build.push((await theirsSame(long, 1)).ttft_s);
    }
  }
  await engine.unload();
  engine.terminate?.();
  tjs?.terminate();
  tjsSame?.terminate();
  return {load_s, tjs_load_s: tjsLoad?.load_s ?? null, runs, turn, prefill};
}
"""


def _med(rows: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def decode_bench(page: Any, model: str, device: str, hub: str | None, tokens: int, rounds: int,
                 with_transformers_js: bool = True, prefill_repeats: int = 0) -> dict[str, Any]:
    """One model on one device: the figures of the issue's table, medians of ``rounds``; with
    ``prefill_repeats``, also the first token of a long prompt (that many sentences, ~15 tokens each)."""
    raw = page.evaluate(DECODE_SCRIPT, [model, device, hub, MESSAGES, SECOND, tokens, rounds,
                                        with_transformers_js, prefill_repeats])
    runs, turn = raw["runs"], raw["turn"]
    out: dict[str, Any] = {"model": model, "device": device, "generated_tokens": tokens, "rounds": rounds,
                           "prompt_tokens": runs["greedy"][0]["prompt_tokens"], "load_s": raw["load_s"]}

    def split(rows: list[dict[str, Any]]) -> dict[str, float]:
        forward, sampling = _med(rows, "forward_s"), _med(rows, "sampling_s")
        engine, page_tpot = _med(rows, "engine_tpot_s"), _med(rows, "page_tpot_s")
        return {"forward_ms": forward * 1000, "sampling_ms": sampling * 1000,
                "python_and_bridge_ms": (engine - forward - sampling) * 1000,
                # chunks are posted while the next token decodes: the page sees the worker's rate (posting
                # is inside python_and_bridge), so this difference is noise around 0
                "page_minus_worker_ms": (page_tpot - engine) * 1000, "total_ms": page_tpot * 1000}

    greedy, full = _med(runs["greedy"], "decode_tokens_per_s"), _med(runs["full"], "decode_tokens_per_s")
    out["decode_tokens_per_s"] = {"csi_web_greedy": greedy, "csi_web_top_p_stop_logprobs": full}
    out["time_to_first_token_s"] = {"csi_web": _med(runs["greedy"], "ttft_s")}
    if runs["transformers_js"]:
        theirs = _med(runs["transformers_js"], "decode_tokens_per_s")
        out["decode_tokens_per_s"] |= {"transformers_js_greedy": theirs, "ratio_greedy": greedy / theirs,
                                       "ratio_top_p_stop_logprobs_vs_their_greedy": full / theirs}
        out["time_to_first_token_s"]["transformers_js"] = _med(runs["transformers_js"], "ttft_s")
        out["transformers_js_load_s"] = raw["tjs_load_s"]
        out["transformers_js_build"] = "asyncify (its default)"
    if runs["transformers_js_same_build"]:
        same = _med(runs["transformers_js_same_build"], "decode_tokens_per_s")
        out["decode_tokens_per_s"] |= {"transformers_js_greedy_on_csi_web_build": same,
                                       "ratio_greedy_same_build": greedy / same,
                                       "ratio_top_p_stop_logprobs_same_build": full / same}
    out["per_token_split"] = {"greedy": split(runs["greedy"]), "top_p_stop_logprobs": split(runs["full"])}
    pre = raw["prefill"]
    if pre["ours"]:
        row: dict[str, Any] = {"prompt_tokens": pre["prompt_tokens"], "csi_web_s": statistics.median(pre["ours"])}
        for key, name in (("theirs", "transformers_js"), ("theirs_same_build", "transformers_js_on_csi_web_build")):
            if pre[key]:
                row[f"{name}_s"] = statistics.median(pre[key])
                row[f"ratio_vs_{name}"] = row[f"{name}_s"] / row["csi_web_s"]
        out["prefill_first_token"] = row
    out["second_turn_time_to_first_token_s"] = {
        "with_prefix_reuse": statistics.median(turn["reuse"]),
        "without_prefix_reuse": statistics.median(turn["no_reuse"]),
        "cached_tokens": turn["cached_tokens"], "prompt_tokens": turn["prompt_tokens"]}
    return out


SAMPLING_SCRIPT = """
async ([vocab, repeats]) => {
  const { Sampler, kernelReady } = await import('/worker/sampling/index.js');
  const kernel = await kernelReady;  // what the worker's Samplers use (null: the JS path)
  // a fixed pseudo-random normal sample (so every run weighs the same logits)
  let s = 12345;
  const rand = () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 4294967296);
  const gauss = () => Math.sqrt(-2 * Math.log(rand() + 1e-12)) * Math.cos(2 * Math.PI * rand());
  const shapes = {
    flat: Float32Array.from({length: vocab}, () => gauss() * 0.05),
    normal: Float32Array.from({length: vocab}, () => gauss()),
    peaked: Float32Array.from({length: vocab}, () => gauss() * 4),
  };
  const knobs = {
    greedy: {temperature: 0},
    greedy_logprobs: {temperature: 0, logprobs: true, top_logprobs: 5},
    temperature: {temperature: 0.8},
    top_p: {temperature: 0.7, top_p: 0.9},
    top_p_logprobs: {temperature: 0.7, top_p: 0.9, logprobs: true, top_logprobs: 5},
    top_k_top_p: {temperature: 0.8, top_k: 40, top_p: 0.95},
    everything: {temperature: 0.7, top_k: 0, top_p: 0.9, repetition_penalty: 1.1, frequency_penalty: 0.5,
                 presence_penalty: 0.3, logit_bias: [[5, 2], [9, -100]], logprobs: true, top_logprobs: 20},
  };
  const sequence = Array.from({length: 512}, (_, i) => (i * 7919) % vocab);
  const out = {path: new Sampler({temperature: 1, top_k: 0, top_p: 1, seed: 1}).path, ms_per_token: {},
               js_ms_per_token: {}};
  for (const [path, use] of [["ms_per_token", kernel], ["js_ms_per_token", null]]) {
   if (path === "js_ms_per_token" && !kernel) continue;
   for (const [shape, logits] of Object.entries(shapes)) {
    out[path][shape] = {};
    for (const [knob, k] of Object.entries(knobs)) {
      const sampler = new Sampler({top_k: 0, top_p: 1, seed: 1, ...k}, null, use);
      for (let i = 0; i < 20; i++) sampler.choose(logits, sequence);
      const times = [];
      for (let i = 0; i < repeats; i++) {
        const t = performance.now();
        sampler.choose(logits, sequence);
        times.push(performance.now() - t);
      }
      times.sort((a, b) => a - b);
      out[path][shape][knob] = times[times.length >> 1];
    }
   }
  }
  if (!kernel) delete out.js_ms_per_token;
  return out;
}
"""


def sampling_bench(page: Any, vocab: int = 151_936, repeats: int = 100) -> dict[str, Any]:
    """Milliseconds per token of worker/sampling/ alone (median), by knob and distribution shape, on the
    path the worker takes (``path``: "wasm", the kernel, or "js"), and on the JS path when that is the kernel."""
    return {"vocab": vocab, **page.evaluate(SAMPLING_SCRIPT, [vocab, repeats])}
