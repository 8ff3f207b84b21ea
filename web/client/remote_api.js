// @ts-check
// The RemoteLLM service on the page client (proto3 JSON field names).

import { requestCall } from "./calls.js";
import { gutsCall } from "./guts_api.js";

/** The `remote` namespace of an engine. @param {import("./worker_client.js").WorkerClient} client */
export function remoteApi(client) {
  return {
    /** `{api_key, prompts, stop}` -> the generations */
    generate: requestCall(client, "remote_generate"),
    /** `{api_key}` -> the model's type */
    getLlmType: requestCall(client, "remote_llm_type", {}),
    /** Each prompt token's embeddings and final hidden state, and the likeliest next tokens. */
    generationalGuts: gutsCall(client),
  };
}
