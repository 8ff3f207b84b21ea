// @ts-check
// OpenAI's Responses API on the page client: `responses.create` (the whole response, or its events
// streamed one pushed message at a time) and the stored responses: `retrieve`, `delete`,
// `inputItems.list` (kept in the worker's IndexedDB, so `previous_response_id` outlives a reload).

import { deadline } from "./calls.js";
import { streamable } from "./openai_api.js";

/**
 * @typedef {import("../../worker/wire_types.js").ResponseCreateRequest} ResponseCreateRequest
 * @typedef {import("../../worker/wire_types.js").ResponseObject} ResponseObject
 * @typedef {import("../../worker/wire_types.js").ResponseStreamEvent} ResponseStreamEvent
 * @typedef {import("../../worker/wire_types.js").InputItemList} InputItemList
 * @typedef {import("../../worker/wire_types.js").DeletedResponse} DeletedResponse
 * @typedef {import("./calls.js").CallOptions} CallOptions
 * @typedef {import("./calls.js").Deadline} Deadline
 * @typedef {import("./worker_client.js").WorkerClient} WorkerClient
 */

/** The `responses` namespace of an engine. @param {WorkerClient} client */
export function responsesApi(client) {
  /**
   * A response's events, streamed: resolves once the first one came.
   * @overload
   * @param {ResponseCreateRequest & {stream: true}} request @param {CallOptions} [options]
   * @returns {Promise<AsyncIterable<ResponseStreamEvent>>}
   */
  /**
   * A response, whole.
   * @overload
   * @param {ResponseCreateRequest & {stream?: false|null}} request @param {CallOptions} [options]
   * @returns {Promise<ResponseObject>}
   */
  /**
   * A response: with `stream: true`, resolves (once the first event came) to its events
   * (`response.created` ... `response.completed`), else to the response. `options.signal` ends it
   * as `interruptGenerate` does: the response ends (`response.incomplete`) with status `cancelled`.
   * @overload
   * @param {ResponseCreateRequest} request @param {CallOptions} [options]
   * @returns {Promise<ResponseObject|AsyncIterable<ResponseStreamEvent>>}
   */
  /**
   * @param {ResponseCreateRequest} request @param {CallOptions} [options]
   * @returns {Promise<ResponseObject|AsyncIterable<ResponseStreamEvent>>}
   */
  function create(request, options = {}) {
    return streamable(client, null, "responses_create", request, options);
  }
  return {
    create,
    /** A stored response. @param {string} id @param {unknown} [_query] @param {Deadline} [options] */
    retrieve: (id, _query, options = {}) =>
      client.send("responses_retrieve", { request: { response_id: id } }, deadline(options)),
    /** Delete a stored response. @param {string} id @param {Deadline} [options] */
    delete: (id, options = {}) => client.send("responses_delete", { request: { response_id: id } }, deadline(options)),
    inputItems: {
      /**
       * A page of a stored response's input items (newest first unless `order: "asc"`).
       * @param {string} id @param {{after?: string, limit?: number, order?: "asc"|"desc"}} [query]
       * @param {Deadline} [options] @returns {Promise<InputItemList>}
       */
      list: (id, query = {}, options = {}) =>
        client.send("responses_input_items", { request: { response_id: id, ...query } }, deadline(options)),
    },
  };
}
