// @ts-check
// Spin's `llm` interface on the page client (with the stop / optional max-tokens / finish-reason
// proposal).

import { deadline } from "./calls.js";

/**
 * @typedef {import("./calls.js").Deadline} Deadline
 * @typedef {import("./calls.js").RequestOf<"llm_infer">} InferRequest
 * @typedef {import("./calls.js").ResultOf<"llm_infer">} InferencingResult
 * @typedef {import("./calls.js").ResultOf<"llm_embeddings">} EmbeddingsResult
 */

/** The `llm` namespace of an engine. @param {import("./worker_client.js").WorkerClient} client */
export function spinApi(client) {
  return {
    /**
     * @param {string} model @param {string} prompt @param {InferRequest["params"]} [params]
     * @param {Deadline} [options] absent params take Spin's defaults
     * @returns {Promise<InferencingResult>} `{text, finish_reason, usage: {prompt_token_count, generated_token_count}}`
     */
    infer: (model, prompt, params = null, options = {}) =>
      client.send("llm_infer", { request: { model, prompt, params } }, deadline(options)),
    /**
     * @param {string} model @param {string[]} text @param {Deadline} [options]
     * @returns {Promise<EmbeddingsResult>} `{embeddings, usage: {prompt_token_count}}`
     */
    generateEmbeddings: (model, text, options = {}) =>
      client.send("llm_embeddings", { request: { model, text } }, deadline(options)),
  };
}
