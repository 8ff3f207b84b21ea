// @ts-check
// A look inside the model (RemoteLLM's GenerationalGuts), as the playground's Model insides panel
// shows it.

import { requestCall } from "./calls.js";

/**
 * @typedef {import("./calls.js").RequestOf<"remote_guts">} GutsRequest
 * @typedef {import("./calls.js").ResultOf<"remote_guts">} GutsResponse
 * @typedef {import("./calls.js").Deadline} Deadline
 */

/**
 * `generationalGuts(request)`: each prompt token's embeddings and final hidden state, and the
 * likeliest next tokens.
 * @param {import("./worker_client.js").WorkerClient} client
 * @returns {(request: GutsRequest, options?: Deadline) => Promise<GutsResponse>}
 */
export function gutsCall(client) {
  return requestCall(client, "remote_guts");
}
