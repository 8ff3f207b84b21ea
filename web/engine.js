// @ts-check
// The page client: a WebLLM-style engine whose work happens in csi-web's module worker.
//
//   const engine = await CreateWebWorkerEngine(new Worker("/worker/worker.js", {type: "module"}),
//                                              "smollm2-135m-instruct", {initProgressCallback, device: "wasm"});
//   const reply = await engine.chat.completions.create({messages, stream: false});
//
// The messages it exchanges with the worker are declared in ../worker/protocol.js; this module
// imports only their types from there, so it loads without the worker's code. Every call returns
// a promise that settles exactly once; arguments are checked and sent as JSON text (message.js).

import { ChatStates } from "./chat_state.js";
import { EngineError } from "./engine_error.js";
import { encodeMessage } from "./message.js";

/**
 * @typedef {import("../worker/protocol.js").MessageType} MessageType
 * @typedef {import("../worker/protocol.js").PageMessage} PageMessage
 * @typedef {import("../worker/protocol.js").WorkerReply} WorkerReply
 * @typedef {import("../worker/protocol.js").IndexProgress} IndexProgress
 * @typedef {import("../worker/protocol.js").IndexPutProgress} IndexPutProgress
 */

/**
 * @typedef {{stage: string, file: string|null, loaded: number, total: number, model: string|null,
 *            progress: number, bytesLoaded: number, bytesTotal: number, timeElapsed: number,
 *            text: string}} InitProgressReport
 *   WebLLM's report (`progress` from 0 to 1, never backwards; `timeElapsed` in seconds; `text`),
 *   with the event it follows: `stage`, `file` and that file's `loaded`/`total` bytes, and
 *   `bytesLoaded`/`bytesTotal` over all the files of the load.
 * @typedef {{initProgressCallback?: (r: InitProgressReport) => void,
 *            device?: "wasm"|"webgpu"|"auto", skillTimeLimitMs?: number, hubMirror?: string|null,
 *            appConfig?: AppConfig}} EngineConfig
 *   `hubMirror`: the base URL models that are not built in come from (default the Hugging Face Hub,
 *   `https://huggingface.co/`), laid out as the Hub: `<hubMirror><org>/<name>/resolve/main/<file>`.
 * @typedef {{model_list?: Array<{model_id: string, model?: string, [k: string]: unknown}>,
 *            useIndexedDBCache?: boolean, [k: string]: unknown}} AppConfig
 *   WebLLM's app config: only what csi-web can use of it is used (see `setAppConfig`).
 * @typedef {{id: string, type: "function", function: {name: string, arguments: string}}} ChatCompletionMessageToolCall
 * @typedef {{index: number, id?: string, type?: "function", function: {name?: string, arguments?: string}}} ToolCallDelta
 * @typedef {import("../worker/wire_types.js").ChatCompletionRequest} ChatCompletionRequest
 *   The request bodies are the worker's own models (worker/wire_types.d.ts, generated from Python).
 * @typedef {ChatCompletionRequest["messages"][number]} ChatCompletionMessageParam
 * @typedef {NonNullable<ChatCompletionRequest["tools"]>[number]} ChatCompletionTool
 * @typedef {NonNullable<ChatCompletionRequest["tool_choice"]>} ChatCompletionToolChoice
 * @typedef {NonNullable<ChatCompletionRequest["response_format"]>} ResponseFormat
 * @typedef {{prompt_tokens: number, completion_tokens: number, total_tokens: number,
 *            extra?: Record<string, number>}} CompletionUsage
 * @typedef {"stop"|"length"|"abort"|"tool_calls"} FinishReason
 * @typedef {{id: string, object: "chat.completion", created: number, model: string,
 *            choices: Array<{index: number, message: {role: "assistant", content: string|null,
 *                                                     tool_calls?: ChatCompletionMessageToolCall[]},
 *                            finish_reason: FinishReason, logprobs: null}>,
 *            usage?: CompletionUsage}} ChatCompletion
 * @typedef {{id: string, object: "chat.completion.chunk", created: number, model: string,
 *            choices: Array<{index: number, delta: {role?: "assistant", content?: string,
 *                                                   tool_calls?: ToolCallDelta[]},
 *                            finish_reason: FinishReason|null, logprobs: null}>,
 *            usage?: CompletionUsage|null}} ChatCompletionChunk
 * @typedef {import("../worker/protocol.js").Progress} Progress
 * @typedef {{timeoutMs?: number, progress?: (p: Progress) => void}} Deadline
 *   Every method takes these last: past `timeoutMs` the call rejects with a `TimeoutError` (its work
 *   in the worker is cancelled; the engine goes on); `progress` receives the call's progress
 *   events, among them `{stage: "queued", waiting_for, skill?}` when it has to wait: for a model
 *   another request is using (`waiting_for` is that request's id), or for a skill that keeps the
 *   worker's Python busy (`skill` names it).
 * @typedef {Deadline & {signal?: AbortSignal}} CallOptions
 * @typedef {keyof import("../worker/wire_types.js").Requests} RequestType message types with a `request`
 * @typedef {import("../worker/wire_types.js").EmbeddingRequest} EmbeddingCreateParams
 * @typedef {{object: "list", model: string, data: Array<{object: "embedding", index: number,
 *            embedding: number[]}>, usage: {prompt_tokens: number, total_tokens: number}}} CreateEmbeddingResponse
 */

export { EngineError };
export {
  deleteChatConfigInCache,
  deleteModelAllInfoInCache,
  deleteModelInCache,
  deleteModelWasmInCache,
  hasModelInCache,
  listCachedModels,
} from "./model_cache.js";

class Stream {
  /** @param {() => void} onAbandon */
  constructor(onAbandon) {
    /** @type {ChatCompletionChunk[]} */
    this.items = [];
    /** @type {((r: IteratorResult<ChatCompletionChunk>) => void)|null} */
    this.wake = null;
    this.done = false;
    /** @type {Error|null} */
    this.error = null;
    this.onAbandon = onAbandon;
  }
  /** @param {ChatCompletionChunk} chunk */
  push(chunk) {
    this.items.push(chunk);
    this.flush();
  }
  /** @param {Error|null} [error] */
  end(error = null) {
    this.done = true;
    this.error = error;
    this.flush();
  }
  flush() {
    if (!this.wake) return;
    const wake = this.wake;
    if (this.items.length) {
      this.wake = null;
      wake({ value: this.items.shift(), done: false });
    } else if (this.done) {
      this.wake = null;
      if (this.error) this.rejectNext(this.error);
      else wake({ value: undefined, done: true });
    }
  }
  [Symbol.asyncIterator]() {
    return {
      next: () =>
        new Promise((resolve, reject) => {
          this.wake = resolve;
          this.rejectNext = reject;
          this.flush();
        }),
      return: async () => {
        if (!this.done) this.onAbandon();
        this.done = true;
        this.items = [];
        return { value: undefined, done: true };
      },
    };
  }
}

/**
 * CSI results carry token bytes as `list<u8>`: on the page they are Uint8Arrays.
 * @param {any[]} results
 */
function bytesToArrays(results) {
  for (const r of results) {
    for (const d of r.logprobs ?? []) {
      d.sampled.token = Uint8Array.from(d.sampled.token);
      for (const t of d.top) t.token = Uint8Array.from(t.token);
    }
  }
  return results;
}

/**
 * Make every method of `api` (and of the objects under it) return a rejected promise instead of
 * throwing, whatever its arguments.
 * @param {Record<string, any>} api
 */
function settleOnly(api) {
  for (const [key, value] of Object.entries(api)) {
    if (typeof value === "function") {
      api[key] = (/** @type {any[]} */ ...args) => {
        try {
          return Promise.resolve(value(...args));
        } catch (err) {
          return Promise.reject(err instanceof EngineError || err?.name === "InvalidInputError" ? err
            : new EngineError({ name: "InvalidInputError", message: String(err?.message ?? err), param: "arguments" }));
        }
      };
    } else if (value && typeof value === "object") {
      settleOnly(value);
    }
  }
}

/** How long a skill may run (or its module take to load) before it is interrupted. */
export const SKILL_TIME_LIMIT_MS = 300_000;
/** The longest time limit a skill call takes (a day). */
const MAX_TIME_LIMIT_MS = 86_400_000;
/** A call not taken by the worker this long after a skill started is reported `queued` behind it. */
const QUEUED_AFTER_MS = 250;
/** Past a skill's time limit (or after interruptGenerate), the page trips Python's interrupt this often. */
const TRIP_EVERY_MS = 200;
/** interruptGenerate() trips Python's interrupt for at most this long. */
const TRIP_INTERRUPT_FOR_MS = 10_000;
/** A skill still running this long past its time limit is abandoned: its call rejects. */
const ABANDON_AFTER_MS = 3_000;

/**
 * `value` as a number of milliseconds, or a typed error naming `param`.
 * @param {unknown} value @param {string} param @param {number} max
 * @returns {number|undefined}
 */
function milliseconds(value, param, max = MAX_TIME_LIMIT_MS) {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !(value > 0 && value <= max)) {
    throw new EngineError({ name: "InvalidInputError", param,
      message: `\`${param}\` must be a number of milliseconds from 0 (excluded) to ${max}` });
  }
  return value;
}

/**
 * The `timeoutMs` and `progress` of a method's last argument (undefined when it has none).
 * @param {any} options @returns {Deadline}
 */
function deadline(options) {
  return options && typeof options === "object"
    ? { timeoutMs: options.timeoutMs, progress: typeof options.progress === "function" ? options.progress : undefined }
    : {};
}

/**
 * @typedef {{type: string, resolve: Function, reject: Function, chunk?: Function, progress?: Function,
 *            accepted: boolean, timers: ReturnType<typeof setTimeout>[], onFinal?: () => void}} PendingCall
 *   `onFinal`: called once the worker has answered the call (even after the page gave up on it) or is gone.
 */

export class WebWorkerEngine {
  /** @param {Worker} worker @param {EngineConfig} config */
  constructor(worker, config = {}) {
    this.worker = worker;
    this.config = config;
    this.nextId = 1;
    /** @type {Map<string, PendingCall>} */
    this.pending = new Map();
    /** @type {Map<string, () => void>} calls that timed out on the page, and what to do once the worker ends them */
    this.abandoned = new Map();
    /** @type {string[]} */
    this.modelIds = [];
    /** @type {string|null} why the worker is gone, once it is */
    this.crashed = null;
    /** @type {Uint8Array|null} Pyodide's interrupt flag, shared with the worker when the page is cross-origin isolated */
    this.interruptBuffer = null;
    /** @type {Int32Array|null} how many times interruptGenerate() was called, shared with the worker */
    this.pageInterrupts = null;
    if (globalThis.crossOriginIsolated && typeof SharedArrayBuffer === "function") {
      const shared = new SharedArrayBuffer(8);
      this.interruptBuffer = new Uint8Array(shared, 0, 1);
      this.pageInterrupts = new Int32Array(shared, 4, 1);
      worker.postMessage({ type: "interrupt_buffer", buffer: shared });
    }
    /** @type {Map<string, string>} skill calls (register, run) under way: id -> the skill's name */
    this.skillCalls = new Map();
    /** WebLLM's per-model memory: the last reply, runtime stats, chat options */
    this.chatStates = new ChatStates();
    /** @type {Map<string, number[]>} the tokens `forwardTokensAndSample` fed since its last prefill, per model */
    this.forwardFed = new Map();
    worker.addEventListener("message", (event) => this.receive(event.data));
    worker.addEventListener("error", (event) => {
      event.preventDefault?.();
      this.failAll(`the worker failed: ${event.message || "an uncaught error"}`);
    });
    worker.addEventListener("messageerror", () => this.failAll("a reply from the worker could not be read"));

    this.chat = {
      completions: {
        create: (/** @type {ChatCompletionRequest} */ request, /** @type {CallOptions} */ options = {}) =>
          this.createStreamable("chat", request, options),
      },
    };
    this.completions = {
      create: (/** @type {any} */ request, /** @type {CallOptions} */ options = {}) =>
        this.createStreamable("completion", request, options),
    };
    this.embeddings = {
      /** `{input, model}` (`EmbeddingCreateParams`) -> `CreateEmbeddingResponse` */
      create: this.requestCall("embeddings"),
    };
    /** The CSI (pharia:skill@0.3.0): batches in, results in request order. */
    this.csi = {
      complete: (requests, /** @type {Deadline} */ options = {}) =>
        this.requestCall("csi_complete")(requests, options).then(bytesToArrays),
      chat: (requests, /** @type {Deadline} */ options = {}) =>
        this.requestCall("csi_chat")(requests, options).then(bytesToArrays),
      /** `[{text, params: {model, max_tokens, overlap}}]` -> chunks (strings) per request */
      chunk: this.requestCall("csi_chunk"),
      /** like `chunk`, each chunk as `{text, byte_offset, character_offset}` (offsets in UTF-8 bytes and code points) */
      chunkWithOffsets: this.requestCall("csi_chunk_with_offsets"),
      /** `[{text, languages}]` -> an ISO 639-3 code or null per request */
      selectLanguage: this.requestCall("csi_select_language"),
      /**
       * `[{index_path: {namespace, collection, index}, query, max_results, min_score, filters}]` ->
       * per request `[{document_path, content, score, start: {item, position}, end: {item, position}}]`, best first
       */
      search: this.requestCall("csi_search"),
      /** `[{namespace, collection, name}]` -> `[{path, contents: [{text} | "image"], metadata}]` */
      documents: this.requestCall("csi_documents"),
      /** `[{namespace, collection, name}]` -> metadata (any JSON value) or null per path */
      documentMetadata: this.requestCall("csi_document_metadata"),
    };
    /** The document index's writes: collections of documents with named search indexes, kept in IndexedDB. */
    this.index = {
      /**
       * `{namespace, collection, index, model = "all-minilm-l6-v2", max_tokens = 128, overlap = 0, hybrid = false}`
       * -> the index's configuration and `created`; existing documents are indexed (progress as `put`)
       */
      createIndex: this.requestCall("index_create"),
      /**
       * `[{path: {namespace, collection, name}, contents: [{text} | "image"], metadata}]` -> `{documents, chunks}`.
       * Replaces documents with the same path. `progress({loaded, total, documents, chunks})` follows each commit.
       */
      put: this.requestCall("index_put"),
      /** `[{namespace, collection, name}]` -> whether each existed */
      delete: this.requestCall("index_delete"),
      /** `{namespace?, collection?}` -> `{collections: [{namespace, collection, indexes}], documents?: [{name, chunks}]}` */
      list: this.requestCall("index_list", {}),
      /** `{namespace, collection, index}` drops an index; `{namespace, collection}` the whole collection */
      drop: this.requestCall("index_drop"),
    };
    /** Skills: Python functions decorated with `@skill` (csi.sdk), kept in IndexedDB across reloads. */
    this.skills = {
      /** @param {{name: string, source: string}} skill -> `{name, description, input_schema, output_schema}` */
      register: (skill, /** @type {Deadline & {timeLimitMs?: number}} */ options = {}) =>
        this.skillCall("skills_register", { name: skill?.name, source: skill?.source }, options),
      /** -> `[{name, description, builtin, error}]` */
      list: (/** @type {Deadline} */ options = {}) => this.send("skills_list", {}, deadline(options)),
      /** @param {string} name -> `{description, input_schema, output_schema}` */
      metadata: (name, /** @type {Deadline} */ options = {}) => this.send("skills_metadata", { request: { name } }, deadline(options)),
      /**
       * @param {string} name @param {any} input a JSON value -> the skill's output (a JSON value)
       * @param {Deadline & {timeLimitMs?: number}} [options] past `timeLimitMs` of running (default
       *   `config.skillTimeLimitMs`, 5 minutes) the skill is interrupted and the call rejects with a `SkillError`
       */
      run: (name, input, options = {}) => this.skillCall("skills_run", { name, input }, options),
      /** @param {string} name */
      remove: (name, /** @type {Deadline} */ options = {}) => this.send("skills_remove", { request: { name } }, deadline(options)),
    };
    /** Spin's `llm` interface (with the stop / optional max-tokens / finish-reason proposal). */
    this.llm = {
      infer: (model, prompt, params = null, /** @type {Deadline} */ options = {}) =>
        this.send("llm_infer", { request: { model, prompt, params } }, deadline(options)),
      generateEmbeddings: (model, text, /** @type {Deadline} */ options = {}) =>
        this.send("llm_embeddings", { request: { model, text } }, deadline(options)),
    };
    /** The RemoteLLM service (proto3 JSON field names). */
    this.remote = {
      generate: this.requestCall("remote_generate"),
      getLlmType: this.requestCall("remote_llm_type", {}),
      /**
       * Each prompt token's embeddings and final hidden state, and the likeliest next tokens.
       * @param {{prompt: string, api_key?: string, fft_embeddings?: boolean, embedding_trunkation?: number,
       *   top_k_logits?: number, model?: string}} request
       */
      generationalGuts: this.requestCall("remote_guts"),
    };
    for (const api of [this.chat, this.completions, this.embeddings, this.csi, this.index, this.skills, this.llm,
      this.remote]) {
      settleOnly(api);
    }
    // WebLLM's MLCEngineInterface, on top of the same calls
    /** @param {ChatCompletionRequest} request */
    this.chatCompletion = (request) => this.chat.completions.create(request);
    /** @param {any} request */
    this.completion = (request) => this.completions.create(request);
    /** @param {EmbeddingCreateParams} request */
    this.embedding = (request) => this.embeddings.create(request);
  }

  /**
   * A method that sends its first argument as the message's `request` (`fallback` when it is left
   * out), with the call's {@link Deadline} last.
   * @param {RequestType} type @param {any} [fallback]
   */
  requestCall(type, fallback) {
    return (/** @type {any} */ request = fallback, /** @type {Deadline} */ options = {}) =>
      this.send(type, { request }, deadline(options));
  }

  /** WebLLM's: the last chat reply's text (choice 0), of `model` or of the last model used. @param {string} [model] */
  async getMessage(model) {
    return this.chatStates.find(model)?.message ?? "";
  }

  /** WebLLM's: prefill and decoding tokens per second since the last `resetChat()`. @param {string} [model] */
  async runtimeStatsText(model) {
    return this.chatStates.statsText(model);
  }

  /**
   * WebLLM's low-level step: run `inputIds` through the model (after the tokens of the calls since
   * the last prefill, unless `isPrefill`) and sample the next token with the model's chat options
   * (`reload`'s `chatOpts`). The sampled token is not fed back: pass it in the next call, as
   * WebLLM's examples do. The KV cache keeps the tokens fed so far (on WASM), so each call runs
   * only its own tokens.
   * @param {number[]} inputIds @param {boolean} isPrefill @param {string} [modelId]
   * @returns {Promise<number>}
   */
  async forwardTokensAndSample(inputIds, isPrefill, modelId) {
    if (!Array.isArray(inputIds) || !inputIds.length || !inputIds.every((t) => Number.isSafeInteger(t) && t >= 0)) {
      throw new EngineError({ name: "InvalidInputError", param: "inputIds",
        message: "`inputIds` must be a non-empty array of token ids (integers from 0)" });
    }
    const key = modelId ?? "";
    const tokens = [...(isPrefill ? [] : this.forwardFed.get(key) ?? []), ...inputIds];
    /** @type {any} */
    const r = await this.completions.create({
      ...(modelId === undefined ? {} : { model: modelId }),
      prompt: tokens, max_tokens: 1, ignore_eos: true, return_token_ids: true,
    });
    this.forwardFed.set(key, tokens);
    return r.choices[0].token_ids[0];
  }

  /**
   * Logit processors are JS objects with methods: they cannot cross to the worker. Register them
   * in your worker script instead (`setLogitProcessorRegistry` of /worker/worker.js, or WebLLM's
   * `WebWorkerMLCEngineHandler` from there), as WebLLM's web-worker engines do.
   * @param {unknown} registry
   */
  setLogitProcessorRegistry(registry) {
    throw new EngineError({ name: "NotSupportedError", param: "registry",
      message: "logit processors run in the worker: register them in your worker script with " +
        "setLogitProcessorRegistry from /worker/worker.js (or WebLLM's WebWorkerMLCEngineHandler)" });
  }

  /**
   * WebLLM's app config. csi-web loads a model by its built-in name or its Hub repo id, from the
   * Hub or `hubMirror`, so WebLLM's `model_list` (MLC-compiled weights and WebGPU libraries) has
   * nothing to point at: the config is kept (`getAppConfig`) and has no other effect.
   * @param {AppConfig} appConfig
   */
  setAppConfig(appConfig) {
    if (appConfig === null || typeof appConfig !== "object" || Array.isArray(appConfig)) {
      throw new EngineError({ name: "InvalidInputError", message: "an app config is an object", param: "appConfig" });
    }
    this.config.appConfig = appConfig;
  }

  getAppConfig() {
    return this.config.appConfig;
  }

  /** @param {((r: InitProgressReport) => void)|undefined} callback */
  setInitProgressCallback(callback) {
    this.config.initProgressCallback = callback;
  }

  getInitProgressCallback() {
    return this.config.initProgressCallback;
  }

  /** WebLLM's: the WebGPU adapter's vendor; rejects when the browser has no WebGPU. */
  async getGPUVendor() {
    return (await gpuAdapter()).info?.vendor ?? "";
  }

  /** WebLLM's: the WebGPU adapter's largest storage buffer binding, in bytes. */
  async getMaxStorageBufferBindingSize() {
    return (await gpuAdapter()).limits.maxStorageBufferBindingSize;
  }

  /** Calls sent and not yet settled (0 once every call has settled). */
  get pendingCount() {
    return this.pending.size;
  }

  /**
   * Reject every pending call with a `WorkerCrashedError`: the worker is gone (create a new engine).
   * @param {string} message
   */
  failAll(message) {
    const pending = [...this.pending.values()];
    this.pending.clear();
    this.crashed ??= message;
    for (const p of pending) {
      for (const t of p.timers) clearTimeout(t);
      p.onFinal?.();
      p.reject(new EngineError({ name: "WorkerCrashedError", message: this.crashed }));
    }
    for (const onFinal of this.abandoned.values()) onFinal();
    this.abandoned.clear();
  }

  /**
   * End call `id` (if still pending) and stop its timers; `how` resolves or rejects it.
   * @param {string} id @param {(p: PendingCall) => void} how
   */
  settle(id, how) {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    for (const t of p.timers) clearTimeout(t);
    how(p);
  }

  /** The worker ended call `id`, which the page had given up on. @param {string} id */
  ended(id) {
    const onFinal = this.abandoned.get(id);
    this.abandoned.delete(id);
    onFinal?.();
  }

  /** Stop the worker now; pending calls reject with `WorkerCrashedError`. */
  terminate() {
    this.worker.terminate();
    this.failAll("the worker was terminated");
  }

  /** @param {string|object} data a {@link WorkerReply}, or its JSON text */
  receive(data) {
    /** @type {WorkerReply} */
    let msg;
    try {
      msg = typeof data === "string" ? JSON.parse(data) : data;
    } catch {
      return; // not ours: every reply of the worker is JSON text
    }
    if (msg?.type === "fatal") { // the worker is gone: a skill closed it, or its Python failed fatally
      this.failAll(String(msg.error?.message ?? "the worker ended"));
      this.worker.terminate();
      return;
    }
    const id = msg?.id;
    const p = this.pending.get(id);
    if (!p) {
      if (msg?.type === "result" || msg?.type === "error") this.ended(id);
      return;
    }
    if (msg.type === "accepted") p.accepted = true;
    else if (msg.type === "progress") {
      const progress = msg.progress;
      const skill = progress?.stage === "queued" && this.skillCalls.get(String(progress.waiting_for));
      this.report(p, skill ? { ...progress, skill } : progress);
    }
    else if (msg.type === "chunk") p.chunk?.(msg.chunk);
    else if (msg.type === "error") this.settle(id, (q) => {
      q.onFinal?.();
      q.reject(new EngineError(msg.error));
    });
    else this.settle(id, (q) => {
      q.onFinal?.();
      q.resolve(msg.result);
    });
  }

  /** @param {PendingCall} p @param {any} progress */
  report(p, progress) {
    try {
      p.progress?.(progress);
    } catch (err) {
      console.error("a progress callback threw:", err); // the call goes on
    }
  }

  /**
   * @template {MessageType} K
   * @param {K} type @param {import("../worker/protocol.js").MessageBody<K>} [body]
   * @param {Deadline & {chunk?: Function, id?: string, onFinal?: () => void}} [handlers]
   * @returns {Promise<any>}
   */
  send(type, body = /** @type {import("../worker/protocol.js").MessageBody<K>} */ ({}), handlers = {}) {
    const id = handlers.id ?? `r${this.nextId++}`;
    return new Promise((resolve, reject) => {
      if (this.crashed) throw new EngineError({ name: "WorkerCrashedError", message: this.crashed });
      const timeoutMs = milliseconds(handlers.timeoutMs, "timeoutMs");
      const text = encodeMessage({ id, type, ...body }); // id first: the worker finds it even in a bad message
      const fn = (/** @type {any} */ f) => (typeof f === "function" ? f : undefined);
      /** @type {PendingCall} */
      const call = { type, resolve, reject, chunk: fn(handlers.chunk), progress: fn(handlers.progress),
        accepted: false, timers: [], onFinal: handlers.onFinal };
      this.pending.set(id, call);
      try {
        this.worker.postMessage(text);
      } catch (err) {
        this.pending.delete(id);
        throw new EngineError({ name: "WorkerCrashedError", message: `could not reach the worker: ${err?.message ?? err}` });
      }
      if (timeoutMs !== undefined) call.timers.push(setTimeout(() => this.expire(id, timeoutMs), timeoutMs));
      const busy = [...this.skillCalls].find(([other]) => other !== id);
      if (busy) call.timers.push(setTimeout(() => this.reportQueued(id), QUEUED_AFTER_MS));
    });
  }

  /**
   * Call `id` is past its `timeoutMs`: it rejects with a `TimeoutError`, its work is cancelled.
   * @param {string} id @param {number} ms
   */
  expire(id, ms) {
    const call = this.pending.get(id);
    if (call?.onFinal) this.abandoned.set(id, call.onFinal);
    this.settle(id, (p) => p.reject(new EngineError({ name: "TimeoutError", param: "timeoutMs",
      message: `the ${p.type} call had no answer within ${ms} ms; it was cancelled` })));
    // a load is cancelled by unloading (it would replace every model anyway)
    if (call) this.post(call.type === "load" ? { id: `${id}-unload`, type: "unload" }
      : { id: `${id}-cancel`, type: "cancel", request: { target: id } });
  }

  /**
   * The worker has not taken call `id` yet while a skill runs: its Python is busy with that skill.
   * @param {string} id
   */
  reportQueued(id) {
    const p = this.pending.get(id);
    const busy = [...this.skillCalls].find(([other]) => other !== id);
    if (!p || p.accepted || !busy) return;
    this.report(p, { stage: "queued", file: null, loaded: 0, total: 1, model: null, waiting_for: busy[0], skill: busy[1] });
  }

  /** Post a message that gets no reply of its own (cancel, interrupt). @param {PageMessage} msg */
  post(msg) {
    try {
      this.worker.postMessage(encodeMessage(msg));
    } catch {
      // the worker is gone: its calls have already been rejected
    }
  }

  /**
   * `stream: false` resolves to the whole result; `stream: true` to an AsyncIterable of chunks
   * (it resolves when the first chunk arrives, so a bad request rejects here). `options.signal`
   * (an AbortSignal) ends the generation as `interruptGenerate` does, for this request only:
   * what was generated comes back with `finish_reason: "abort"`.
   * @param {"chat"|"completion"} type
   * @param {ChatCompletionRequest} request
   * @param {CallOptions} [options]
   * @returns {Promise<ChatCompletion|AsyncIterable<ChatCompletionChunk>>}
   */
  createStreamable(type, request, options = {}) {
    request = this.chatStates.withDefaults(request);
    const id = `r${this.nextId++}`;
    const cancel = () => this.post({ id: `${id}-cancel`, type: "cancel", request: { target: id } });
    const signal = options?.signal;
    let release = () => {};
    if (signal && typeof signal.addEventListener === "function") {
      if (signal.aborted) queueMicrotask(cancel); // after the request is sent
      else {
        signal.addEventListener("abort", cancel, { once: true });
        release = () => signal.removeEventListener("abort", cancel);
      }
    }
    if (!request || !request.stream) {
      return this.send(type, { request }, { id, ...deadline(options) }).finally(release).then((r) => {
        this.chatStates.finish(r.model, r.choices?.[0]?.message?.content ?? r.choices?.[0]?.text ?? "", r.usage);
        return r;
      });
    }
    const follow = this.chatStates.follow();
    const stream = new Stream(cancel);
    return new Promise((resolve, reject) => {
      let started = false;
      const start = () => {
        if (!started) {
          started = true;
          resolve(stream);
        }
      };
      this.send(type, { request }, {
        id,
        ...deadline(options),
        chunk: (c) => {
          follow.chunk(c);
          stream.push(c);
          start();
        },
      }).finally(release).then(
        () => {
          follow.end();
          stream.end();
          start();
        },
        (err) => {
          if (started) stream.end(err);
          else reject(err);
        },
      );
    });
  }

  /**
   * A skill call with a time limit: past it, Python is interrupted (KeyboardInterrupt in the skill),
   * which needs the page to be cross-origin isolated; elsewhere the limit cannot stop a skill.
   * @param {"skills_register"|"skills_run"} type @param {any} body @param {{timeLimitMs?: number}} options
   */
  skillCall(type, body, options) {
    const id = `r${this.nextId++}`;
    const limit = /** @type {number} */ (milliseconds(options?.timeLimitMs ?? this.config.skillTimeLimitMs ??
      SKILL_TIME_LIMIT_MS, "timeLimitMs"));
    const { timeoutMs, progress } = deadline(options);
    // the worker counts the limit from the skill's start; a timeout (from now) shortens it
    const time_limit_ms = Math.min(limit, milliseconds(timeoutMs, "timeoutMs") ?? limit);
    const name = typeof body?.name === "string" ? body.name : "";
    /** @type {ReturnType<typeof setTimeout>|undefined} */
    let timer;
    const started = performance.now();
    const trip = () => {
      const over = performance.now() - started - time_limit_ms;
      if (over > ABANDON_AFTER_MS && this.pending.has(id)) {
        // it waits on something that never ends, or catches its interruption: the call ends here
        this.abandoned.set(id, done);
        this.settle(id, (p) => p.reject(new EngineError({ name: "SkillError", message: `skill ${name} ran past ` +
          `its time limit of ${time_limit_ms / 1000} s and did not stop within ${ABANDON_AFTER_MS / 1000} s: ` +
          "it was abandoned (the worker may still be busy with it)" })));
      }
      if (over > 20 * ABANDON_AFTER_MS) return; // it ignores every interrupt: stop asking
      this.interruptPython();
      timer = setTimeout(trip, TRIP_EVERY_MS);
    };
    const done = () => {
      clearTimeout(timer);
      this.skillCalls.delete(id);
      if (!this.skillCalls.size && this.interruptBuffer) Atomics.store(this.interruptBuffer, 0, 0);
    };
    // `done` once the worker is done with it: Python's interrupt is tripped until then, even when
    // the page has stopped waiting (timeoutMs)
    const call = this.send(type, { request: { ...body, time_limit_ms } }, { id, timeoutMs, progress, onFinal: done });
    this.skillCalls.set(id, name);
    // a skill that keeps Python busy is stopped by Python's interrupt, which Python's handler aims
    // at the skill that is due (csi.skills.interrupts); it is tripped until the call settles
    timer = setTimeout(trip, time_limit_ms);
    if (!this.pending.has(id)) done(); // refused before it was sent
    return call;
  }

  /** Trip Python's interrupt (when isolated): the skill whose code runs stops there if it is due. */
  interruptPython() {
    if (this.interruptBuffer) Atomics.store(this.interruptBuffer, 0, 2); // SIGINT
  }

  /** End the running generation at its next token (finish_reason "abort"), and the skills that are running. */
  interruptGenerate() {
    this.post({ id: `i${this.nextId++}`, type: "interrupt" });
    if (!this.skillCalls.size || !this.pageInterrupts) return;
    Atomics.add(this.pageInterrupts, 0, 1); // for the skills running now, even before the worker reads the message
    const targets = [...this.skillCalls.keys()];
    const until = performance.now() + TRIP_INTERRUPT_FOR_MS;
    const trip = () => {
      if (!targets.some((t) => this.skillCalls.has(t)) || performance.now() > until) return;
      this.interruptPython();
      setTimeout(trip, TRIP_EVERY_MS);
    };
    trip();
  }

  /**
   * Forget the conversation state kept for the loaded chat models (and, unless `keepStats`, the
   * runtime stats) — WebLLM's `resetChat(keepStats?, model?)`.
   * @param {boolean} [keepStats] @param {string} [model] @param {Deadline} [options]
   */
  resetChat(keepStats = false, model, options = {}) {
    this.chatStates.reset(!!keepStats, model);
    this.forwardFed.clear();
    return this.send("reset_chat", {}, deadline(options));
  }

  /**
   * Load these models, unloading the others. `chatOpts` (WebLLM's; one object, or one per model):
   * `temperature`, `top_p`, `frequency_penalty`, `presence_penalty` and `repetition_penalty` become
   * the defaults of requests that leave them out; the KV cache sizes have no effect. Past
   * `options.timeoutMs` the load is abandoned (nothing stays loaded) and it rejects with a `TimeoutError`.
   * @param {string|string[]} modelIds @param {object|object[]} [chatOpts] @param {Deadline} [options]
   */
  async reload(modelIds, chatOpts, options = {}) {
    const ids = Array.isArray(modelIds) ? modelIds : [modelIds];
    this.forwardFed.clear();
    const refused = this.chatStates.setOptions(ids, chatOpts);
    if (refused) throw new EngineError({ name: "InvalidInputError", ...refused });
    const started = performance.now();
    /** @type {Map<string, Map<string, {loaded: number, total: number}>>} bytes per file, per model */
    const models = new Map();
    /** @type {Set<string>} models whose plan (every file and its size) came: only they count */
    const planned = new Set();
    let shown = 0;
    /** @param {import("../worker/protocol.js").Progress} p */
    const report = (p) => {
      const model = String(p.model);
      const files = models.get(model) ?? new Map();
      models.set(model, files);
      if (p.stage === "plan" && p.files && typeof p.files === "object") {
        planned.add(model);
        for (const [file, size] of Object.entries(p.files)) {
          if (!files.has(file)) files.set(file, { loaded: 0, total: Number(size) || 0 });
        }
      } else if (p.file && p.stage === "progress") {
        files.set(p.file, { loaded: p.loaded || 0, total: p.total || 0 });
      }
      let bytesLoaded = 0;
      let bytesTotal = 0;
      for (const m of planned) {
        for (const f of /** @type {Map<string, {loaded: number, total: number}>} */ (models.get(m)).values()) {
          bytesLoaded += f.loaded;
          bytesTotal += f.total;
        }
      }
      const done = p.stage === "ready" && p.model === ids.at(-1);
      // never backwards: a file no plan announced adds to the total as it starts
      shown = done ? 1 : Math.max(shown, bytesTotal ? Math.min(0.99, bytesLoaded / bytesTotal) : 0);
      const mb = (/** @type {number} */ n) => (n / 1e6).toFixed(1);
      this.config.initProgressCallback?.({
        ...p,
        progress: shown,
        bytesLoaded,
        bytesTotal,
        timeElapsed: (performance.now() - started) / 1000,
        text: `${p.stage}${p.file ? ` ${p.file}` : ""}${p.model ? ` (${p.model})` : ""}` +
          (bytesTotal ? `: ${mb(bytesLoaded)} of ${mb(bytesTotal)} MB` : ""),
      });
    };
    const load = { model_ids: ids, device: this.config.device ?? "wasm", hub: this.config.hubMirror ?? null };
    const { timeoutMs, progress } = deadline(options);
    const result = await this.send("load", { request: load }, { timeoutMs, progress: (p) => {
      report(p);
      progress?.(p);
    } });
    this.modelIds = ids;
    return result;
  }

  /** @param {Deadline} [options] */
  unload(options = {}) {
    this.modelIds = [];
    this.forwardFed.clear();
    return this.send("unload", {}, deadline(options));
  }
}

/**
 * Create an engine in `worker` and load `modelIds` into it.
 * @param {Worker} worker a module worker running /worker/worker.js
 * @param {string|string[]} modelIds built-in ids ("smollm2-135m-instruct", "tiny-chat", "all-minilm-l6-v2"), ids
 *   imported from a GGUF, or Hugging Face repo ids
 * @param {EngineConfig} [config]
 * @param {object|object[]} [chatOpts] WebLLM's chat options (see `reload`)
 * @returns {Promise<WebWorkerEngine>}
 */
export async function CreateWebWorkerEngine(worker, modelIds, config = {}, chatOpts = undefined) {
  const engine = new WebWorkerEngine(worker, config);
  await engine.reload(modelIds, chatOpts);
  return engine;
}

/** WebLLM's name for {@link CreateWebWorkerEngine}. */
export const CreateWebWorkerMLCEngine = CreateWebWorkerEngine;

/** The worker module this file's site serves. */
const WORKER_URL = new URL("../worker/worker.js", import.meta.url);

/**
 * WebLLM's `MLCEngine`: `new MLCEngine(config)`, then `reload(modelIds)`; the same engine as
 * {@link WebWorkerEngine}, with its module worker created for you.
 */
export class MLCEngine extends WebWorkerEngine {
  /** @param {EngineConfig} [config] */
  constructor(config = {}) {
    super(new Worker(WORKER_URL, { type: "module" }), config);
  }
}

/** WebLLM's `prebuiltAppConfig`: the models built into this site. */
export const prebuiltAppConfig = Object.freeze({
  model_list: ["smollm2-135m-instruct", "tiny-chat", "tiny-gpt2", "all-minilm-l6-v2"].map((id) => ({ model_id: id, model: `/models/${id}/` })),
  useIndexedDBCache: false,
});

/**
 * WebLLM's `CreateMLCEngine`: the same engine, with its module worker created for you.
 * @param {string|string[]} modelIds @param {EngineConfig} [config] @param {object|object[]} [chatOpts]
 */
export async function CreateMLCEngine(modelIds, config = {}, chatOpts = undefined) {
  const engine = new MLCEngine(config);
  await engine.reload(modelIds, chatOpts);
  return engine;
}

/**
 * WebLLM's `CreateServiceWorkerMLCEngine`: an engine every tab of the site can use. WebLLM runs the
 * model in the service worker; csi-web runs it in this page's worker (Pyodide and WebGPU need a
 * worker a service worker cannot keep) and serves it to the other tabs through the site's service
 * worker at /v1/ (see v1_host.js), so no tab loads the model twice. `keepAliveMs` has no effect.
 * @param {string|string[]} modelIds @param {EngineConfig} [config] @param {object|object[]} [chatOpts]
 * @param {number} [keepAliveMs]
 */
export async function CreateServiceWorkerMLCEngine(modelIds, config = {}, chatOpts = undefined, keepAliveMs = 10_000) {
  const engine = await CreateMLCEngine(modelIds, config, chatOpts);
  try {
    const { serveV1 } = await import("./v1_host.js");
    await serveV1(engine);
  } catch (err) {
    engine.terminate();
    throw new EngineError({ name: "ServiceWorkerError", message: `the site's service worker could not serve the engine: ${err?.message ?? err}` });
  }
  return engine;
}

/** The browser's WebGPU adapter, or a typed error when there is none. */
async function gpuAdapter() {
  /** @type {any} */
  const gpu = /** @type {any} */ (globalThis.navigator)?.gpu;
  const adapter = gpu ? await gpu.requestAdapter() : null;
  if (!adapter) {
    throw new EngineError({ name: "WebGPUNotAvailableError", message: "this browser offers no WebGPU adapter" });
  }
  return adapter;
}
