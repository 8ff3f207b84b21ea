// The Bridge's prompt-cache role: a chat model's cache taken from the prompt caches kept beyond the
// page (prompt_cache.js) when one holds more of a new prompt than memory does, and the cache kept
// there once a request ends.

import { LOGIT_PROCESSORS } from "../logit_processors.js";
import { PromptCaches, commonPrefix } from "../prompt_cache.js";

/** @typedef {import("./model_store.js").ModelStore} ModelStore */

/** A kept cache is read only when it holds at least this many more tokens than memory: fewer run faster. */
const RESTORE_MARGIN = 16;

export class PromptCachingRole {
  /** @param {ModelStore} store */
  constructor(store) {
    this.store = store;
    this.caches = new PromptCaches();
  }

  /**
   * Before `reusePrefix`: when a kept cache shares more of `ids` than model `id`'s cache in memory,
   * make it the model's cache. Resolves to how many tokens it brought (0: none; never fails: a
   * cache that cannot be read is a miss).
   * @param {string} id @param {ArrayLike<number>} ids the prompt's token ids
   * @returns {Promise<number>}
   */
  async restorePrefix(id, ids) {
    const model = this.store.chat(id);
    if (!model.cacheKey || !this.caches.settings.enabled || ids.length < 2) return 0;
    try {
      const inMemory = Math.min(commonPrefix(model.sequence, ids), ids.length - 1);
      const found = await this.caches.best(model.cacheKey, ids);
      const n = Math.min(found?.common ?? 0, ids.length - 1);
      if (!found || n < inMemory + RESTORE_MARGIN) return 0;
      const tensors = await this.caches.read(found.meta);
      if (!tensors || tensors.length !== model.cacheInputs.length) return 0;
      model.adopt(found.meta.ids, tensors);
      if (model.truncate(n) !== n) return 0; // the kept tokens past the common prefix cut off
      LOGIT_PROCESSORS.get(id)?.resetState();
      return n;
    } catch {
      return 0;
    }
  }

  /**
   * After a request: keep model `id`'s cache beyond the page (written in the background; a GPU cache
   * is read back first, before this resolves, so later passes may free its buffers).
   * @param {string} id
   */
  async remember(id) {
    const model = this.store.chat(id);
    const key = model.cacheKey;
    const { enabled, min_tokens: least } = this.caches.settings;
    if (!key || !enabled || model.sequence.length < least) return;
    try {
      const { ids, tensors } = await model.snapshot();
      this.caches.save(key, id, ids, tensors);
    } catch {
      // nothing kept: the next visit runs the prompt
    }
  }

  /** The kept caches, most recently used first, as JSON. */
  async list() {
    return JSON.stringify(await this.caches.list());
  }

  /** Delete kept caches (`idsJson`: a list of ids, or null for all); resolves to how many. @param {string} idsJson */
  async delete(idsJson) {
    return this.caches.delete(JSON.parse(idsJson));
  }

  /** Change the settings (`changesJson`: {enabled, budget_bytes, min_tokens}, nulls kept); the settings as JSON. @param {string} changesJson */
  async configure(changesJson) {
    const settings = this.caches.configure(JSON.parse(changesJson));
    await this.caches.evict();
    return JSON.stringify(settings);
  }
}
