// The Bridge's loading role: loading a model (chat or embedding, from the site or the Hub, with
// progress and a download plan), cancelling loads, unloading.

import {
  AutoConfig,
  AutoModelForCausalLM,
  AutoTokenizer,
  ModelRegistry,
  env,
  pipeline,
} from "../../vendor/transformers/transformers.js";
import { ChatModel } from "../chat_model.js";
import { EXPANDED_GRAPHS } from "../gguf_blocks.js";
import { useRuntimeFor } from "../runtime_env.js";
import { PromptInsides } from "../insides_session.js";
import { HUB, SITE_ONLY, abortLoads, beginLoad } from "../hub_fetch.js";
import { EmbeddingModel } from "./embedding_model.js";
import { beginExpansion, dropEarlyExpansions, expandGGUFBlocks } from "./gguf_expand.js";
import { expandWeights, ggufAtHand, ggufBlob, ggufName, headerJson, rangeSource } from "./gguf_source.js";
import { BUILTIN_MODELS, MODEL_HASHES } from "./site_models.js";
import { ggufIdentity, modelCacheKey } from "../prompt_cache.js";

/** @typedef {import("./model_store.js").ModelStore} ModelStore */

/**
 * @typedef {{stage: string, file: string|null, loaded: number, total: number, model: string,
 *            files?: Record<string, number>}} Progress
 *   `files` (stage `plan` only): every file the load reads, with its size in bytes.
 */

const CAUSAL_ARCH = /(ForCausalLM|LMHeadModel)$/;
const SITE = new URL("../../", import.meta.url);
const utf8 = new TextEncoder();
/** What the graph's weights initializers point into (csi.gguf.graph.WEIGHTS_FILE). */
const GGUF_WEIGHTS = "gguf_weights.bin";

async function webgpuAvailable() {
  try {
    return !!(navigator.gpu && (await navigator.gpu.requestAdapter()));
  } catch {
    return false;
  }
}

/**
 * A load the worker began before Python asked for it (while Python boots): the first load of the same
 * model on the same device takes it over, with the progress it reported so far.
 * @typedef {{id: string, controller: AbortController, promise: Promise<string>,
 *            claim: (onProgress: (p: Progress) => void) => void}} Preload
 */

export class LoadingRole {
  /** @param {ModelStore} store */
  constructor(store) {
    this.store = store;
    /** @type {Map<string, number>} loads begun per model id: only the latest may keep its model */
    this.loadSeq = new Map();
    /** @type {Map<string, Preload>} by model id and device */
    this.preloads = new Map();
    /** @type {Promise<unknown>} the last preload (they run one after the other, as Python's loads) */
    this.preloadChain = Promise.resolve();
    /** @type {Map<string, Blob|null>} GGUF files opened (openGGUF) and not loaded yet, by model id (null:
     * its header read by byte ranges, its bytes not downloaded yet) */
    this.opened = new Map();
  }

  /**
   * Open GGUF model `id` (a URL, a blob: URL of a picked file, a path of the site): its bytes kept
   * (Cache Storage) with progress, its header read. Returns the header as JSON for Python, which
   * writes the model's graph and files ({@link loadGGUF} loads them).
   * @param {string} id @param {(p: Progress) => void} onProgress @returns {Promise<string>}
   */
  async openGGUF(id, onProgress) {
    if (this.preloads.size) await this.discardPreloads();
    const load = beginLoad(null);
    let ok = false;
    try {
      const blob = await ggufAtHand(id);
      const ranges = blob ? null : await rangeSource(id, load.signal);
      if (ranges) {
        const header = await headerJson(ranges);
        onProgress({ stage: "plan", file: null, loaded: 0, total: ranges.size, model: id,
                     files: { [ggufName(id)]: ranges.size } });
        this.opened.set(id, null);
        ok = true;
        return header;
      }
      const file = blob ?? await this.#download(id, load.signal, onProgress);
      load.signal.throwIfAborted();
      const header = await headerJson(file);
      this.opened.set(id, file);
      ok = true;
      return header;
    } finally {
      await load.done(ok);
    }
  }

  /**
   * The GGUF file of `id` downloaded (into the cache), with a plan and byte progress.
   * @param {string} id @param {AbortSignal} signal @param {(p: Progress) => void} onProgress
   */
  #download(id, signal, onProgress) {
    const file = ggufName(id);
    let planned = false;
    return ggufBlob(id, signal, (loaded, total) => {
      if (signal.aborted) return;
      if (!planned && total) onProgress({ stage: "plan", file: null, loaded: 0, total, model: id, files: { [file]: total } });
      planned ||= total > 0;
      onProgress({ stage: "progress", file, loaded, total, model: id });
    });
  }

  /**
   * Load GGUF model `id` opened by {@link openGGUF}: its weights expanded from the file into the
   * buffer `graph` points into, the files Python wrote (config, tokenizer) served to transformers.js
   * from memory under a model id of their own.
   * @param {string} id @param {string} device @param {(p: Progress) => void} onProgress
   * @param {Uint8Array} graph the ONNX graph @param {string} filesJson {name: text} of the model folder
   * @param {string} weightsJson the graph's weights (gguf_source.js's Weight[]) @param {number} weightsBytes
   * @returns {Promise<string>} the model's info, as JSON
   */
  async loadGGUF(id, device, onProgress, graph, filesJson, weightsJson, weightsBytes) {
    if (!this.opened.has(id)) throw new Error(`${id} was not opened`);
    const opened = this.opened.get(id);
    this.opened.delete(id);
    const load = beginLoad(null);
    const folder = `gguf-${hashOf(id)}`;
    /** @type {string[]} */
    const served = [];
    let ok = false;
    try {
      if (device === "auto") device = (await webgpuAvailable()) ? "webgpu" : "wasm";
      useRuntimeFor(device);
      const blob = opened ?? await this.#download(id, load.signal, onProgress);
      const file = GGUF_WEIGHTS;
      const data = await expandWeights(blob, JSON.parse(weightsJson), weightsBytes, load.signal, (loaded, total) =>
        onProgress({ stage: "expand", file, loaded, total, model: id }));
      /** @type {Record<string, string>} */
      const files = JSON.parse(filesJson);
      const at = (/** @type {string} */ name) => new URL(`${env.localModelPath}${folder}/${name}`, SITE).href;
      for (const [name, text] of Object.entries(files)) {
        served.push(at(name));
        EXPANDED_GRAPHS.set(at(name), utf8.encode(text));
      }
      served.push(at("onnx/model.onnx"));
      EXPANDED_GRAPHS.set(at("onnx/model.onnx"), graph);
      SITE_ONLY.add(folder);
      const progress_callback = (/** @type {any} */ e) => {
        if (!load.signal.aborted && e.status === "ready") onProgress({ stage: "ready", file: null, loaded: 1, total: 1, model: id });
      };
      const options = { device, progress_callback, dtype: "fp32",
                        session_options: { externalData: [{ path: GGUF_WEIGHTS, data }] } };
      const info = await this.#loadSessions(folder, device, JSON.parse(files["config.json"]), options, onProgress,
                                            load.signal, new Set(), id);
      await this.#fileCachesUnder(id, ggufIdentity(blob, graph), device, "gguf");
      ok = true;
      return info;
    } finally {
      for (const url of served) EXPANDED_GRAPHS.delete(url);
      await load.done(ok);
    }
  }

  /**
   * Begin loading built-in model `id` on `device` before anyone asks: the worker does this with the
   * page's load request while Python boots, so the model's files and sessions are ready sooner.
   * Until a load claims it, `abortLoads()` leaves it alone (Python cancels loads before its own);
   * {@link discardPreloads} ends it.
   * @param {string} id @param {string} device
   */
  preload(id, device) {
    const key = `${id}\n${device}`;
    if (!BUILTIN_MODELS.includes(id) || this.preloads.has(key) || this.store.models.has(id)) return;
    beginExpansion(id); // on another core from now, if the model has GGUF blocks
    const controller = new AbortController();
    /** @type {Progress[]} */
    const early = [];
    /** @type {((p: Progress) => void)|null} */
    let listener = null;
    const onProgress = (/** @type {Progress} */ p) => (listener ? listener(p) : early.push(p));
    const promise = this.preloadChain.then(() => this.#loadModel(id, device, onProgress, null, controller.signal));
    this.preloadChain = promise.catch(() => {});
    this.preloads.set(key, {
      id, controller, promise, claim: (fn) => {
        listener = fn;
        for (const p of early.splice(0)) fn(p);
      },
    });
  }

  /** End the preloads no load claimed (their models are disposed). */
  async discardPreloads() {
    const left = [...this.preloads.values()];
    this.preloads.clear();
    dropEarlyExpansions();
    for (const pre of left) {
      pre.controller.abort(new DOMException("no load asked for this model", "AbortError"));
      const loaded = await pre.promise.then(() => true, () => false);
      if (loaded) await this.unloadModel(pre.id);
    }
  }

  /**
   * The preload of `id` on `device`, taken over by the load reporting to `onProgress` (null when
   * there is none); an unload or another load cancels it from then on, as any load.
   * @param {string} id @param {string} device @param {(p: Progress) => void} onProgress
   */
  #claim(id, device, onProgress) {
    const key = `${id}\n${device}`;
    const pre = this.preloads.get(key);
    if (!pre) return null;
    this.preloads.delete(key);
    pre.claim(onProgress);
    const load = beginLoad(null);
    load.signal.addEventListener("abort", () => pre.controller.abort(load.signal.reason), { once: true });
    return pre.promise.finally(() => load.done(true));
  }

  /** The ids of the models the site serves itself. */
  builtinModels() {
    return BUILTIN_MODELS;
  }

  /**
   * @param {string} id model id: a built-in one or a Hugging Face repo id
   * @param {string} device "wasm" | "webgpu" | "auto"
   * @param {(p: Progress) => void} onProgress
   * @param {string|null} dtype weights precision; default fp32 for built-ins, the hub's default otherwise
   * @param {string|null} hub the base URL of a Hub mirror (null: the Hub)
   * @returns {Promise<string>} the model's info, as JSON
   */
  async loadModel(id, device, onProgress, dtype = null, hub = null) {
    const claimed = dtype === null ? this.#claim(id, device, onProgress) : null;
    if (claimed) return claimed;
    if (this.preloads.size) await this.discardPreloads();
    const builtin = BUILTIN_MODELS.includes(id);
    // a site model has no business with the Hub (a Hub load may be running), but is as cancellable
    if (!builtin) env.remoteHost = hub ?? HUB;
    const load = beginLoad(builtin ? null : hub ?? HUB);
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
    useRuntimeFor(device);
    /** @type {Set<string>} the ONNX files (and their external data) transformers.js reads */
    const onnxFiles = new Set();
    const progress_callback = (/** @type {any} */ e) => {
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
    /** @type {Record<string, any>} */
    const options = { device, progress_callback };
    const chosen = dtype ?? (BUILTIN_MODELS.includes(id) ? "fp32" : null);
    if (chosen) options.dtype = chosen;
    const config = await AutoConfig.from_pretrained(id, { progress_callback });
    signal.throwIfAborted();
    await this.#reportPlan(id, config, options, onProgress, signal);
    signal.throwIfAborted();
    const expandedUrl = config.csi_gguf && BUILTIN_MODELS.includes(id) && chosen === "fp32"
      ? await expandGGUFBlocks(id, options, progress_callback)
      : null;
    try {
      const info = await this.#loadSessions(id, device, config, options, onProgress, signal, onnxFiles);
      const hash = MODEL_HASHES.get(id);
      if (hash) await this.#fileCachesUnder(id, Promise.resolve(hash), device, options.dtype ?? "default");
      return info;
    } finally {
      if (expandedUrl) EXPANDED_GRAPHS.delete(expandedUrl);
    }
  }

  /**
   * Let chat model `id` keep prompt caches beyond the page (prompt_cache.js), filed under its file's
   * identity, device and form. @param {string} id @param {Promise<string>} identity @param {string} device @param {string} form
   */
  async #fileCachesUnder(id, identity, device, form) {
    const model = this.store.models.get(id);
    if (model instanceof ChatModel) model.cacheKey = await modelCacheKey(await identity, device, form);
  }

  /**
   * @param {string} id @param {string} device @param {any} config @param {Record<string, any>} options
   * @param {(p: Progress) => void} onProgress @param {AbortSignal} signal @param {Set<string>} onnxFiles
   * @param {string} storeId the id the model is kept and reported under (a GGUF's is not transformers.js's)
   */
  async #loadSessions(id, device, config, options, onProgress, signal, onnxFiles, storeId = id) {
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
      const m = new ChatModel(storeId, tokenizer, model, config);
      if (device === "webgpu") m.gpuDevice = await env.backends.onnx.webgpu?.device;
      m.insides = new PromptInsides(m, [...onnxFiles], BUILTIN_MODELS.includes(id));
      this.store.models.set(storeId, m);
      const gen = model.generation_config ?? {};
      const eos = [gen.eos_token_id, config.eos_token_id, tokenizer.eos_token_id]
        .flat()
        .filter((x) => typeof x === "number");
      info = {
        kind: "chat",
        context_length: config.max_position_embeddings ?? config.n_positions ?? tokenizer.model_max_length ?? 2048,
        eos_token_ids: [...new Set(eos)],
        vocab_size: config.vocab_size ?? 0,
        generation_config: gen,
      };
    } else {
      const extractor = await pipeline("feature-extraction", id, options);
      if (superseded()) {
        await extractor.dispose?.();
        throw signal.reason ?? new Error(`a later load of ${id} replaced this one`);
      }
      this.store.models.set(id, new EmbeddingModel(id, extractor));
      info = {
        kind: "embedding",
        context_length: extractor.tokenizer.model_max_length ?? config.max_position_embeddings ?? 512,
        eos_token_ids: [],
        vocab_size: config.vocab_size ?? 0,
      };
    }
    onProgress({ stage: "ready", file: null, loaded: 1, total: 1, model: storeId });
    return JSON.stringify({ ...info, device });
  }

  /**
   * Report every file the load will read, with its size (stage `plan`), so the page's progress
   * is a fraction of all the bytes from the start. Best effort: without it, progress still comes.
   * @param {string} id @param {any} config @param {Record<string, any>} options
   * @param {(p: Progress) => void} onProgress @param {AbortSignal} signal
   */
  async #reportPlan(id, config, options, onProgress, signal) {
    try {
      /** @type {string[]} */
      const files = await ModelRegistry.get_files(id, { config, device: options.device, dtype: options.dtype,
                                                        include_processor: false });
      /** @type {Array<{exists: boolean, size?: number}>} */
      const sizes = await Promise.all(files.map((f) => ModelRegistry.get_file_metadata(id, f)));
      /** @type {Record<string, number>} */
      const planned = {};
      files.forEach((f, i) => {
        const size = sizes[i].size;
        if (sizes[i].exists && size) planned[f] = size;
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
    const m = this.store.models.get(id);
    this.store.models.delete(id);
    if (m instanceof ChatModel) {
      m.reset();
      m.sampler.dispose();
      await m.grammars?.dispose();
      await m.insides?.dispose();
      await m.model.dispose?.();
    } else if (m) {
      await m.extractor.dispose?.();
    }
  }
}

/** A short stable hash of a string (FNV-1a), for names. @param {string} s */
function hashOf(s) {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return (h >>> 0).toString(16).padStart(8, "0");
}
