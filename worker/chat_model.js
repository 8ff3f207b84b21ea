// One loaded causal language model for the Bridge: its tokenizer, forward passes with the KV
// cache kept here (on the CPU or the GPU) together with the list of the tokens it holds, and
// sampling on typed arrays. The cache has one owner: callers ask `reusePrefix` how much of a new
// prompt it already holds, and never keep a copy of the cached tokens.

import { Tensor } from "../vendor/transformers/transformers.js";
import { Grammars } from "./grammar.js";
import { LOGIT_PROCESSORS, processedLogits } from "./logit_processors.js";
import { Sampler } from "./sampling.js";

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
    /** @type {Grammars|null} */
    this.grammars = null;
    /** @type {import("./guts.js").Guts|null} set by the Bridge */
    this.guts = null;
    const session = model.sessions.model ?? Object.values(model.sessions)[0];
    this.cacheInputs = session.inputNames.filter((n) => n.startsWith("past_key_values."));
    this.cacheMeta = Object.fromEntries((session.inputMetadata ?? []).map((m) => [m.name, m]));
    this.usesPositionIds = session.inputNames.includes("position_ids");
  }

  emptyCache() {
    const c = this.config;
    const heads = c.num_key_value_heads ?? c.num_attention_heads ?? c.n_head;
    const headDim = c.head_dim ?? (c.hidden_size ?? c.n_embd) / (c.num_attention_heads ?? c.n_head);
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
   * tokens were kept. A GPU-resident cache is kept whole or dropped (0): it cannot be cut here.
   * An empty `ids` drops the cache.
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
    if (n <= 0 || !this.past || Object.values(this.past).some((t) => t.location === "gpu-buffer")) {
      this.reset();
      return 0;
    }
    const past = {};
    for (const [name, t] of Object.entries(this.past)) {
      const [b, h, len, d] = t.dims;
      const out = new t.data.constructor(b * h * n * d);
      for (let i = 0; i < b * h; i++) {
        out.set(t.data.subarray(i * len * d, i * len * d + n * d), i * n * d);
      }
      past[name] = new Tensor(t.type, out, [b, h, n, d]);
    }
    this.past = past;
    this.sequence.length = n;
    return n;
  }

  /** Free the GPU buffers of the cache, but those in `keep`. @param {Set<any>|null} [keep] */
  disposePast(keep = null) {
    if (!this.past) return;
    for (const t of Object.values(this.past)) {
      if (t.location === "gpu-buffer" && !(keep && keep.has(t))) t.dispose();
    }
  }

  /**
   * Run `ids` after the cached tokens; keep the new cache; return the last position's logits.
   * @param {number[]|Int32Array} ids
   * @returns {Promise<Float32Array>}
   */
  async forward(ids) {
    const n = ids.length;
    const start = this.pastLength;
    const total = start + n;
    const inputs = {
      input_ids: new Tensor("int64", BigInt64Array.from(ids, (x) => BigInt(x)), [1, n]),
      attention_mask: new Tensor("int64", new BigInt64Array(total).fill(1n), [1, total]),
      past_key_values: this.past ?? this.emptyCache(),
    };
    if (this.usesPositionIds) {
      inputs.position_ids = new Tensor("int64", BigInt64Array.from({ length: n }, (_, i) => BigInt(start + i)), [1, n]);
    }
    const out = await this.model.forward(inputs);
    const next = {};
    for (const [name, t] of Object.entries(out)) {
      if (name.startsWith("present")) next[name.replace("present", "past_key_values")] = t;
    }
    this.disposePast(new Set(Object.values(next)));
    this.past = next;
    for (const id of ids) this.sequence.push(Number(id));
    const logits = out.logits;
    const vocab = logits.dims.at(-1);
    const rows = logits.dims.at(-2);
    const data = logits.type === "float32" ? logits.data : logits.to("float32").data;
    return data.subarray((rows - 1) * vocab, rows * vocab);
  }

  /** @param {number[]|Int32Array} ids */
  async step(ids) {
    const logits = processedLogits(this.id, await this.forward(ids));
    const choice = this.sampler.constrained
      ? await this.sampler.chooseConstrained(logits, this.sequence)
      : this.sampler.choose(logits, this.sequence);
    LOGIT_PROCESSORS.get(this.id)?.processSampledToken(choice.token);
    return choice;
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
