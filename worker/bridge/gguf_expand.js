// Loading a model imported from a GGUF (gguf_blocks.js): its file expanded here, in the worker.

import { env } from "../../vendor/transformers/transformers.js";
import { EXPANDED_DATA, EXPANDED_GRAPHS, expandBlocks } from "../gguf_blocks.js";

/**
 * Read model `id`'s file (from Cache Storage, where the file is kept as it is, or from the site),
 * expand its blocks, and let transformers.js load the expanded graph with the weights as external
 * data (set in `options`). Returns the file's URL (the key of EXPANDED_GRAPHS to delete once the
 * sessions are made), or null when the file has no blocks to expand.
 * @param {string} id @param {Record<string, any>} options transformers.js's, given the external data
 * @param {(e: any) => void} progress_callback
 * @returns {Promise<string|null>}
 */
export async function expandGGUFBlocks(id, options, progress_callback) {
  const file = "onnx/model.onnx";
  const url = new URL(`${env.localModelPath}${id}/${file}`, new URL("../../", import.meta.url)).href;
  const cache = typeof caches === "undefined" ? null : await caches.open(env.cacheKey);
  let response = await cache?.match(url);
  const cached = !!response;
  response ??= await fetch(url);
  if (!response.ok) throw new Error(`could not read ${url}: HTTP ${response.status}`);
  const said = Number(response.headers.get("content-length")) || 0;
  /** @type {Uint8Array[]} */
  const parts = [];
  let loaded = 0;
  const reader = /** @type {ReadableStream<Uint8Array>} */ (response.body).getReader();
  for (let r = await reader.read(); !r.done; r = await reader.read()) {
    parts.push(r.value);
    loaded += r.value.length;
    progress_callback({ status: "progress", file, loaded, total: Math.max(said, loaded) });
  }
  const bytes = new Uint8Array(loaded);
  parts.reduce((at, p) => (bytes.set(p, at), at + p.length), 0);
  parts.length = 0;
  if (!cached) {
    const headers = { "content-length": String(loaded) };
    await cache?.put(url, new Response(bytes, { headers })).catch(() => {});
  }
  const expanded = expandBlocks(bytes);
  if (!expanded) return null;
  EXPANDED_GRAPHS.set(url, expanded.graph);
  options.session_options = { externalData: [{ path: EXPANDED_DATA, data: expanded.data }] };
  return url;
}
