// The JS side of the Python engine's Backend: tokenizers, forward passes with the KV cache kept
// in each ChatModel (chat_model.js: on the CPU or the GPU), sampling on typed arrays, embeddings.
// Python (csi.backends.pyodide) calls these methods; nothing here decides what to generate.

import {
  AutoConfig,
  AutoModelForCausalLM,
  AutoTokenizer,
  ModelRegistry,
  Tensor,
  env,
  mean_pooling,
  pipeline,
} from "../vendor/transformers/transformers.js";
import { ChatModel } from "./chat_model.js";
import { jsonSchemaToEBNF } from "./grammar.js";
import { EXPANDED_DATA, EXPANDED_GRAPHS, expandBlocks } from "./gguf_blocks.js";
import { Guts } from "./guts.js";
import { HUB, SITE_ONLY, abortLoads, beginLoad } from "./hub_fetch.js";
import { LOGIT_PROCESSORS } from "./logit_processors.js";
import { configureRuntime } from "./runtime_env.js";
import { Sampler } from "./sampling/index.js";

/**
 * The models the site serves from /models/<id>/ (built in, or imported from a GGUF by
 * `python3 build.py import-gguf`), as `models/models.json` lists them; never asked of the Hub.
 * Filled once `SITE_MODELS_LISTED` settles (no top-level await: a module worker would drop the
 * messages that arrive while it waits).
 * @type {string[]}
 */
export const BUILTIN_MODELS = [];
export const SITE_MODELS_LISTED = siteModels().then((ids) => {
  BUILTIN_MODELS.push(...ids);
  for (const id of ids) SITE_ONLY.add(id);
});

configureRuntime();

/** @returns {Promise<string[]>} */
async function siteModels() {
  try {
    const r = await fetch(new URL("../models/models.json", import.meta.url));
    if (r.ok) return (await r.json()).models.map((/** @type {{id: string}} */ m) => m.id);
  } catch {
    // a site without the listing: the models every build has
  }
  return ["smollm2-135m-instruct", "tiny-chat", "all-minilm-l6-v2", "tiny-gpt2"];
}

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

/** The per-token states of an encoder's output, under whichever name the model gives them. @param {any} out */
function tokenStates(out) {
  return out.last_hidden_state ?? out.logits ?? out.token_embeddings;
}

/**
 * @typedef {{stage: string, file: string|null, loaded: number, total: number, model: string,
 *            files?: Record<string, number>}} Progress
 *   `files` (stage `plan` only): every file the load reads, with its size in bytes.
 */

class EmbeddingModel {
  /** @param {string} id @param {any} extractor transformers.js's feature-extraction pipeline */
  constructor(id, extractor) {
    this.id = id;
    this.extractor = extractor;
  }

  /**
   * Mean-pooled, normalized embeddings, as the feature-extraction pipeline computes them, from one
   * tokenization (it also gives the token count).
   * @param {string[]} texts
   */
  async embed(texts) {
    const inputs = this.extractor.tokenizer(texts, { padding: true, truncation: true });
    let tokens = 0;
    for (const m of inputs.attention_mask.data) tokens += Number(m);
    const out = await this.extractor.model(inputs);
    const pooled = mean_pooling(tokenStates(out), inputs.attention_mask).normalize(2, -1);
    return { data: pooled.data, dims: pooled.dims, tokens };
  }

  /**
   * Embed token ids as they are (no special tokens added): padded into one batch, mean-pooled
   * over each row's own tokens, normalized, as `embed` does for text.
   * @param {number[][]} rows
   */
  async embedIds(rows) {
    const width = Math.max(...rows.map((r) => r.length));
    const ids = new BigInt64Array(rows.length * width);
    const mask = new BigInt64Array(rows.length * width);
    rows.forEach((r, i) => r.forEach((t, j) => {
      ids[i * width + j] = BigInt(t);
      mask[i * width + j] = 1n;
    }));
    const attention_mask = new Tensor("int64", mask, [rows.length, width]);
    const out = await this.extractor.model({ input_ids: new Tensor("int64", ids, [rows.length, width]), attention_mask });
    const pooled = mean_pooling(tokenStates(out), attention_mask).normalize(2, -1);
    return { data: pooled.data, dims: pooled.dims, tokens: rows.reduce((n, r) => n + r.length, 0) };
  }
}

/** Everything the Python backend calls. One instance per worker. */
export class Bridge {
  constructor() {
    /** @type {Map<string, ChatModel|EmbeddingModel>} */
    this.models = new Map();
    /** @type {Map<string, number>} loads begun per model id: only the latest may keep its model */
    this.loadSeq = new Map();
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
   * @param {string|null} hub the base URL of a Hub mirror (null: the Hub)
   */
  async loadModel(id, device, onProgress, dtype = null, hub = null) {
    if (BUILTIN_MODELS.includes(id)) {
      // from the site: quick, not cancellable, and no business with the Hub (a Hub load may be running)
      return this.#loadModel(id, device, onProgress, dtype, new AbortController().signal);
    }
    env.remoteHost = hub ?? HUB;
    const load = beginLoad(hub ?? HUB);
    let ok = false;
    try {
      const info = await this.#loadModel(id, device, onProgress, dtype, load.signal);
      ok = true;
      return info;
    } finally {
      await load.done(ok);
    }
  }

  /** Stop the downloads of every load under way (each fails with an AbortError). */
  abortLoads() {
    abortLoads();
  }

  /**
   * @param {string} id @param {string} device @param {(p: Progress) => void} onProgress
   * @param {string|null} dtype @param {AbortSignal} signal
   */
  async #loadModel(id, device, onProgress, dtype, signal) {
    if (device === "auto") device = (await webgpuAvailable()) ? "webgpu" : "wasm";
    /** @type {Set<string>} the ONNX files (and their external data) transformers.js reads */
    const onnxFiles = new Set();
    const progress_callback = (e) => {
      if (signal.aborted) return;
      if (e.status === "done" && /\.onnx(_data(_\d+)?)?$/.test(e.file ?? "")) onnxFiles.add(e.file);
      onProgress({
        stage: e.status,
        file: e.file ?? null,
        loaded: e.loaded ?? 0,
        total: e.total ?? 0,
        model: id,
      });
    };
    const options = { device, progress_callback };
    const chosen = dtype ?? (BUILTIN_MODELS.includes(id) ? "fp32" : null);
    if (chosen) options.dtype = chosen;
    const config = await AutoConfig.from_pretrained(id, { progress_callback });
    signal.throwIfAborted();
    await this.#reportPlan(id, config, options, onProgress, signal);
    signal.throwIfAborted();
    const expandedUrl = config.csi_gguf && BUILTIN_MODELS.includes(id) && chosen === "fp32"
      ? await this.#expandGGUFBlocks(id, options, progress_callback)
      : null;
    try {
      return await this.#loadSessions(id, device, config, options, onProgress, signal, onnxFiles);
    } finally {
      if (expandedUrl) EXPANDED_GRAPHS.delete(expandedUrl);
    }
  }

  /**
   * A model imported from a GGUF (gguf_blocks.js): read its file (from Cache Storage, where the
   * file is kept as it is, or from the site), expand its blocks here, and let transformers.js
   * load the expanded graph with the weights as external data. Returns the file's URL.
   * @param {string} id @param {Record<string, any>} options transformers.js's, given the external data
   * @param {(e: any) => void} progress_callback
   */
  async #expandGGUFBlocks(id, options, progress_callback) {
    const file = "onnx/model.onnx";
    const url = new URL(`${env.localModelPath}${id}/${file}`, new URL("../", import.meta.url)).href;
    const cache = typeof caches === "undefined" ? null : await caches.open(env.cacheKey);
    let response = await cache?.match(url);
    const cached = !!response;
    response ??= await fetch(url);
    if (!response.ok) throw new Error(`could not read ${url}: HTTP ${response.status}`);
    const said = Number(response.headers.get("content-length")) || 0;
    /** @type {Uint8Array[]} */
    const parts = [];
    let loaded = 0;
    const reader = /** @type {ReadableStream<Uint8Array>} */ (response.body).getReader();
    for (let r = await reader.read(); !r.done; r = await reader.read()) {
      parts.push(r.value);
      loaded += r.value.length;
      progress_callback({ status: "progress", file, loaded, total: Math.max(said, loaded) });
    }
    const bytes = new Uint8Array(loaded);
    parts.reduce((at, p) => (bytes.set(p, at), at + p.length), 0);
    parts.length = 0;
    if (!cached) {
      const headers = { "content-length": String(loaded) };
      await cache?.put(url, new Response(bytes, { headers })).catch(() => {});
    }
    const expanded = expandBlocks(bytes);
    if (!expanded) return null;
    EXPANDED_GRAPHS.set(url, expanded.graph);
    options.session_options = { externalData: [{ path: EXPANDED_DATA, data: expanded.data }] };
    return url;
  }

  /**
   * @param {string} id @param {string} device @param {any} config @param {Record<string, any>} options
   * @param {(p: Progress) => void} onProgress @param {AbortSignal} signal @param {Set<string>} onnxFiles
   */
  async #loadSessions(id, device, config, options, onProgress, signal, onnxFiles) {
    const progress_callback = options.progress_callback;
    const seq = (this.loadSeq.get(id) ?? 0) + 1;
    this.loadSeq.set(id, seq);
    /** A later load of the same id, or a cancel, makes this one give up its model. */
    const superseded = () => signal.aborted || this.loadSeq.get(id) !== seq;
    const arch = (config.architectures ?? []).join(",");
    let info;
    if (CAUSAL_ARCH.test(arch) || (!arch && config.is_decoder)) {
      const [tokenizer, model] = await Promise.all([
        AutoTokenizer.from_pretrained(id, { progress_callback }),
        AutoModelForCausalLM.from_pretrained(id, options),
      ]);
      if (superseded()) {
        await model.dispose?.();
        throw signal.reason ?? new Error(`a later load of ${id} replaced this one`);
      }
      const m = new ChatModel(id, tokenizer, model, config);
      if (device === "webgpu") m.gpuDevice = await env.backends.onnx.webgpu?.device;
      m.guts = new Guts(m, [...onnxFiles], BUILTIN_MODELS.includes(id));
      this.models.set(id, m);
      const gen = model.generation_config ?? {};
      const eos = [gen.eos_token_id, config.eos_token_id, tokenizer.eos_token_id]
        .flat()
        .filter((x) => typeof x === "number");
      info = {
        kind: "chat",
        context_length: config.max_position_embeddings ?? config.n_positions ?? tokenizer.model_max_length ?? 2048,
        eos_token_ids: [...new Set(eos)],
        vocab_size: config.vocab_size ?? 0,
      };
    } else {
      const extractor = await pipeline("feature-extraction", id, options);
      if (superseded()) {
        await extractor.dispose?.();
        throw signal.reason ?? new Error(`a later load of ${id} replaced this one`);
      }
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

  /**
   * Report every file the load will read, with its size (stage `plan`), so the page's progress
   * is a fraction of all the bytes from the start. Best effort: without it, progress still comes.
   * @param {string} id @param {any} config @param {{device: string, dtype?: string}} options
   * @param {(p: Progress) => void} onProgress @param {AbortSignal} signal
   */
  async #reportPlan(id, config, options, onProgress, signal) {
    try {
      const files = await ModelRegistry.get_files(id, { config, device: options.device, dtype: options.dtype,
                                                        include_processor: false });
      const sizes = await Promise.all(files.map((f) => ModelRegistry.get_file_metadata(id, f)));
      /** @type {Record<string, number>} */
      const planned = {};
      files.forEach((f, i) => {
        if (sizes[i].exists && sizes[i].size) planned[f] = sizes[i].size;
      });
      const total = Object.values(planned).reduce((a, b) => a + b, 0);
      onProgress({ stage: "plan", file: null, loaded: 0, total, model: id, files: planned });
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      console.warn(`no download plan for ${id}:`, err);
    }
  }

  /** @param {string} id */
  async unloadModel(id) {
    const m = this.models.get(id);
    this.models.delete(id);
    if (m instanceof ChatModel) {
      m.reset();
      m.sampler.dispose();
      await m.grammars?.dispose();
      await m.guts?.dispose();
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

  /**
   * The model's chat template source (`undefined` if it has none).
   * @param {string} id
   */
  chatTemplate(id) {
    const t = this.chat(id).tokenizer.chat_template;
    if (typeof t === "string") return t;
    if (Array.isArray(t)) {
      // named templates: the one for tools if there is one
      const named = t.find((x) => x.name === "tool_use") ?? t.find((x) => x.name === "default");
      return named?.template;
    }
    return undefined;
  }

  /**
   * @param {string} id @param {string} messagesJson
   * @param {string} [toolsJson] OpenAI-shaped tools for the template, as JSON
   * @param {string} [variablesJson] more of the template's inputs (such as `enable_thinking`), as JSON
   */
  applyChatTemplate(id, messagesJson, toolsJson, variablesJson) {
    /** @type {Record<string, any>} */
    const options = { ...JSON.parse(variablesJson || "{}"), add_generation_prompt: true, tokenize: true,
      return_tensor: false, return_dict: false };
    if (toolsJson) options.tools = JSON.parse(toolsJson);
    const ids = this.chat(id).tokenizer.apply_chat_template(JSON.parse(messagesJson), options);
    return Int32Array.from(ids);
  }

  /**
   * Compile a grammar for model `id` unless cached. Rejects with the compiler's message.
   * @param {string} id @param {string} specJson {kind, source}
   * @param {string} vocabType @param {boolean} prependSpace @param {string} stopIdsJson
   */
  async compileGrammar(id, specJson, vocabType, prependSpace, stopIdsJson) {
    const grammars = this.chat(id).grammarsFor(vocabType, !!prependSpace, JSON.parse(stopIdsJson));
    await grammars.compile(JSON.parse(specJson));
  }

  /** @param {string} id @param {string} text @param {boolean} addSpecialTokens */
  encode(id, text, addSpecialTokens = false) {
    return Int32Array.from(this.chat(id).tokenizer.encode(text, { add_special_tokens: !!addSpecialTokens }));
  }

  /** @param {string} id @param {Int32Array|number[]} ids */
  decode(id, ids) {
    return this.chat(id).tokenizer.decode(Array.from(ids), { skip_special_tokens: true });
  }

  /**
   * Fit model `id`'s cache to a new prompt: keep its longest common prefix with `ids` (short of the
   * last prompt token); returns how many tokens were kept. `reusePrefix(id, [])` drops the cache.
   * @param {string} id @param {ArrayLike<number>} ids the prompt's token ids
   * @returns {number}
   */
  reusePrefix(id, ids) {
    const model = this.chat(id);
    const cached = model.sequence.length;
    const kept = model.reusePrefix(ids);
    // as WebLLM: a prompt that does not continue the cached conversation (or resetChat) starts over
    if (kept < cached || !ids.length) LOGIT_PROCESSORS.get(id)?.resetState();
    return kept;
  }

  /** A JSON Schema as compact EBNF (for structural tags). @param {string} schemaJson */
  jsonSchemaToEBNF(schemaJson) {
    return jsonSchemaToEBNF(schemaJson);
  }

  /** @param {string} id @param {string} paramsJson SamplingParams as JSON: a new request */
  setSampling(id, paramsJson) {
    const model = this.chat(id);
    model.sampler.dispose();
    model.sampler = new Sampler(JSON.parse(paramsJson), model.grammars);
    model.resetBreakdown();
  }

  /**
   * Seconds per step of the current request, by stage, as JSON (see ChatModel's Breakdown).
   * @param {string} id
   */
  latencyBreakdown(id) {
    return JSON.stringify(this.chat(id).breakdown);
  }

  /**
   * The next choice of the same request (`n` > 1): counts restart, the generator goes on.
   * @param {string} id
   */
  nextChoice(id) {
    this.chat(id).sampler.nextChoice();
  }

  /**
   * Python's persistent callbacks for `stepAsync` results: settling a Python future through
   * them costs far less per token than awaiting a returned Promise from Python.
   * @param {(ticket: number, token: number, logprobs: string|undefined, grammarS: number|undefined) => void} onToken
   * @param {(ticket: number, message: string) => void} onError
   */
  setStepCallbacks(onToken, onError) {
    this.onToken = onToken;
    this.onError = onError;
  }

  /**
   * Start a step: run `ids` (one token id, or an array) after the cache and sample; the token
   * arrives through `onToken(ticket, token, logprobsJson, grammarSeconds)` (`undefined` unless
   * logprobs were asked, or the request has a grammar).
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
        (r) => this.onToken(ticket, r.token, r.logprob === undefined ? undefined : JSON.stringify([r.logprob, r.top]),
          r.grammarS),
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

  /**
   * The decoder's ONNX graph (nodes, inputs, outputs, initializer shapes) and its config, as JSON,
   * for Python to name the tensors guts reads.
   * @param {string} id
   */
  async gutsGraph(id) {
    const m = this.chat(id);
    return JSON.stringify({ graph: await m.guts.graph(), config: m.config });
  }

  /**
   * Run a prompt through the guts session (made on first use) and shape the vectors.
   * @param {string} id @param {Int32Array|number[]} ids @param {string} planJson
   */
  async guts(id, ids, planJson) {
    const r = await this.chat(id).guts.run(ids, JSON.parse(planJson));
    return { ...r, top: JSON.stringify(r.top) };
  }

  /** @param {string} id @param {string} textsJson */
  async embed(id, textsJson) {
    const m = this.models.get(id);
    if (!(m instanceof EmbeddingModel)) throw new Error(`${id} is not a loaded embedding model`);
    return m.embed(JSON.parse(textsJson));
  }

  /** @param {string} id @param {string} idsJson token id lists */
  async embedIds(id, idsJson) {
    const m = this.models.get(id);
    if (!(m instanceof EmbeddingModel)) throw new Error(`${id} is not a loaded embedding model`);
    return m.embedIds(JSON.parse(idsJson));
  }
}

async function webgpuAvailable() {
  try {
    return !!(navigator.gpu && (await navigator.gpu.requestAdapter()));
  } catch {
    return false;
  }
}
