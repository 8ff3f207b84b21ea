// @ts-check
// The `cache` namespace of an engine: the prompt caches the browser keeps beyond the page. After
// each request the worker keeps the model's KV cache (origin private file system) under the model
// file's hash; the next visit, or another tab, whose prompt begins with the same tokens starts
// from there. Here a page lists them, deletes them and sets the budget they share.

import { deadline } from "./calls.js";

/**
 * @typedef {import("./worker_client.js").WorkerClient} WorkerClient
 * @typedef {import("./calls.js").Deadline} Deadline
 * @typedef {import("../../worker/wire_types.js").PromptCacheSettingsRequest} PromptCacheSettingsRequest
 */

/**
 * The `cache` namespace of an engine.
 * @param {WorkerClient} client
 */
export function promptCacheApi(client) {
  return {
    /**
     * The kept caches, most recently used first: `{id, model, tokens, bytes, created, last_used}`.
     * @param {Deadline} [options]
     */
    list(options = {}) {
      return client.send("prompt_caches_list", {}, deadline(options));
    },
    /**
     * Delete kept caches by id; resolves to `{deleted}`.
     * @param {string[]} ids @param {Deadline} [options]
     */
    delete(ids, options = {}) {
      return client.send("prompt_caches_delete", { request: { ids } }, deadline(options));
    },
    /** Delete every kept cache; resolves to `{deleted}`. @param {Deadline} [options] */
    clear(options = {}) {
      return client.send("prompt_caches_delete", { request: { ids: null } }, deadline(options));
    },
    /**
     * Change the settings and resolve to all of them: `enabled` (default true), `budget_bytes` (the
     * bytes all entries may take together, least recently used out; default 512 MiB), `min_tokens`
     * (the shortest cache worth keeping; default 64).
     * @param {PromptCacheSettingsRequest} settings @param {Deadline} [options]
     */
    configure(settings, options = {}) {
      return client.send("prompt_caches_configure", { request: settings }, deadline(options));
    },
  };
}
