// The JS side of the Python engine's Backend: tokenizers, forward passes with the KV cache kept
// here (on the CPU or the GPU), sampling on typed arrays, embeddings. Python (csi.pyodide_backend)
// calls these methods; nothing here decides what to generate.

import {
  AutoConfig,
  AutoModelForCausalLM,
  AutoTokenizer,
  Tensor,
  pipeline,
} from "../vendor/transformers/transformers.js";
import { configureRuntime } from "./runtime_env.js";
import { Sampler } from "./sampling.js";

/** Models built into the site: served from /models/<id>/, full precision. */
export const BUILTIN_MODELS = ["tiny-chat", "all-minilm-l6-v2"];

configureRuntime();

const CAUSAL_ARCH = /(ForCausalLM|LMHeadModel)$/;

// A decode loop resumed from promise callbacks never returns to the worker's task queue, so it
// lets messages (interrupt, cancel, new requests) in at least this often.
const YIELD_EVERY_MS = 8;
const yieldChannel = new MessageChannel();
const yieldWaiters = [];
yieldChannel.port1.onmessage = () => yieldWaiters.shift()?.();
/** Resolve after one turn of the event loop (a message to ourselves: no timer clamping). */
function yieldToEventLoop() {
  return new Promise((resolve) => {
    yieldWaiters.push(resolve);
    yieldChannel.port2.postMessage(0);
  });
}

/**
 * @typedef {{stage: string, file: string|null, loaded: number, total: number, model: string}} Progress
 */

class ChatModel {
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
    const session = model.sessions.model ?? Object.values(model.sessions)[0];
    this.cacheInputs = session.inputNames.filter((n) => n.startsWith("past_key_values."));
    this.cacheMeta = Object.fromEntries((session.inputMetadata ?? []).map((m) => [m.name, m]));
    this.usesPositionIds = session.inputNames.includes("position_ids");
  }

  emptyCache() {
    const c = this.config;
    const heads = c.num_key_value_heads ?? c.num_attention_heads;
    const headDim = c.head_dim ?? c.hidden_size / c.num_attention_heads;
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
   * Keep the first `n` cached tokens. Returns how many were kept: GPU-resident caches cannot be
   * cut here and are dropped instead (0).
   * @param {number} n
   */
  truncate(n) {
    if (n >= this.sequence.length) return this.sequence.length;
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

  disposePast(keep = null) {
    if (!this.past) return;
    for (const t of Object.values(this.past)) {
      if (t.location === "gpu-buffer" && !(keep && keep.has(t))) t.dispose();
    }
  }

  /**
   * Run `ids` after the cached tokens; keep the new cache; return the last position's logits.
   * @param {ArrayLike<number>} ids
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

  /** @param {ArrayLike<number>} ids */
  async step(ids) {
    const logits = await this.forward(ids);
    return this.sampler.choose(logits, this.sequence);
  }
}

class EmbeddingModel {
  constructor(id, extractor) {
    this.id = id;
    this.extractor = extractor;
  }

  /** @param {string[]} texts */
  async embed(texts) {
    const tok = this.extractor.tokenizer(texts, { padding: true, truncation: true });
    let tokens = 0;
    for (const m of tok.attention_mask.data) tokens += Number(m);
    const out = await this.extractor(texts, { pooling: "mean", normalize: true });
    return { data: out.data, dims: out.dims, tokens };
  }
}

/** Everything the Python backend calls. One instance per worker. */
export class Bridge {
  constructor() {
    /** @type {Map<string, ChatModel|EmbeddingModel>} */
    this.models = new Map();
    /** @type {Map<string, any>} tokenizers loaded for chunking alone (no weights) */
    this.tokenizers = new Map();
    this.lastYield = 0;
  }

  builtinModels() {
    return BUILTIN_MODELS;
  }

  /** @param {string} id */
  tokenizerOf(id) {
    const m = this.models.get(id);
    if (m instanceof ChatModel) return m.tokenizer;
    if (m instanceof EmbeddingModel) return m.extractor.tokenizer;
    return this.tokenizers.get(id) ?? null;
  }

  /**
   * Make `countTokens` work for a loaded model or a built-in one (its tokenizer only). Other ids
   * are refused: chunking never reaches out to the network.
   * @param {string} id
   */
  async loadTokenizer(id) {
    if (this.tokenizerOf(id)) return;
    if (!BUILTIN_MODELS.includes(id)) throw new Error(`${id} is neither loaded nor built in`);
    this.tokenizers.set(id, await AutoTokenizer.from_pretrained(id));
  }

  /**
   * Token counts (no special tokens) of a batch of texts.
   * @param {string} id @param {string} textsJson
   */
  countTokens(id, textsJson) {
    const tokenizer = this.tokenizerOf(id);
    if (!tokenizer) throw new Error(`no tokenizer is loaded for ${id}`);
    const texts = JSON.parse(textsJson);
    const out = new Int32Array(texts.length);
    for (let i = 0; i < texts.length; i++) {
      out[i] = tokenizer.encode(texts[i], { add_special_tokens: false }).length;
    }
    return out;
  }

  /**
   * @param {string} id model id: a built-in one or a Hugging Face repo id
   * @param {string} device "wasm" | "webgpu" | "auto"
   * @param {(p: Progress) => void} onProgress
   * @param {string|null} dtype weights precision; default fp32 for built-ins, the hub's default otherwise
   */
  async loadModel(id, device, onProgress, dtype = null) {
    if (device === "auto") device = (await webgpuAvailable()) ? "webgpu" : "wasm";
    const progress_callback = (e) =>
      onProgress({
        stage: e.status,
        file: e.file ?? null,
        loaded: e.loaded ?? 0,
        total: e.total ?? 0,
        model: id,
      });
    const options = { device, progress_callback };
    const chosen = dtype ?? (BUILTIN_MODELS.includes(id) ? "fp32" : null);
    if (chosen) options.dtype = chosen;
    const config = await AutoConfig.from_pretrained(id, { progress_callback });
    const arch = (config.architectures ?? []).join(",");
    let info;
    if (CAUSAL_ARCH.test(arch) || (!arch && config.is_decoder)) {
      const [tokenizer, model] = await Promise.all([
        AutoTokenizer.from_pretrained(id, { progress_callback }),
        AutoModelForCausalLM.from_pretrained(id, options),
      ]);
      const m = new ChatModel(id, tokenizer, model, config);
      this.models.set(id, m);
      const gen = model.generation_config ?? {};
      const eos = [gen.eos_token_id, config.eos_token_id, tokenizer.eos_token_id]
        .flat()
        .filter((x) => typeof x === "number");
      info = {
        kind: "chat",
        context_length: config.max_position_embeddings ?? tokenizer.model_max_length ?? 2048,
        eos_token_ids: [...new Set(eos)],
        vocab_size: config.vocab_size ?? 0,
      };
    } else {
      const extractor = await pipeline("feature-extraction", id, options);
      this.models.set(id, new EmbeddingModel(id, extractor));
      info = {
        kind: "embedding",
        context_length: extractor.tokenizer.model_max_length ?? config.max_position_embeddings ?? 512,
        eos_token_ids: [],
        vocab_size: config.vocab_size ?? 0,
      };
    }
    onProgress({ stage: "ready", file: null, loaded: 1, total: 1, model: id });
    return JSON.stringify({ ...info, device });
  }

  async unloadModel(id) {
    const m = this.models.get(id);
    this.models.delete(id);
    if (m instanceof ChatModel) {
      m.reset();
      await m.model.dispose?.();
    } else if (m) {
      await m.extractor.dispose?.();
    }
  }

  /** @param {string} id */
  chat(id) {
    const m = this.models.get(id);
    if (!(m instanceof ChatModel)) throw new Error(`${id} is not a loaded chat model`);
    return m;
  }

  /** @param {string} id @param {string} messagesJson */
  applyChatTemplate(id, messagesJson) {
    const ids = this.chat(id).tokenizer.apply_chat_template(JSON.parse(messagesJson), {
      add_generation_prompt: true,
      tokenize: true,
      return_tensor: false,
      return_dict: false,
    });
    return Int32Array.from(ids);
  }

  /** @param {string} id @param {string} text @param {boolean} addSpecialTokens */
  encode(id, text, addSpecialTokens = false) {
    return Int32Array.from(this.chat(id).tokenizer.encode(text, { add_special_tokens: !!addSpecialTokens }));
  }

  /** @param {string} id @param {Int32Array|number[]} ids */
  decode(id, ids) {
    return this.chat(id).tokenizer.decode(Array.from(ids), { skip_special_tokens: true });
  }

  /** Keep the first `n` tokens of the cache; returns how many were kept. */
  truncate(id, n) {
    return this.chat(id).truncate(n);
  }

  /** @param {string} id @param {string} paramsJson SamplingParams as JSON: a new request */
  setSampling(id, paramsJson) {
    this.chat(id).sampler = new Sampler(JSON.parse(paramsJson));
  }

  /** The next choice of the same request (`n` > 1): counts restart, the generator goes on. */
  nextChoice(id) {
    this.chat(id).sampler.nextChoice();
  }

  /**
   * Python's persistent callbacks for `stepAsync` results: settling a Python future through
   * them costs far less per token than awaiting a returned Promise from Python.
   * @param {(ticket: number, token: number, logprobs: string|undefined) => void} onToken
   * @param {(ticket: number, message: string) => void} onError
   */
  setStepCallbacks(onToken, onError) {
    this.onToken = onToken;
    this.onError = onError;
  }

  /**
   * Start a step: run `ids` (one token id, or an array) after the cache and sample; the token
   * arrives through `onToken(ticket, token, logprobsJson)` (`undefined` unless logprobs were asked).
   * @param {string} id @param {number|Int32Array|number[]} ids @param {number} ticket
   */
  stepAsync(id, ids, ticket) {
    const model = this.chat(id);
    const input = typeof ids === "number" ? [ids] : ids;
    const run = performance.now() - this.lastYield > YIELD_EVERY_MS
      ? yieldToEventLoop().then(() => {
        this.lastYield = performance.now();
        return model.step(input);
      })
      : model.step(input);
    run.then(
        // `undefined`, not `null`: Pyodide hands JS null to Python as a JsNull object, not None
        (r) => this.onToken(ticket, r.token, r.logprob === undefined ? undefined : JSON.stringify([r.logprob, r.top])),
        (err) => this.onError(ticket, String(err?.message ?? err)),
      );
  }

  /**
   * What Python needs to turn token ids into bytes itself: the decoder config, the id -> token
   * strings and the added tokens, as JSON.
   * @param {string} id
   */
  tokenTable(id) {
    const tok = this.chat(id).tokenizer;
    const added = [...tok._tokenizer.get_added_tokens_decoder().entries()].map(([i, t]) => [i, t.content, !!t.special]);
    return JSON.stringify({
      decoder: tok._tokenizerJSON?.decoder ?? null,
      vocab: Array.from(tok._tokenizer.model.vocab),
      added,
    });
  }

  /** @param {string} id @param {string} textsJson */
  async embed(id, textsJson) {
    const m = this.models.get(id);
    if (!(m instanceof EmbeddingModel)) throw new Error(`${id} is not a loaded embedding model`);
    return m.embed(JSON.parse(textsJson));
  }
}

async function webgpuAvailable() {
  try {
    return !!(navigator.gpu && (await navigator.gpu.requestAdapter()));
  } catch {
    return false;
  }
}
