// Loading a model imported from a GGUF (gguf_blocks.js): its file read and expanded in a worker of
// its own (gguf_expand_worker.js), begun early for the page's first load (the preload) so that
// another core expands while this worker boots Python.

import { env } from "../../vendor/transformers/transformers.js";
import { EXPANDED_DATA, EXPANDED_GRAPHS } from "../gguf_blocks.js";

/** @typedef {{graph: Uint8Array, data: Uint8Array}} Expanded */
/**
 * An expansion under way: its result, and where its progress goes (kept until someone listens).
 * @typedef {{result: Promise<Expanded|null>, listen: (fn: (e: any) => void) => void, stop: () => void}} Job
 */

const FILE = "onnx/model.onnx";
const SITE = new URL("../../", import.meta.url);
/** @type {Map<string, Job>} expansions begun before their load asked (by model id) */
const early = new Map();

/** @param {string} id */
function fileUrl(id) {
  return new URL(`${env.localModelPath}${id}/${FILE}`, SITE).href;
}

/**
 * Start reading and expanding model `id`'s file in a worker. With `onlyIfGGUF`, the worker first reads
 * the model's config and does nothing for a model without GGUF blocks.
 * @param {string} id @param {boolean} onlyIfGGUF @returns {Job}
 */
function start(id, onlyIfGGUF) {
  const worker = new Worker(new URL("../gguf_expand_worker.js", import.meta.url), { type: "module" });
  /** @type {((e: any) => void)|null} */
  let listener = null;
  /** @type {any} */
  let last = null;
  const result = /** @type {Promise<Expanded|null>} */ (new Promise((resolve, reject) => {
    worker.onmessage = ({ data }) => {
      if (data && "loaded" in data) {
        const event = { status: "progress", file: FILE, loaded: data.loaded, total: data.total };
        if (listener) listener(event);
        else last = event;
        return;
      }
      worker.terminate();
      if (data && "error" in data) reject(new Error(data.error));
      else resolve(data);
    };
    worker.onerror = (e) => {
      worker.terminate();
      reject(new Error(`the worker expanding ${id} failed: ${e.message}`));
    };
  }));
  result.catch(() => {}); // an early job nobody takes is dropped quietly
  worker.postMessage({ url: fileUrl(id), cacheKey: env.cacheKey,
                       configUrl: onlyIfGGUF ? new URL(`${env.localModelPath}${id}/config.json`, SITE).href : null });
  return {
    result,
    listen: (fn) => {
      listener = fn;
      if (last) fn(last);
    },
    stop: () => worker.terminate(),
  };
}

/** Begin expanding built-in model `id` now, if its config names GGUF blocks (the preload's head start). @param {string} id */
export function beginExpansion(id) {
  if (!early.has(id) && typeof Worker !== "undefined") early.set(id, start(id, true));
}

/** Drop the expansions begun early that no load took. */
export function dropEarlyExpansions() {
  for (const job of early.values()) job.stop();
  early.clear();
}

/**
 * Model `id`'s file expanded (in a worker, or taken from one begun early), with transformers.js set
 * to load the expanded graph with the weights as external data (in `options`). Returns the file's
 * URL (the key of EXPANDED_GRAPHS to delete once the sessions are made), or null when the file has
 * no blocks to expand.
 * @param {string} id @param {Record<string, any>} options transformers.js's, given the external data
 * @param {(e: any) => void} progress_callback
 * @returns {Promise<string|null>}
 */
export async function expandGGUFBlocks(id, options, progress_callback) {
  const job = early.get(id) ?? start(id, false);
  early.delete(id);
  job.listen(progress_callback);
  const expanded = await job.result;
  if (!expanded) return null;
  const url = fileUrl(id);
  EXPANDED_GRAPHS.set(url, expanded.graph);
  options.session_options = { externalData: [{ path: EXPANDED_DATA, data: expanded.data }] };
  return url;
}
