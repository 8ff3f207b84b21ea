// @ts-check
// The worker's message protocol, declared once: what the page sends (web/engine.js), what the
// worker answers (csi.worker, through worker/worker.js), and how each message type is served.
// Python's routes table (csi/worker/routes.py) is its source: the message types, their modes
// (ROUTES) and the load request's defaults (DEFAULTS) below are generated from it, with the
// bodies and replies in worker/wire_types.d.ts (`python3 -m buildtools.codegen.wire_types`).
//
// No imports and no browser-only globals: node can import this module (the tests do), and the
// page imports only its types (engine.js must load on its own, without this file).
//
// Every page message is `{id, type, request}`; `id` is the page's name for the request and comes
// back on every reply to it, `request` is the body, typed by worker/wire_types.d.ts (generated from
// the Python models). Every request ends with exactly one `result` or `error` reply, after
// any number of `progress` or `chunk` replies (by its mode).
//
// What some message types mean:
// - `load`: load these models, unloading the others; those not built in come from the Hugging Face
//   Hub, or from the mirror whose base URL is `hub`. Progress: one report per file event, then
//   `ready` per model. Result: {@link LoadResult}.
// - `chat`, `completion`: OpenAI-style requests; with `stream: true` the worker pushes one `chunk`
//   reply per chunk, then a `result` with null; otherwise one `result` with the whole response.
// - `chat_tokens`: a conversation's token ids as the chat template renders them (generation
//   prompt added, then `prefix`'s tokens), and their count; nothing is generated.
// - `index_create`: progress while existing documents are indexed ({@link IndexProgress});
//   `index_put`: progress after each committed batch ({@link IndexPutProgress}).
// - `skills_register`: `time_limit_ms` is how long the skill's module may take to load;
//   `skills_run`: how long the skill may run, from its start (null: no limit); past it the skill
//   is interrupted where it runs or waits, and the call ends with a `SkillError`;
//   `skills_stream`: runs a `@message_stream` skill, one `chunk` per item it writes
//   (`message_begin` / `message_append` / `message_end`), then a `result` with null.
// - `set_model_aliases`: model names requests and skills may use -> the loaded model serving them.
// - `set_remotes`: the OpenAI-compatible servers of remote models (replacing those set before);
//   `load` then loads a `remote` model without downloading it, and falls back to the server for
//   a `prefer-local` one whose local load fails. Result: the models configured.
// - `tools_register`: a tool the page runs (its function stays on the page; the worker asks for
//   each call with a {@link ToolCallMessage}), replacing one of the same name. Result: its
//   {@link ToolSpec}. `tools_list`: result `ToolSpec[]`, by name. `tools_remove`: result null.
// - `tools_connect`: an MCP server (Streamable HTTP) whose tools the skills run in `namespace`
//   (`skills_run`/`skills_stream` with `namespace`) call; its session started and its tools listed.
//   Result: the server and its tools. `tools_disconnect`: the servers ended; `tools_servers`: all.
// - `cancel`: end the request whose id is `target` (running or queued) with finish_reason
//   "abort"; a skill call is interrupted (`SkillError`).
// - `interrupt`: end the running generations at their next token (finish_reason "abort"), and the
//   skill calls under way.
// - `boot_timings`: result {@link BootTimings} (null in CPython).
// - `memory_stats`: result {@link MemoryStats}.

// ---- page -> worker ------------------------------------------------------------------------------

/**
 * @typedef {import("./wire_types.js").Requests} Requests
 *   Message type -> its `request`, generated from the Python routes' pydantic models
 *   (worker/wire_types.d.ts): the one definition of every message body.
 * @typedef {NonNullable<Requests["load"]["device"]>} Device
 */

/**
 * The body of a message of type `K` (what sits beside `id` and `type`): `{request}` typed by
 * {@link Requests}, or nothing for the types that take no request.
 * @template {MessageType} K
 * @typedef {K extends keyof Requests
 *   ? (K extends import("./wire_types.js").OptionalRequest ? {request?: Requests[K]} : {request: Requests[K]})
 *   : {request?: never}} MessageBody
 */

/**
 * One page message: `{id, type, request}`.
 * @template {MessageType} K
 * @typedef {{id: string, type: K} & MessageBody<K>} MessageOf
 */

/** @typedef {{[K in MessageType]: MessageOf<K>}[MessageType]} PageMessage Every message the page sends. */

/**
 * @typedef {{type: "tool_result", call: number, result?: unknown, error?: {message: string}}} ToolResultMessage
 *   The page's answer to a {@link ToolCallMessage}: the tool's `result` (a JSON value), or the
 *   `error` it threw. Posted as an object (not JSON text) and read by the worker's JS
 *   (page_tools.js), never by Python's routes; an answer to a call no longer pending is dropped.
 */

// ---- worker -> page ------------------------------------------------------------------------------

/**
 * @typedef {{stage: string, file: string|null, loaded: number, total: number, model: string|null,
 *            [extra: string]: unknown}} Progress
 *   Progress of a request. Loading reports the stages of the worker's boot ("pyodide", "wheels",
 *   "python-ready"), then per model: "plan" (`files`: every file it reads and its size, `total`
 *   their sum), transformers.js's per file ("initiate", "download", "progress", "done", ...;
 *   `loaded`/`total` are the file's bytes) and "ready". Any request that must wait for a model
 *   another request is using reports "queued" (`waiting_for`: that request's id, `model`).
 * @typedef {Progress & {stage: "index", documents: string[]}} IndexProgress
 *   `index_create`: `loaded` of `total` documents are indexed; `documents` names the last batch.
 * @typedef {IndexProgress & {chunks: number}} IndexPutProgress
 *   `index_put`: `loaded` of `total` documents are committed, `chunks` chunks so far.
 *
 * @typedef {{name: string, message: string, param: string|null}} WireError
 *   `name` says what went wrong (InvalidInputError, NotFoundError, InternalError, WorkerError, ...);
 *   `param` names the request field to blame, if any.
 *
 * @typedef {{id: string|null, type: "accepted"}} AcceptedReply
 *   The worker has taken the request (it is queued or running): the page knows it is not stuck
 *   behind a skill that keeps the worker's Python busy.
 * @typedef {{id: null, type: "fatal", error: WireError}} FatalReply
 *   The worker is gone (a skill closed it, or its Python failed fatally): every request pending
 *   ends with `error` (a `WorkerCrashedError`), and nothing more comes.
 * @typedef {{id: string|null, type: "progress", progress: Progress}} ProgressReply
 * @typedef {{id: string|null, type: "chunk", chunk: any}} ChunkReply
 *   One streamed chunk: {@link ChunkOf} the message's type.
 * @typedef {{id: string|null, type: "result", result: any}} ResultReply
 *   Ends a request: its result (null after a stream and for requests with nothing to say).
 * @typedef {{id: string|null, type: "error", error: WireError}} ErrorReply
 *   Ends a request that failed. `id` is null when the message had none (or was not JSON).
 * @typedef {AcceptedReply | ProgressReply | ChunkReply | ResultReply | ErrorReply | FatalReply} WorkerReply
 *   Every reply the worker posts (as JSON text or as an object).
 *
 * @typedef {{type: "tool_call", call: number, name: string, arguments: Record<string, unknown>}} ToolCallMessage
 *   A skill calls the page's tool `name` on `arguments` (checked against its input schema): the
 *   page answers with a {@link ToolResultMessage} of the same `call`.
 * @typedef {{type: "tool_cancel", call: number}} ToolCancelMessage
 *   The skill that made `call` was cancelled: the tool's AbortSignal aborts, and its answer is not needed.
 * @typedef {ToolCallMessage | ToolCancelMessage} WorkerRequest
 *   What the worker asks of the page (not a reply to a page message).
 * @typedef {import("./wire_types.js").ToolDescription} ToolSpec
 *   A tool as skills see it (pharia-skill's `Tool`).
 *
 * @typedef {import("./wire_types.js").LoadedModel} ModelInfo
 *   `remote`: the base URL of the server serving the model (null: it runs here); `fallback`: why a
 *   `prefer-local` model is on its server (the local load's error; null otherwise).
 * @typedef {import("./wire_types.js").LoadResult} LoadResult
 * @typedef {import("./wire_types.js").BootTimings} BootTimings
 * @typedef {import("./wire_types.js").MemoryStats} MemoryStats
 *   What the worker holds (the worker's figures are absent where there is no worker's JS, as in CPython).
 * @typedef {{[F in "pyodide_wasm_bytes" | "ort_wasm_bytes" | "other_wasm_bytes" | "gpu_buffer_bytes"
 *   | "gpu_buffers"]-?: MemoryStats[F]}} WorkerMemory
 *   The worker's WebAssembly memories and GPU buffers (worker/memory_stats.js), as {@link MemoryStats} has them.
 */

/**
 * The `result` of a message of type `K`, as the Python route's reply model declares it
 * (worker/wire_types.d.ts `Results`).
 * @template {MessageType} K
 * @typedef {import("./wire_types.js").Results[K]} ResultOf
 */

/**
 * Each streamed `chunk` of a message of type `K` (worker/wire_types.d.ts `Chunks`).
 * @template {MessageType} K
 * @typedef {K extends keyof import("./wire_types.js").Chunks ? import("./wire_types.js").Chunks[K] : unknown} ChunkOf
 */

// ---- how each message type is served -------------------------------------------------------------

/**
 * How a message type is served:
 * - `whole`: queued as a task; one `result` (or `error`);
 * - `stream`: queued as a task; with `request.stream` true, one `chunk` per chunk, then a `result`
 *   with null; otherwise like `whole`;
 * - `progress`: queued as a task; `progress` replies as it goes, then one `result`;
 * - `control`: answered at once, between two tokens of whatever is running: one `result`.
 * @typedef {"whole" | "stream" | "progress" | "control"} Mode
 */

// ---- generated by `python3 -m buildtools.codegen.wire_types` from py/csi/worker/routes.py: do not edit ----

/**
 * @typedef {"load" | "chat" | "completion" | "embeddings" | "responses_create" | "responses_retrieve"
 *   | "responses_delete" | "responses_input_items" | "chat_tokens" | "csi_complete" | "csi_chat" | "csi_chunk"
 *   | "csi_chunk_with_offsets" | "csi_select_language" | "csi_search" | "csi_documents" | "csi_document_metadata"
 *   | "index_create" | "index_put" | "index_delete" | "index_list" | "index_drop" | "llm_infer" | "llm_embeddings"
 *   | "remote_generate" | "remote_llm_type" | "remote_guts" | "skills_register" | "skills_list" | "skills_metadata"
 *   | "skills_run" | "skills_stream" | "skills_remove" | "set_model_aliases" | "set_remotes" | "tools_register"
 *   | "tools_list" | "tools_remove" | "tools_connect" | "tools_disconnect" | "tools_servers" | "prompt_caches_list"
 *   | "prompt_caches_delete" | "prompt_caches_configure" | "reset_chat" | "unload" | "cancel" | "interrupt"
 *   | "boot_timings" | "memory_stats"} MessageType
 *   Every message type: its body is {@link Requests}, its result {@link ResultOf}, its chunks
 *   {@link ChunkOf} (py/csi/worker/routes.py).
 */

/**
 * Message type -> mode: every type of {@link PageMessage}, and no other (tsc checks both ways).
 * @type {Readonly<Record<MessageType, Mode>>}
 */
export const ROUTES = Object.freeze(/** @satisfies {Record<MessageType, Mode>} */ ({
  load: "progress",
  chat: "stream",
  completion: "stream",
  embeddings: "whole",
  responses_create: "stream",
  responses_retrieve: "whole",
  responses_delete: "whole",
  responses_input_items: "whole",
  chat_tokens: "whole",
  csi_complete: "whole",
  csi_chat: "whole",
  csi_chunk: "whole",
  csi_chunk_with_offsets: "whole",
  csi_select_language: "whole",
  csi_search: "whole",
  csi_documents: "whole",
  csi_document_metadata: "whole",
  index_create: "progress",
  index_put: "progress",
  index_delete: "whole",
  index_list: "whole",
  index_drop: "whole",
  llm_infer: "whole",
  llm_embeddings: "whole",
  remote_generate: "whole",
  remote_llm_type: "whole",
  remote_guts: "whole",
  skills_register: "whole",
  skills_list: "whole",
  skills_metadata: "whole",
  skills_run: "whole",
  skills_stream: "stream",
  skills_remove: "whole",
  set_model_aliases: "whole",
  set_remotes: "whole",
  tools_register: "whole",
  tools_list: "whole",
  tools_remove: "whole",
  tools_connect: "whole",
  tools_disconnect: "whole",
  tools_servers: "whole",
  prompt_caches_list: "whole",
  prompt_caches_delete: "whole",
  prompt_caches_configure: "whole",
  reset_chat: "whole",
  unload: "whole",
  cancel: "control",
  interrupt: "control",
  boot_timings: "control",
  memory_stats: "control",
}));

/**
 * The defaults of the `load` request's fields, per model, as Python's models declare them: the
 * worker's JS reads a load message before Python does (to begin loading while Python boots).
 */
export const DEFAULTS = Object.freeze({
  LoadRequest: Object.freeze({ device: "wasm", hub: null, gguf_memory_budget: null, remotes: null }),
  RemoteServer: Object.freeze({ api_key: null, timeout_s: 120.0, deadline_s: 600.0 }),
  RemoteModelSpec: Object.freeze({ policy: "remote", server_model: null }),
});

// ---- end of the generated part -------------------------------------------------------------------
