// @ts-check
// A look inside the model (RemoteLLM's GenerationalGuts), as the playground's Model insides panel
// shows it.

import { requestCall } from "./calls.js";

/**
 * @typedef {{prompt: string, api_key?: string, fft_embeddings?: boolean, embedding_trunkation?: number,
 *   top_k_logits?: number, model?: string}} GutsRequest
 * @typedef {import("./calls.js").Deadline} Deadline
 */

/**
 * `generationalGuts(request)`: each prompt token's embeddings and final hidden state, and the
 * likeliest next tokens.
 * @param {import("./worker_client.js").WorkerClient} client
 * @returns {(request: GutsRequest, options?: Deadline) => Promise<any>}
 */
export function gutsCall(client) {
  return requestCall(client, "remote_guts");
}
