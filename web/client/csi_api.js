// @ts-check
// The CSI (pharia:skill@0.3.0) on the page client: batches in, results in request order.

import { requestCall } from "./calls.js";

/**
 * @typedef {import("./worker_client.js").WorkerClient} WorkerClient
 * @typedef {import("./calls.js").Deadline} Deadline
 * @typedef {import("../../worker/wire_types.js").Distribution} WireDistribution
 * @typedef {Omit<import("../../worker/wire_types.js").Logprob, "token"> & {token: Uint8Array}} Logprob
 *   A token (its bytes, `list<u8>`) and its log-probability.
 * @typedef {{sampled: Logprob, top: Logprob[]}} Distribution
 * @typedef {Omit<import("../../worker/wire_types.js").CsiCompletion, "logprobs"> & {logprobs: Distribution[]}} Completion
 * @typedef {Omit<import("../../worker/wire_types.js").CsiChatResponse, "logprobs">
 *   & {logprobs: Distribution[]}} ChatResponse
 */

/**
 * @template {import("./calls.js").RequestType} K
 * @typedef {import("./calls.js").RequestOf<K>} RequestOf
 */

/**
 * CSI results carry token bytes as `list<u8>`: on the page they are Uint8Arrays.
 * @template {{logprobs: WireDistribution[]}} T
 * @param {T[]} results @returns {Array<Omit<T, "logprobs"> & {logprobs: Distribution[]}>}
 */
function bytesToArrays(results) {
  for (const r of results) {
    for (const d of /** @type {any[]} */ (r.logprobs ?? [])) {
      d.sampled.token = Uint8Array.from(d.sampled.token);
      for (const t of d.top) t.token = Uint8Array.from(t.token);
    }
  }
  return /** @type {any} */ (results);
}

/** The `csi` namespace of an engine. @param {WorkerClient} client */
export function csiApi(client) {
  const complete = requestCall(client, "csi_complete");
  const chat = requestCall(client, "csi_chat");
  return {
    /**
     * `[{model, prompt, params}]` -> a completion per request (token bytes as Uint8Arrays)
     * @param {RequestOf<"csi_complete">} requests @param {Deadline} [options] @returns {Promise<Completion[]>}
     */
    complete: (requests, options = {}) => complete(requests, options).then(bytesToArrays),
    /**
     * `[{model, messages, params}]` -> a chat response per request (token bytes as Uint8Arrays)
     * @param {RequestOf<"csi_chat">} requests @param {Deadline} [options] @returns {Promise<ChatResponse[]>}
     */
    chat: (requests, options = {}) => chat(requests, options).then(bytesToArrays),
    /** `[{text, params: {model, max_tokens, overlap}}]` -> chunks (strings) per request */
    chunk: requestCall(client, "csi_chunk"),
    /** like `chunk`, each chunk as `{text, byte_offset, character_offset}` (offsets in UTF-8 bytes and code points) */
    chunkWithOffsets: requestCall(client, "csi_chunk_with_offsets"),
    /** `[{text, languages}]` -> an ISO 639-3 code or null per request */
    selectLanguage: requestCall(client, "csi_select_language"),
    /**
     * `[{index_path: {namespace, collection, index}, query, max_results, min_score, filters}]` ->
     * per request `[{document_path, content, score, start: {item, position}, end: {item, position}}]`, best first
     */
    search: requestCall(client, "csi_search"),
    /** `[{namespace, collection, name}]` -> `[{path, contents: [{text} | "image"], metadata}]` */
    documents: requestCall(client, "csi_documents"),
    /** `[{namespace, collection, name}]` -> metadata (any JSON value) or null per path */
    documentMetadata: requestCall(client, "csi_document_metadata"),
  };
}
