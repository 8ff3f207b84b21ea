// One loaded causal language model for the Bridge: its tokenizer, forward passes with the KV
// cache kept here (on the CPU or the GPU) together with the list of the tokens it holds, and
// sampling on typed arrays. The cache has one owner: callers ask `reusePrefix` how much of a new
// prompt it already holds, and never keep a copy of the cached tokens.

import { Tensor } from "../vendor/transformers/transformers.js";
import { Grammars } from "./grammar.js";
import { LOGIT_PROCESSORS, processedLogits } from "./logit_processors.js";
import { Sampler } from "./sampling/index.js";

/**
 * Seconds per step: the forward pass, the registered logit processor, the grammar's mask, the
 * penalties, the logit bias, the rest of sampling (temperature, top-k/top-p, the draw,
 * log-probabilities), and all of the per-token work on the logits (WebLLM's `totalTime`).
 * @typedef {{forwardTime: number[], logitProcessorTime: number[], grammarBitmaskTime: number[],
 *            penaltyTime: number[], logitBiasTime: number[], sampleTime: number[],
 *            totalTime: number[]}} Breakdown
 */

/** @returns {Breakdown} */
function emptyBreakdown() {
  return { forwardTime: [], logitProcessorTime: [], grammarBitmaskTime: [], penaltyTime: [], logitBiasTime: [],
    sampleTime: [], totalTime: [] };
}

/**
 * The first `n` positions of a [batch, heads, length, headDim] cache tensor in memory.
 * @param {any} t @param {number} n
 */
function cutOnCpu(t, n) {
  const [b, h, len, d] = t.dims;
  const out = new t.data.constructor(b * h * n * d);
  for (let i = 0; i < b * h; i++) out.set(t.data.subarray(i * len * d, i * len * d + n * d), i * n * d);
  return new Tensor(t.type, out, [b, h, n, d]);
}

export class ChatModel {
  /**
   * @param {string} id @param {any} tokenizer transformers.js's @param {any} model transformers.js's
   * @param {Record<string, any>} config the model's config.json
   */
  constructor(id, tokenizer, model, config) {
    this.id = id;
    this.tokenizer = tokenizer;
    this.model = model;
    this.config = config;
    /** @type {Record<string, any>|null} */
    this.past = null;
    /** @type {number[]} the tokens whose keys and values are in the cache, in order */
    this.sequence = [];
    this.sampler = new Sampler({ temperature: 0, top_k: 0, top_p: 1, seed: 0 });
    /** @type {any} the GPUDevice the model runs on (WebGPU), to cut its cache there */
    this.gpuDevice = null;
    /** @type {Breakdown} seconds per step since the request began */
    this.breakdown = emptyBreakdown();
    /** @type {Grammars|null} */
    this.grammars = null;
    /** @type {import("./insides_session.js").PromptInsides|null} set by the Bridge */
    this.insides = null;
    /** @type {string|null} what prompt caches kept across page loads are filed under (the model file's
     * hash, the device, the graph); null: none are kept (set by the Bridge when it knows the file) */
    this.cacheKey = null;
    const session = model.sessions.model ?? Object.values(model.sessions)[0];
    this.cacheInputs = session.inputNames.filter((/** @type {string} */ n) => n.startsWith("past_key_values."));
    this.cacheMeta = Object.fromEntries((session.inputMetadata ?? []).map((/** @type {any} */ m) => [m.name, m]));
    this.usesPositionIds = session.inputNames.includes("position_ids");
  }

  emptyCache() {
    const c = this.config;
    const heads = c.num_key_value_heads ?? c.num_attention_heads ?? c.n_head;
    const headDim = c.head_dim ?? (c.hidden_size ?? c.n_embd) / (c.num_attention_heads ?? c.n_head);
    /** @type {Record<string, any>} */
    const cache = {};
    for (const name of this.cacheInputs) {
      const meta = this.cacheMeta[name];
      const type = meta?.type ?? "float32";
      const shape = [1, heads, 0, headDim];
      if (meta?.shape) {
        if (typeof meta.shape[1] === "number") shape[1] = meta.shape[1];
        if (typeof meta.shape[3] === "number") shape[3] = meta.shape[3];
      }
      const Data = type === "float16" ? Uint16Array : Float32Array;
      cache[name] = new Tensor(type, new Data(0), shape);
    }
    return cache;
  }

  get pastLength() {
    return this.sequence.length;
  }

  reset() {
    this.disposePast();
    this.past = null;
    this.sequence = [];
  }

  /**
   * Fit the cache to a new prompt: keep the longest common prefix of the cached tokens and `ids`,
   * less the prompt's last token (it must always run, to produce logits). Returns how many
   * tokens were kept. A GPU-resident cache is cut on the GPU (copied into shorter buffers); an
   * empty `ids` drops the cache.
   * @param {ArrayLike<number>} ids the new prompt's token ids
   * @returns {number}
   */
  reusePrefix(ids) {
    const sequence = this.sequence;
    const limit = Math.min(sequence.length, ids.length);
    let common = 0;
    while (common < limit && sequence[common] === ids[common]) common++;
    const n = Math.min(common, ids.length - 1);
    if (n >= sequence.length) return sequence.length;
    return this.truncate(n);
  }

  /**
   * Keep the first `n` (fewer than held) positions of the cache; returns how many were kept (0
   * when a GPU cache cannot be cut here: the cache is dropped).
   * @param {number} n
   */
  truncate(n) {
    const onGpu = this.past && Object.values(this.past).some((t) => t.location === "gpu-buffer");
    if (n <= 0 || !this.past || (onGpu && !this.gpuDevice)) {
      this.reset();
      return 0;
    }
    /** @type {Record<string, any>} */
    const past = {};
    for (const [name, t] of Object.entries(this.past)) {
      past[name] = t.location === "gpu-buffer" ? this.#cutOnGpu(t, n) : cutOnCpu(t, n);
    }
    this.past = past;
    this.sequence.length = n;
    return n;
  }

  /**
   * The first `n` positions of a [batch, heads, length, headDim] cache tensor on the GPU: one
   * buffer-to-buffer copy per head into a new buffer, queued before any later forward pass; the
   * old buffer is freed once the queue has done the copies.
   * @param {any} t @param {number} n
   */
  #cutOnGpu(t, n) {
    const device = /** @type {any} */ (this.gpuDevice);
    const [b, h, len, d] = t.dims;
    const bytes = t.type === "float16" ? 2 : 4;
    const row = n * d * bytes;
    const usage = 0x80 | 0x04 | 0x08; // GPUBufferUsage.STORAGE | COPY_SRC | COPY_DST
    const dst = device.createBuffer({ size: Math.max(16, Math.ceil((b * h * row) / 16) * 16), usage });
    const source = t.ort_tensor.gpuBuffer;
    const encoder = device.createCommandEncoder();
    for (let i = 0; i < b * h; i++) encoder.copyBufferToBuffer(source, i * len * d * bytes, dst, i * row, row);
    device.queue.submit([encoder.finish()]);
    device.queue.onSubmittedWorkDone().then(() => t.dispose());
    const OrtTensor = t.ort_tensor.constructor;
    return new Tensor(OrtTensor.fromGpuBuffer(dst, { dataType: t.type, dims: [b, h, n, d], dispose: () => dst.destroy() }));
  }

  /**
   * The cache's tensors and the tokens they hold, as arrays in memory (a GPU cache is read back), for
   * keeping beyond this page (prompt_cache.js). The arrays are the cache's own: a forward pass makes
   * new ones, so they stay as they are.
   * @returns {Promise<{ids: number[], tensors: import("./prompt_cache.js").CacheTensor[]}>}
   */
  async snapshot() {
    const ids = [...this.sequence];
    const tensors = [];
    for (const [name, t] of Object.entries(this.past ?? {})) {
      const data = t.location === "gpu-buffer" ? await t.ort_tensor.getData() : t.data;
      tensors.push({ name, type: t.type, dims: [...t.dims], data });
    }
    return { ids, tensors };
  }

  /**
   * Take a cache kept beyond the page (prompt_cache.js) as this model's: `ids` are its tokens.
   * @param {number[]} ids @param {import("./prompt_cache.js").CacheTensor[]} tensors
   */
  adopt(ids, tensors) {
    this.reset();
    this.past = Object.fromEntries(tensors.map((t) => [t.name, new Tensor(t.type, t.data, t.dims)]));
    this.sequence = [...ids];
  }

  /** Free the GPU buffers of the cache, but those in `keep`. @param {Set<any>|null} [keep] */
  disposePast(keep = null) {
    if (!this.past) return;
    for (const t of Object.values(this.past)) {
      if (t.location === "gpu-buffer" && !(keep && keep.has(t))) t.dispose();
    }
  }

  /**
   * Run `ids` after the cached tokens; keep the new cache; return the logits of the last `rows`
   * positions, one array each.
   * @param {number[]|Int32Array} ids @param {number} [rows]
   * @returns {Promise<Float32Array[]>}
   */
  async forward(ids, rows = 1) {
    const n = ids.length;
    const start = this.pastLength;
    const total = start + n;
    /** @type {Record<string, any>} */
    const inputs = {
      input_ids: new Tensor("int64", BigInt64Array.from(ids, (x) => BigInt(x)), [1, n]),
      attention_mask: new Tensor("int64", new BigInt64Array(total).fill(1n), [1, total]),
      past_key_values: this.past ?? this.emptyCache(),
    };
    if (this.usesPositionIds) {
      inputs.position_ids = new Tensor("int64", BigInt64Array.from({ length: n }, (_, i) => BigInt(start + i)), [1, n]);
    }
    const out = await this.model.forward(inputs);
    /** @type {Record<string, any>} */
    const next = {};
    for (const [name, t] of Object.entries(out)) {
      if (name.startsWith("present")) next[name.replace("present", "past_key_values")] = t;
    }
    this.disposePast(new Set(Object.values(next)));
    this.past = next;
    for (const id of ids) this.sequence.push(Number(id));
    const logits = out.logits;
    const vocab = logits.dims.at(-1);
    const positions = logits.dims.at(-2);
    const data = logits.type === "float32" ? logits.data : logits.to("float32").data;
    return Array.from({ length: rows }, (_, i) => data.subarray((positions - rows + i) * vocab, (positions - rows + i + 1) * vocab));
  }

  /** @param {number[]|Int32Array} ids */
  async step(ids) {
    const t0 = performance.now();
    const [raw] = await this.forward(ids);
    return this.#choose(raw, this.sequence, performance.now() - t0);
  }

  /**
   * Speculative decoding's check (csi.core.backend.Verifying): run `ids` then `drafts` in one pass,
   * choose at each position as `step` would while the choices agree with the drafts, keep the
   * accepted drafts in the cache. A grammar's matcher accepts each choice as it is made, so it holds
   * only the choices returned; a page's logit processor, which would see every choice, gets plain
   * steps (`ids` alone, one choice).
   * @param {number[]} ids @param {number[]} drafts
   */
  async verify(ids, drafts) {
    if (LOGIT_PROCESSORS.has(this.id)) return [await this.step(ids)];
    const base = this.sequence.length + ids.length;
    const t0 = performance.now();
    const rows = await this.forward([...ids, ...drafts], drafts.length + 1);
    const each = (performance.now() - t0) / rows.length;
    const out = [];
    for (let i = 0; i < rows.length; i++) {
      out.push(await this.#choose(rows[i], this.sequence.slice(0, base + i), each));
      if (i === drafts.length || out[i].token !== drafts[i] || this.sampler.state.matcher?.isTerminated()) break;
    }
    const keep = base + out.length - 1;
    if (keep < this.sequence.length && this.truncate(keep) !== keep) throw new Error("the cache could not be cut");
    return out;
  }

  /**
   * The choice on one position's logits, timed into the breakdown.
   * @param {Float32Array} raw @param {number[]} sequence @param {number} forwardMs
   */
  async #choose(raw, sequence, forwardMs) {
    const t1 = performance.now();
    const logits = processedLogits(this.id, raw);
    const t2 = performance.now();
    const choice = this.sampler.constrained
      ? await this.sampler.chooseConstrained(logits, sequence)
      : this.sampler.choose(logits, sequence);
    LOGIT_PROCESSORS.get(this.id)?.processSampledToken(choice.token);
    const t3 = performance.now();
    const b = this.breakdown;
    const grammar = choice.grammarS ?? 0;
    b.forwardTime.push(forwardMs / 1000);
    b.logitProcessorTime.push((t2 - t1) / 1000);
    const sampler = this.sampler.timing;
    b.grammarBitmaskTime.push(grammar);
    b.penaltyTime.push(sampler.penalty);
    b.logitBiasTime.push(sampler.bias);
    b.sampleTime.push(Math.max(0, (t3 - t2) / 1000 - grammar - sampler.penalty - sampler.bias));
    b.totalTime.push((t3 - t1) / 1000);
    return choice;
  }

  /** Start the per-token timings of a new request. */
  resetBreakdown() {
    this.breakdown = emptyBreakdown();
  }

  /**
   * This model's grammars (web-xgrammar), made on first use.
   * @param {string} vocabType @param {boolean} prependSpace @param {number[]} stopIds
   */
  grammarsFor(vocabType, prependSpace, stopIds) {
    if (!this.grammars) {
      const tok = this.tokenizer;
      const vocab = Array.from(tok._tokenizer.model.vocab, (t) => t ?? "");
      for (const [i, t] of tok._tokenizer.get_added_tokens_decoder().entries()) {
        while (vocab.length <= i) vocab.push("");
        vocab[i] = t.content;
      }
      const size = Math.max(this.config.vocab_size ?? 0, vocab.length);
      this.grammars = new Grammars(vocab, vocabType, prependSpace, size, stopIds);
    }
    return this.grammars;
  }
}
