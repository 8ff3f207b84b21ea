// @ts-check
// The RemoteLLM service on the page client (proto3 JSON field names). GenerationalGuts is its look
// inside the model, as the playground's Model insides panel shows it.

import { requestCall } from "./calls.js";

/**
 * @typedef {import("./calls.js").RequestOf<"remote_guts">} GutsRequest
 * @typedef {import("./calls.js").ResultOf<"remote_guts">} GutsResponse
 * @typedef {import("./calls.js").Deadline} Deadline
 */

/** The `remote` namespace of an engine. @param {import("./worker_client.js").WorkerClient} client */
export function remoteApi(client) {
  return {
    /** `{api_key, prompts, stop}` -> the generations */
    generate: requestCall(client, "remote_generate"),
    /** `{api_key}` -> the model's type */
    getLlmType: requestCall(client, "remote_llm_type", {}),
    /**
     * Each prompt token's embeddings and final hidden state, and the likeliest next tokens.
     * @type {(request: GutsRequest, options?: Deadline) => Promise<GutsResponse>}
     */
    generationalGuts: requestCall(client, "remote_guts"),
  };
}
