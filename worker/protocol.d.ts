export type Device = "wasm" | "webgpu" | "auto";
export type Requests = import("./wire_types.js").Requests;
export type MessageType = "load" | "chat" | "completion" | "embeddings" | "chat_tokens" | "csi_complete" | "csi_chat" | "llm_infer" | "llm_embeddings" | "remote_generate" | "remote_llm_type" | "remote_guts" | "csi_chunk" | "csi_chunk_with_offsets" | "csi_select_language" | "csi_search" | "csi_documents" | "csi_document_metadata" | "index_delete" | "index_list" | "index_drop" | "index_create" | "index_put" | "skills_register" | "skills_list" | "skills_metadata" | "skills_run" | "skills_stream" | "skills_remove" | "set_model_aliases" | "set_remotes" | "tools_register" | "tools_list" | "tools_remove" | "reset_chat" | "unload" | "cancel" | "interrupt" | "boot_timings" | "memory_stats";
export type MessageBody<K extends MessageType> = K extends keyof Requests ? (K extends import("./wire_types.js").OptionalRequest ? {
    request?: Requests[K];
} : {
    request: Requests[K];
}) : {
    request?: never;
};
export type MessageOf<K extends MessageType> = {
    id: string;
    type: K;
} & MessageBody<K>;
export type PageMessage = {
    [K in MessageType]: MessageOf<K>;
}[MessageType];
export type ToolResultMessage = {
    type: "tool_result";
    call: number;
    result?: unknown;
    error?: {
        message: string;
    };
};
export type Progress = {
    stage: string;
    file: string | null;
    loaded: number;
    total: number;
    model: string | null;
    [extra: string]: unknown;
};
export type IndexProgress = Progress & {
    stage: "index";
    documents: string[];
};
export type IndexPutProgress = IndexProgress & {
    chunks: number;
};
export type WireError = {
    name: string;
    message: string;
    param: string | null;
};
export type AcceptedReply = {
    id: string | null;
    type: "accepted";
};
export type FatalReply = {
    id: null;
    type: "fatal";
    error: WireError;
};
export type ProgressReply = {
    id: string | null;
    type: "progress";
    progress: Progress;
};
export type ChunkReply = {
    id: string | null;
    type: "chunk";
    chunk: any;
};
export type ResultReply = {
    id: string | null;
    type: "result";
    result: any;
};
export type ErrorReply = {
    id: string | null;
    type: "error";
    error: WireError;
};
export type WorkerReply = AcceptedReply | ProgressReply | ChunkReply | ResultReply | ErrorReply | FatalReply;
export type ToolCallMessage = {
    type: "tool_call";
    call: number;
    name: string;
    arguments: Record<string, unknown>;
};
export type ToolCancelMessage = {
    type: "tool_cancel";
    call: number;
};
export type WorkerRequest = ToolCallMessage | ToolCancelMessage;
export type ToolSpec = {
    name: string;
    description: string;
    input_schema: Record<string, unknown>;
};
export type ModelInfo = {
    model_id: string;
    kind: "chat" | "embedding";
    context_length: number;
    eos_token_ids: number[];
    vocab_size: number;
    remote: string | null;
    fallback: string | null;
    [field: string]: unknown;
};
export type LoadResult = {
    models: ModelInfo[];
    load_s: number;
};
export type BootTimings = {
    pyodide_s: number;
    wheels_s: number;
    imports_s: number;
};
export type WorkerMemory = {
    pyodide_wasm_bytes: number | null;
    ort_wasm_bytes: number | null;
    other_wasm_bytes: number;
    gpu_buffer_bytes: number | null;
    gpu_buffers: number | null;
};
export type MemoryStats = WorkerMemory & {
    models: number;
    preloads: number;
    python_objects: number;
};
export type ResultOf<K extends MessageType> = K extends keyof import("./wire_types.js").Results ? import("./wire_types.js").Results[K] : unknown;
export type ChunkOf<K extends MessageType> = K extends keyof import("./wire_types.js").Chunks ? import("./wire_types.js").Chunks[K] : unknown;
export type Mode = "whole" | "stream" | "progress" | "control";
/**
 * @typedef {"wasm"|"webgpu"|"auto"} Device
 * @typedef {import("./wire_types.js").Requests} Requests
 *   Message type -> its `request`, generated from the Python routes' pydantic models
 *   (worker/wire_types.d.ts): the one definition of every message body.
 *
 * @typedef {"load" | "chat" | "completion" | "embeddings" | "chat_tokens" | "csi_complete" | "csi_chat" | "llm_infer"
 *   | "llm_embeddings" | "remote_generate" | "remote_llm_type" | "remote_guts" | "csi_chunk"
 *   | "csi_chunk_with_offsets" | "csi_select_language" | "csi_search" | "csi_documents"
 *   | "csi_document_metadata" | "index_delete" | "index_list" | "index_drop" | "index_create" | "index_put"
 *   | "skills_register" | "skills_list" | "skills_metadata" | "skills_run" | "skills_stream" | "skills_remove"
 *   | "set_model_aliases" | "set_remotes" | "tools_register" | "tools_list" | "tools_remove" | "reset_chat" | "unload" | "cancel"
 *   | "interrupt" | "boot_timings" | "memory_stats"} MessageType
 *   Every message type. What some of them mean:
 *   - `load`: load these models, unloading the others; those not built in come from the Hugging Face
 *     Hub, or from the mirror whose base URL is `hub`. Progress: one report per file event, then
 *     `ready` per model. Result: {@link LoadResult}.
 *   - `chat`, `completion`: OpenAI-style requests; with `stream: true` the worker pushes one `chunk`
 *     reply per chunk, then a `result` with null; otherwise one `result` with the whole response.
 *   - `chat_tokens`: a conversation's token ids as the chat template renders them (generation
 *     prompt added, then `prefix`'s tokens), and their count; nothing is generated.
 *   - `index_create`: progress while existing documents are indexed ({@link IndexProgress});
 *     `index_put`: progress after each committed batch ({@link IndexPutProgress}).
 *   - `skills_register`: `time_limit_ms` is how long the skill's module may take to load;
 *     `skills_run`: how long the skill may run, from its start (null: no limit); past it the skill
 *     is interrupted where it runs or waits, and the call ends with a `SkillError`;
 *     `skills_stream`: runs a `@message_stream` skill, one `chunk` per item it writes
 *     (`message_begin` / `message_append` / `message_end`), then a `result` with null.
 *   - `set_model_aliases`: model names requests and skills may use -> the loaded model serving them.
 *   - `set_remotes`: the OpenAI-compatible servers of remote models (replacing those set before);
 *     `load` then loads a `remote` model without downloading it, and falls back to the server for
 *     a `prefer-local` one whose local load fails. Result: the models configured.
 *   - `tools_register`: a tool the page runs (its function stays on the page; the worker asks for
 *     each call with a {@link ToolCallMessage}), replacing one of the same name. Result: its
 *     {@link ToolSpec}. `tools_list`: result `ToolSpec[]`, by name. `tools_remove`: result null.
 *   - `cancel`: end the request whose id is `target` (running or queued) with finish_reason
 *     "abort"; a skill call is interrupted (`SkillError`).
 *   - `interrupt`: end the running generations at their next token (finish_reason "abort"), and the
 *     skill calls under way.
 *   - `boot_timings`: result {@link BootTimings}.
 *   - `memory_stats`: result {@link MemoryStats}.
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
 * @typedef {{name: string, description: string, input_schema: Record<string, unknown>}} ToolSpec
 *   A tool as skills see it (pharia-skill's `Tool`).
 *
 * @typedef {{model_id: string, kind: "chat"|"embedding", context_length: number,
 *            eos_token_ids: number[], vocab_size: number, remote: string|null, fallback: string|null,
 *            [field: string]: unknown}} ModelInfo
 *   `remote`: the base URL of the server serving the model (null: it runs here); `fallback`: why a
 *   `prefer-local` model is on its server (the local load's error; null otherwise).
 * @typedef {{models: ModelInfo[], load_s: number}} LoadResult
 * @typedef {{pyodide_s: number, wheels_s: number, imports_s: number}} BootTimings
 * @typedef {{pyodide_wasm_bytes: number|null, ort_wasm_bytes: number|null, other_wasm_bytes: number,
 *            gpu_buffer_bytes: number|null, gpu_buffers: number|null}} WorkerMemory
 *   The worker's WebAssembly memories and GPU buffers (worker/memory_stats.js). `*_wasm_bytes`: the
 *   size of Pyodide's, onnxruntime-web's and any other module's memory (null before that module is
 *   instantiated); wasm memories grow and never shrink, so each is the high-water mark of what its
 *   heap needed. `gpu_buffer_bytes`: the sizes of the GPU buffers the worker created and has neither
 *   destroyed nor let the garbage collector take (null where the worker has no WebGPU).
 * @typedef {WorkerMemory & {models: number, preloads: number, python_objects: number}} MemoryStats
 *   What the worker holds: {@link WorkerMemory}, the models loaded, the loads it began before Python
 *   asked for them (while Python boots: 0 once the first load has its answer), and how many objects Python's
 *   garbage collector tracks (`len(gc.get_objects())`: unlike the wasm memory, it falls when they are freed).
 */
/**
 * The `result` of a message of type `K`, where the Python route declares its model
 * (worker/wire_types.d.ts `Results`; the others answer with plain JSON).
 * @template {MessageType} K
 * @typedef {K extends keyof import("./wire_types.js").Results ? import("./wire_types.js").Results[K] : unknown} ResultOf
 */
/**
 * Each streamed `chunk` of a message of type `K` (worker/wire_types.d.ts `Chunks`).
 * @template {MessageType} K
 * @typedef {K extends keyof import("./wire_types.js").Chunks ? import("./wire_types.js").Chunks[K] : unknown} ChunkOf
 */
/**
 * How a message type is served:
 * - `whole`: queued as a task; one `result` (or `error`);
 * - `stream`: queued as a task; with `request.stream` true, one `chunk` per chunk, then a `result`
 *   with null; otherwise like `whole`;
 * - `progress`: queued as a task; `progress` replies as it goes, then one `result`;
 * - `control`: answered at once, between two tokens of whatever is running: one `result`.
 * @typedef {"whole" | "stream" | "progress" | "control"} Mode
 */
/**
 * Message type -> mode: every type of {@link PageMessage}, and no other (tsc checks both ways).
 * @type {Readonly<Record<MessageType, Mode>>}
 */
export declare const ROUTES: Readonly<Record<MessageType, Mode>>;
