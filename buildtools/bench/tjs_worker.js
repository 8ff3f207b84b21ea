// Benchmark baseline: transformers.js's own greedy `model.generate` in a module worker, on the
// same model files and thread settings as csi-web's worker, on the ORT build transformers.js picks
// itself (asyncify) unless the load names another (`build: "plain"`, csi-web's on WASM).
// Served as /bench/tjs_worker.js (buildtools/site/assemble.py copies it): its imports are relative to that URL.

import { AutoModelForCausalLM, AutoTokenizer, pipeline } from "../vendor/transformers/transformers.js";
import { configureRuntime, useOrtBuild } from "../worker/runtime_env.js";

const env = configureRuntime();
env.allowRemoteModels = false;

let tokenizer;
let model;
/** @type {any} the feature-extraction pipeline */
let extractor;

self.onmessage = async ({ data }) => {
  try {
    if (data.type === "load") {
      useOrtBuild(data.build ?? "asyncify");
      // a model not built into the site comes from a Hub mirror, in the dtype its config names
      if (data.hub) Object.assign(env, { allowRemoteModels: true, remoteHost: data.hub });
      const t0 = performance.now();
      await model?.dispose();
      tokenizer = await AutoTokenizer.from_pretrained(data.model);
      model = await AutoModelForCausalLM.from_pretrained(data.model, data.hub ? { device: data.device }
        : { device: data.device, dtype: "fp32" });
      self.postMessage({ ok: true, load_s: (performance.now() - t0) / 1000 });
      return;
    }
    if (data.type === "embed") {
      // the feature-extraction pipeline as its docs show it: mean pooling, normalized
      useOrtBuild(data.build ?? "asyncify");
      extractor ??= await pipeline("feature-extraction", data.model, { device: "wasm", dtype: "fp32" });
      const t0 = performance.now();
      const out = await extractor(data.texts, { pooling: "mean", normalize: true });
      self.postMessage({ ok: true, s: (performance.now() - t0) / 1000, dims: out.dims });
      return;
    }
    const inputs = tokenizer.apply_chat_template(data.messages, { add_generation_prompt: true, return_dict: true });
    const stamps = [];
    const streamer = { put: () => stamps.push(performance.now()), end: () => {} };
    const t0 = performance.now();
    await model.generate({
      ...inputs,
      max_new_tokens: data.tokens,
      min_new_tokens: data.tokens,
      do_sample: false,
      streamer,
    });
    // stamps[0]: the prompt is handed to the streamer; stamps[i]: generated token i.
    const tokens = stamps.length - 1;
    self.postMessage({
      ok: true,
      tokens,
      prompt_tokens: inputs.input_ids.dims.at(-1),
      ttft_s: (stamps[1] - t0) / 1000,
      decode_tokens_per_s: (tokens - 1) / ((stamps.at(-1) - stamps[1]) / 1000),
    });
  } catch (e) {
    self.postMessage({ ok: false, error: String(e?.stack ?? e) });
  }
};
