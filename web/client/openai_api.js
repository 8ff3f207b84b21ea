// @ts-check
// OpenAI's API on the page client: `chat.completions`, `completions` and `embeddings`. Chat and
// completions stream (one pushed chunk at a time) or answer whole; both remember what WebLLM's
// `getMessage` and `runtimeStatsText` report.

import { ChunkStream } from "./chunk_stream.js";
import { cancelOnAbort, deadline, requestCall } from "./calls.js";

/**
 * @typedef {import("./openai_types.js").ChatCompletionRequest} ChatCompletionRequest
 * @typedef {import("./openai_types.js").ChatCompletionRequestStreaming} ChatCompletionRequestStreaming
 * @typedef {import("./openai_types.js").ChatCompletionRequestNonStreaming} ChatCompletionRequestNonStreaming
 * @typedef {import("./openai_types.js").ChatCompletion} ChatCompletion
 * @typedef {import("./openai_types.js").ChatCompletionChunk} ChatCompletionChunk
 * @typedef {import("./openai_types.js").CompletionCreateParams} CompletionCreateParams
 * @typedef {import("./openai_types.js").CompletionCreateParamsStreaming} CompletionCreateParamsStreaming
 * @typedef {import("./openai_types.js").CompletionCreateParamsNonStreaming} CompletionCreateParamsNonStreaming
 * @typedef {import("./openai_types.js").Completion} Completion
 * @typedef {import("./openai_types.js").EmbeddingCreateParams} EmbeddingCreateParams
 * @typedef {import("./openai_types.js").CreateEmbeddingResponse} CreateEmbeddingResponse
 * @typedef {import("./calls.js").CallOptions} CallOptions
 * @typedef {import("./calls.js").Deadline} Deadline
 * @typedef {import("./worker_client.js").WorkerClient} WorkerClient
 * @typedef {import("../chat_state.js").ChatStates} ChatStates
 */

/** @typedef {"chat"|"completion"|"responses_create"} StreamedType */
/**
 * @template {StreamedType} K
 * @typedef {import("./calls.js").RequestOf<K>} RequestOf
 */
/**
 * @template {StreamedType} K
 * @typedef {import("../../worker/protocol.js").ResultOf<K>} ResultOf
 */
/**
 * @template {StreamedType} K
 * @typedef {import("../../worker/protocol.js").ChunkOf<K>} ChunkOf
 */

/**
 * `stream: false` resolves to the whole result; `stream: true` to an AsyncIterable of chunks
 * (it resolves when the first chunk arrives, so a bad request rejects here). `options.signal`
 * (an AbortSignal) ends the generation as `interruptGenerate` does, for this request only:
 * what was generated comes back with `finish_reason: "abort"`. `states` (chat and completions)
 * remember the reply for WebLLM's `getMessage`; null: nothing is remembered.
 * @template {StreamedType} K
 * @param {WorkerClient} client @param {ChatStates|null} states
 * @param {K} type @param {RequestOf<K>} request @param {CallOptions} [options]
 * @returns {Promise<ResultOf<K>|AsyncIterable<ChunkOf<K>>>}
 */
export function streamable(client, states, type, request, options = {}) {
  if (states) request = states.withDefaults(request);
  const id = client.newId();
  const cancel = () => client.cancel(id);
  const release = cancelOnAbort(options?.signal, cancel);
  const stream = Boolean(request?.stream);
  // WebLLM's runtimeStatsText needs every reply's usage: asked of the worker when the caller did not
  // ask for it (`stream_options.include_usage`), and its chunk (no choices) kept from the caller
  /** @type {any} */
  const asked = request;
  const hideUsage = stream && states !== null && !asked.stream_options?.include_usage;
  const sent = hideUsage ? { ...asked, stream_options: { ...asked.stream_options, include_usage: true } } : request;
  const body = /** @type {import("../../worker/protocol.js").MessageBody<K>} */ ({ request: sent });
  if (!stream) {
    return client.send(type, body, { id, ...deadline(options) }).finally(release).then((r) => {
      /** @type {any} a chat completion or a completion */
      const reply = r;
      states?.finish(reply.model, reply.choices?.[0]?.message?.content ?? reply.choices?.[0]?.text ?? "", reply.usage);
      return r;
    });
  }
  const follow = states?.follow();
  /** @type {ChunkStream<ChunkOf<K>>} */
  const chunks = new ChunkStream(cancel);
  return new Promise((resolve, reject) => {
    let started = false;
    const start = () => {
      if (!started) {
        started = true;
        resolve(chunks);
      }
    };
    client.send(type, body, {
      id,
      ...deadline(options),
      chunk: (c) => {
        follow?.chunk(c);
        if (hideUsage && isUsageChunk(c)) return;
        chunks.push(c);
        start();
      },
    }).finally(release).then(
      () => {
        follow?.end();
        chunks.end();
        start();
      },
      (err) => {
        if (started) chunks.end(err);
        else reject(err);
      },
    );
  });
}

/** The last chunk `stream_options.include_usage` adds: no choices, the usage. @param {any} c */
const isUsageChunk = (c) => Boolean(c?.usage) && !c.choices?.length;

/**
 * The OpenAI namespaces of an engine.
 * @param {WorkerClient} client @param {ChatStates} states
 */
export function openaiApi(client, states) {
  /**
   * A chat completion, streamed: resolves to the chunks (once the first one came).
   * @overload
   * @param {ChatCompletionRequestStreaming} request @param {CallOptions} [options]
   * @returns {Promise<AsyncIterable<ChatCompletionChunk>>}
   */
  /**
   * A chat completion, whole.
   * @overload
   * @param {ChatCompletionRequestNonStreaming} request @param {CallOptions} [options]
   * @returns {Promise<ChatCompletion>}
   */
  /**
   * A chat completion, streamed or whole as `request.stream` says.
   * @overload
   * @param {ChatCompletionRequest} request @param {CallOptions} [options]
   * @returns {Promise<ChatCompletion|AsyncIterable<ChatCompletionChunk>>}
   */
  /**
   * @param {ChatCompletionRequest} request @param {CallOptions} [options]
   * @returns {Promise<ChatCompletion|AsyncIterable<ChatCompletionChunk>>}
   */
  function createChat(request, options = {}) {
    return streamable(client, states, "chat", request, options);
  }
  /**
   * An OpenAI (legacy) completion, streamed: resolves to the chunks (once the first one came).
   * @overload
   * @param {CompletionCreateParamsStreaming} request @param {CallOptions} [options]
   * @returns {Promise<AsyncIterable<Completion>>}
   */
  /**
   * An OpenAI (legacy) completion, whole.
   * @overload
   * @param {CompletionCreateParamsNonStreaming} request @param {CallOptions} [options]
   * @returns {Promise<Completion>}
   */
  /**
   * An OpenAI (legacy) completion, streamed or whole as `request.stream` says.
   * @overload
   * @param {CompletionCreateParams} request @param {CallOptions} [options]
   * @returns {Promise<Completion|AsyncIterable<Completion>>}
   */
  /**
   * @param {CompletionCreateParams} request @param {CallOptions} [options]
   * @returns {Promise<Completion|AsyncIterable<Completion>>}
   */
  function createCompletion(request, options = {}) {
    return streamable(client, states, "completion", request, options);
  }
  /** @type {(request: EmbeddingCreateParams, options?: Deadline) => Promise<CreateEmbeddingResponse>} */
  const embeddings = requestCall(client, "embeddings");
  return {
    chat: { completions: { create: createChat } },
    completions: { create: createCompletion },
    embeddings: {
      /** `{input, model}` (`EmbeddingCreateParams`) -> `CreateEmbeddingResponse` */
      create: embeddings,
    },
  };
}
