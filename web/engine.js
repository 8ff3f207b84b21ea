// @ts-check
// The page client: a WebLLM-style engine whose work happens in csi-web's module worker.
//
//   const engine = await CreateWebWorkerEngine(new Worker("/worker/worker.js", {type: "module"}),
//                                              "smollm2-135m-instruct", {initProgressCallback, device: "wasm"});
//   const reply = await engine.chat.completions.create({messages, stream: false});
//
// This file composes the parts under client/: the worker client (the wire, settle-once, fail-all),
// one module per API namespace, and the load-progress arithmetic; here are WebLLM's methods and
// factories. The messages are declared in ../worker/protocol.js; the page imports only their
// types from there, so it loads without the worker's code. Every call returns a promise that
// settles exactly once; arguments are checked and sent as JSON text (message.js).

import { ChatStates } from "./chat_state.js";
import { EngineError } from "./engine_error.js";
import { remotesWire } from "./client/servers.js";
import { deadline, settleOnly } from "./client/calls.js";
import { csiApi } from "./client/csi_api.js";
import { indexApi } from "./client/index_api.js";
import { measureJsHeap } from "./client/js_heap.js";
import { LoadProgress } from "./client/load_progress.js";
import { openaiApi } from "./client/openai_api.js";
import { promptCacheApi } from "./client/prompt_cache_api.js";
import { remoteApi } from "./client/remote_api.js";
import { responsesApi } from "./client/responses_api.js";
import { interruptSkills, PythonInterrupts, skillsApi } from "./client/skills_api.js";
import { spinApi } from "./client/spin_api.js";
import { toolsApi } from "./client/tools_api.js";
import { WorkerClient } from "./client/worker_client.js";
import { workerUrl } from "./runtime_base.js";
import { trustedScriptURL } from "./trusted_types.js";

/**
 * @typedef {import("../worker/protocol.js").MessageType} MessageType
 * @typedef {import("../worker/protocol.js").PageMessage} PageMessage
 * @typedef {import("../worker/protocol.js").WorkerReply} WorkerReply
 * @typedef {import("../worker/protocol.js").IndexProgress} IndexProgress
 * @typedef {import("../worker/protocol.js").IndexPutProgress} IndexPutProgress
 * @typedef {import("../worker/protocol.js").Progress} Progress
 * @typedef {import("../worker/protocol.js").MemoryStats} MemoryStats
 * @typedef {import("../worker/protocol.js").LoadResult} LoadResult
 * @typedef {import("./client/index_api.js").Committed} Committed
 * @typedef {import("./client/js_heap.js").JsHeap} JsHeap
 * @typedef {import("./client/load_progress.js").InitProgressReport} InitProgressReport
 * @typedef {import("./client/calls.js").Deadline} Deadline
 * @typedef {import("./client/calls.js").CallOptions} CallOptions
 * @typedef {import("./client/calls.js").RequestType} RequestType
 * @typedef {import("./client/openai_types.js").ChatCompletionMessageToolCall} ChatCompletionMessageToolCall
 * @typedef {import("./client/openai_types.js").ToolCallDelta} ToolCallDelta
 * @typedef {import("./client/openai_types.js").ChatCompletionMessageParam} ChatCompletionMessageParam
 * @typedef {import("./client/openai_types.js").ChatCompletionTool} ChatCompletionTool
 * @typedef {import("./client/openai_types.js").ChatCompletionToolChoice} ChatCompletionToolChoice
 * @typedef {import("./client/openai_types.js").ResponseFormat} ResponseFormat
 * @typedef {import("./client/openai_types.js").ChatCompletionRequest} ChatCompletionRequest
 * @typedef {import("./client/openai_types.js").ChatCompletionRequestStreaming} ChatCompletionRequestStreaming
 * @typedef {import("./client/openai_types.js").ChatCompletionRequestNonStreaming} ChatCompletionRequestNonStreaming
 * @typedef {import("./client/openai_types.js").CompletionUsage} CompletionUsage
 * @typedef {import("./client/openai_types.js").FinishReason} FinishReason
 * @typedef {import("./client/openai_types.js").ChatCompletion} ChatCompletion
 * @typedef {import("./client/openai_types.js").ChatCompletionChunk} ChatCompletionChunk
 * @typedef {import("./client/openai_types.js").EmbeddingCreateParams} EmbeddingCreateParams
 * @typedef {import("./client/openai_types.js").CreateEmbeddingResponse} CreateEmbeddingResponse
 */

/**
 * @typedef {{initProgressCallback?: (r: InitProgressReport) => void,
 *            device?: "wasm"|"webgpu"|"auto", skillTimeLimitMs?: number, hubMirror?: string|null,
 *            appConfig?: AppConfig, modelAliases?: Record<string, string>, remotes?: RemoteServer[],
 *            runtimeUrl?: string|URL, modelsUrl?: string|URL, ggufMemoryBudget?: number}} EngineConfig
 *   `modelAliases`: other names for loaded models, e.g. `{"llama-3.1-8b-instruct": "smollm2-135m-instruct"}`,
 *   so skills written for Pharia Kernel's models run unchanged (every API face accepts them).
 *   `hubMirror`: the base URL models that are not built in come from (default the Hugging Face Hub,
 *   `https://huggingface.co/`), laid out as the Hub: `<hubMirror><org>/<name>/resolve/main/<file>`.
 *   `remotes`: OpenAI-compatible servers (llama.cpp, vLLM, ...) and the models they serve, e.g.
 *   `[{baseURL: "http://127.0.0.1:8080/v1", apiKey: "...", models: ["qwen2.5-7b-instruct"]}]`; see `setRemotes`.
 *   `runtimeUrl` (`CreateMLCEngine`, `MLCEngine`): the folder of csi-web's worker/, vendor/, wheels/
 *   (default: this package's, or where csi-web/vite copied them). `modelsUrl`: the same-origin folder
 *   with models.json (default: models/ next to the page, then the runtime's; then the Hub). `ggufMemoryBudget`: bytes a GGUF's float32 weights may take (default 1.5e9 on WASM, 7.5e8 on WebGPU); past it, int8 (WASM) or 8-bit blocks (WebGPU).
 * @typedef {import("./client/servers.js").RemoteServer} RemoteServer
 * @typedef {{model_list?: Array<{model_id: string, model?: string, [k: string]: unknown}>,
 *            useIndexedDBCache?: boolean, [k: string]: unknown}} AppConfig
 *   WebLLM's app config: only what csi-web can use of it is used (see `setAppConfig`).
 */

export { EngineError, workerUrl };
export { ggufFileModelId } from "./gguf_file.js";
export { SKILL_TIME_LIMIT_MS } from "./client/skills_api.js";
export { trustedScriptURL, withSanitizerPolicy } from "./trusted_types.js";
export { deleteChatConfigInCache, deleteModelAllInfoInCache, deleteModelInCache } from "./model_cache.js";
export { deleteModelWasmInCache, hasModelInCache, listCachedModels } from "./model_cache.js";

/** An engine: OpenAI's, the CSI's, Spin's and RemoteLLM's APIs, and WebLLM's methods, over one worker. */
export class WebWorkerEngine {
  /** @param {Worker} worker @param {EngineConfig} config */
  constructor(worker, config = {}) {
    this.worker = worker;
    this.config = config;
    this.client = new WorkerClient(worker);
    /** @type {string[]} */
    this.modelIds = [];
    this.interrupts = new PythonInterrupts(worker);
    /** WebLLM's per-model memory: the last reply, runtime stats, chat options */
    this.chatStates = new ChatStates();
    /** @type {Map<string, number[]>} the tokens `forwardTokensAndSample` fed since its last prefill, per model */
    this.forwardFed = new Map();

    const { chat, completions, embeddings } = openaiApi(this.client, this.chatStates);
    this.chat = chat;
    this.completions = completions;
    this.embeddings = embeddings;
    /** OpenAI's Responses API: `create` (streamed events or whole), stored responses (IndexedDB). */
    this.responses = responsesApi(this.client);
    /** The CSI (pharia:skill@0.3.0): batches in, results in request order. */
    this.csi = csiApi(this.client);
    /** The document index's writes: collections of documents with named search indexes, kept in IndexedDB. */
    this.index = indexApi(this.client);
    /** Skills: Python functions decorated with pharia-skill's `@skill` / `@message_stream`, kept in IndexedDB. */
    this.skills = skillsApi(this.client, this.interrupts, () => this.config.skillTimeLimitMs);
    /** Tools the page provides (JS functions), which skills call: `csi.list_tools()`, `csi.invoke_tool(...)`. */
    this.tools = toolsApi(this.client);
    this.cache = promptCacheApi(this.client); // prompt caches kept beyond the page: list, delete, budget
    /** Spin's `llm` interface (with the stop / optional max-tokens / finish-reason proposal). */
    this.llm = spinApi(this.client);
    /** The RemoteLLM service (proto3 JSON field names). */
    this.remote = remoteApi(this.client);
    const apis = [this.chat, this.completions, this.embeddings, this.responses, this.csi, this.index, this.skills];
    for (const api of [...apis, this.tools, this.llm, this.remote, this.cache]) settleOnly(api);
    // WebLLM's MLCEngineInterface, on top of the same calls
    /** @param {ChatCompletionRequest} request */
    this.chatCompletion = (request) => this.chat.completions.create(request);
    /** @param {import("./client/openai_types.js").CompletionCreateParams} request */
    this.completion = (request) => this.completions.create(request);
    /** @param {EmbeddingCreateParams} request */
    this.embedding = (request) => this.embeddings.create(request);
  }

  /**
   * Send a message of type `type` (see ../worker/protocol.js) and resolve to its result.
   * @template {MessageType} K
   * @param {K} type @param {import("../worker/protocol.js").MessageBody<K>} [body]
   * @param {import("./client/worker_client.js").Handlers} [handlers]
   * @returns {Promise<import("../worker/protocol.js").ResultOf<K>>}
   */
  send(type, body, handlers) {
    return this.client.send(type, body, handlers);
  }

  /**
   * A conversation's token ids as the model's chat template renders them (generation prompt
   * added, then the tokens of `prefix`, the start of the reply), and their `count`; nothing is
   * generated. `token_ids` is null when they do not fit the model's `context_window`.
   * @param {import("../worker/wire_types.js").ChatTokensRequest} request @param {Deadline} [options]
   * @returns {Promise<import("../worker/wire_types.js").ChatTokens>}
   */
  chatTokens(request, options = {}) {
    return this.client.send("chat_tokens", { request }, deadline(options));
  }

  /** Calls sent and not yet settled (0 once every call has settled). */
  get pendingCount() {
    return this.client.pendingCount;
  }

  /** Stop the worker now; pending calls reject with `WorkerCrashedError`. */
  terminate() {
    this.client.terminate();
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

  /**
   * What the engine holds in memory: the worker's WebAssembly memories (Pyodide's, onnxruntime-web's,
   * others'), the bytes of its live GPU buffers (WebGPU), the models loaded and the objects Python's
   * collector tracks; with `{jsHeap: true}` also the JS heap of this page and its workers (`js_heap`,
   * null where the browser cannot measure it; slow unless it measures eagerly, see client/js_heap.js).
   * @param {{jsHeap?: boolean} & Deadline} [options]
   * @returns {Promise<MemoryStats & {js_heap?: JsHeap|null}>}
   */
  async memoryStats(options = {}) {
    const stats = await this.client.send("memory_stats", {}, deadline(options));
    return options?.jsHeap ? { ...stats, js_heap: await measureJsHeap() } : stats;
  }

  /** WebLLM's: the WebGPU adapter's vendor; rejects when the browser has no WebGPU. @returns {Promise<string>} */
  async getGPUVendor() {
    return (await gpuAdapter()).info?.vendor ?? "";
  }

  /** WebLLM's: the WebGPU adapter's largest storage buffer binding, in bytes. @returns {Promise<number>} */
  async getMaxStorageBufferBindingSize() {
    return (await gpuAdapter()).limits.maxStorageBufferBindingSize;
  }

  /** End the running generation at its next token (finish_reason "abort"), and the skills that are running. */
  interruptGenerate() {
    this.client.post("interrupt", {}, this.client.newId("i"));
    interruptSkills(this.client, this.interrupts);
  }

  /**
   * Forget the conversation state kept for the loaded chat models (and, unless `keepStats`, the
   * runtime stats) — WebLLM's `resetChat(keepStats?, model?)`.
   * @param {boolean} [keepStats] @param {string} [model] @param {Deadline} [options]
   */
  resetChat(keepStats = false, model, options = {}) {
    this.chatStates.reset(!!keepStats, model);
    this.forwardFed.clear();
    return this.client.send("reset_chat", {}, deadline(options));
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
    const reports = new LoadProgress(ids.at(-1));
    // the servers go with the load, so the worker starts no download of a model a server serves
    const load = { model_ids: ids, device: this.config.device ?? "wasm", hub: this.config.hubMirror ?? null,
      ...(this.config.remotes ? { remotes: remotesWire(this.config.remotes) } : {}), gguf_memory_budget: this.config.ggufMemoryBudget ?? null };
    const { timeoutMs, progress } = deadline(options);
    if (this.config.modelAliases) await this.setModelAliases(this.config.modelAliases);
    const result = await this.client.send("load", { request: load }, { timeoutMs, progress: (p) => {
      const report = reports.next(p, (performance.now() - started) / 1000);
      this.config.initProgressCallback?.(report);
      progress?.(p);
    } });
    this.modelIds = ids;
    return result;
  }

  /**
   * Let requests and skills name loaded models by other names (replaces the aliases set before):
   * a skill's `csi.chat("llama-3.1-8b-instruct", ...)` is served by the model the alias names.
   * @param {Record<string, string>} aliases @param {Deadline} [options]
   */
  async setModelAliases(aliases, options = {}) {
    const result = await this.client.send("set_model_aliases", { request: { aliases } }, deadline(options));
    this.config = { ...this.config, modelAliases: aliases };
    return result;
  }

  /**
   * Serve models from OpenAI-compatible servers (replaces the servers set before; `[]`: none). A
   * `remote` model then loads without a download and every API face sends its requests to the
   * server (aborts cancel the HTTP request); a `prefer-local` one loads here and falls back to the
   * server when that load fails. Each response says who served it in `usage.extra.served_by`
   * ("local" or "remote") and `usage.extra.server`; `reload`'s result says it per model (`remote`,
   * and `fallback`: why the local load failed).
   * @param {RemoteServer[]} remotes @param {Deadline} [options]
   */
  async setRemotes(remotes, options = {}) {
    const request = { remotes: remotesWire(remotes) };
    const result = await this.client.send("set_remotes", { request }, deadline(options));
    this.config = { ...this.config, remotes };
    return result;
  }

  /** @param {Deadline} [options] */
  unload(options = {}) {
    this.modelIds = [];
    this.forwardFed.clear();
    return this.client.send("unload", {}, deadline(options));
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

/**
 * WebLLM's `MLCEngine`: `new MLCEngine(config)`, then `reload(modelIds)`; the same engine as
 * {@link WebWorkerEngine}, with its module worker created for you.
 */
export class MLCEngine extends WebWorkerEngine {
  /** @param {EngineConfig} [config] */
  constructor(config = {}) {
    super(new Worker(trustedScriptURL(workerUrl(config)), { type: "module" }), config);
  }
}

/** WebLLM's `prebuiltAppConfig`: the models built into this site. */
export const prebuiltAppConfig = Object.freeze({
  model_list: ["smollm2-135m-instruct", "tiny-chat", "tiny-gpt2", "all-minilm-l6-v2"].map((id) => ({ model_id: id, model: `models/${id}/` })),
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
  } catch (/** @type {any} */ err) {
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
