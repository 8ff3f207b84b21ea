// Benchmark baseline: transformers.js's own greedy `model.generate` in a module worker, on the
// same model files, the same ORT runtime and the same thread settings as csi-web's worker.

import { AutoModelForCausalLM, AutoTokenizer, Tensor, pipeline } from "../vendor/transformers/transformers.js";
import { configureRuntime } from "../worker/runtime_env.js";

const env = configureRuntime();
env.allowRemoteModels = false;

let tokenizer;
let model;
/** @type {any} the feature-extraction pipeline */
let extractor;

self.onmessage = async ({ data }) => {
  try {
    if (data.type === "load") {
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
      extractor ??= await pipeline("feature-extraction", data.model, { device: "wasm", dtype: "fp32" });
      const t0 = performance.now();
      const out = await extractor(data.texts, { pooling: "mean", normalize: true });
      self.postMessage({ ok: true, s: (performance.now() - t0) / 1000, dims: out.dims });
      return;
    }
    const inputs = tokenizer.apply_chat_template(data.messages, { add_generation_prompt: true, return_dict: true });
    if (data.type === "raw") {
      // raw forward passes with the KV cache, argmax: the floor any loop on this model pays
      let ids = Array.from(inputs.input_ids.data, Number);
      let past = null;
      let pastLen = 0;
      const times = [];
      for (let i = 0; i < data.tokens; i++) {
        const n = ids.length;
        const feeds = {
          input_ids: new Tensor("int64", BigInt64Array.from(ids, BigInt), [1, n]),
          attention_mask: new Tensor("int64", new BigInt64Array(pastLen + n).fill(1n), [1, pastLen + n]),
          position_ids: new Tensor("int64", BigInt64Array.from({ length: n }, (_, k) => BigInt(pastLen + k)), [1, n]),
        };
        if (past) Object.assign(feeds, past);
        const t0 = performance.now();
        const out = await model.forward(past ? { ...feeds, past_key_values: past } : feeds);
        past = {};
        for (const [k, v] of Object.entries(out)) if (k.startsWith("present")) past[k.replace("present", "past_key_values")] = v;
        const logits = out.logits;
        const V = logits.dims.at(-1);
        const row = logits.data.subarray((logits.dims.at(-2) - 1) * V);
        let best = 0;
        for (let j = 1; j < V; j++) if (row[j] > row[best]) best = j;
        if (i > 0) times.push(performance.now() - t0);
        pastLen += n;
        ids = [best];
      }
      times.sort((a, b) => a - b);
      self.postMessage({ ok: true, raw_forward_ms: times[times.length >> 1] });
      return;
    }
    const stamps = [];
    // "stream": hand every token to the page as it comes, as a chat app does (one message each)
    const streamer = data.stream
      ? { put: (ids) => { stamps.push(performance.now()); self.postMessage({ token: Number(ids[0]?.at?.(-1) ?? 0) }); }, end: () => {} }
      : { put: () => stamps.push(performance.now()), end: () => {} };
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
