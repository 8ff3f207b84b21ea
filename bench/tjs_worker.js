// Benchmark baseline: transformers.js's own greedy `model.generate` in a module worker, on the
// same model files, the same ORT runtime and the same thread settings as csi-web's worker.

import { AutoModelForCausalLM, AutoTokenizer } from "../vendor/transformers/transformers.js";
import { configureRuntime } from "../worker/runtime_env.js";

configureRuntime().allowRemoteModels = false;

let tokenizer;
let model;

self.onmessage = async ({ data }) => {
  try {
    if (data.type === "load") {
      const t0 = performance.now();
      tokenizer = await AutoTokenizer.from_pretrained(data.model);
      model = await AutoModelForCausalLM.from_pretrained(data.model, { device: data.device, dtype: "fp32" });
      self.postMessage({ ok: true, load_s: (performance.now() - t0) / 1000 });
      return;
    }
    const inputs = tokenizer.apply_chat_template(data.messages, { add_generation_prompt: true, return_dict: true });
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
