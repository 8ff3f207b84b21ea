// A worker of its own for a GGUF model's file (gguf_blocks.js): read it (Cache Storage, where it is
// kept as it is, or the site), keep it, expand its blocks, so that another core does this while the
// engine's worker boots Python. In: {url, cacheKey, configUrl?} (with configUrl: only if that
// config names GGUF blocks). Out: progress messages {loaded, total}, then {graph, data}
// (transferred), null when there are no blocks, or {error}.

import { expandBlocks } from "./gguf_blocks.js";

/** @param {string} url @param {string} cacheKey @returns {Promise<Uint8Array>} */
async function read(url, cacheKey) {
  const cache = typeof caches === "undefined" ? null : await caches.open(cacheKey);
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
    self.postMessage({ loaded, total: Math.max(said, loaded) });
  }
  const bytes = new Uint8Array(loaded);
  parts.reduce((at, p) => (bytes.set(p, at), at + p.length), 0);
  if (!cached) await cache?.put(url, new Response(bytes, { headers: { "content-length": String(loaded) } })).catch(() => {});
  return bytes;
}

self.onmessage = async ({ data: job }) => {
  try {
    if (job.configUrl) {
      // from transformers.js's cache when a visit kept it (offline), else from the site
      const cache = typeof caches === "undefined" ? null : await caches.open(job.cacheKey);
      const config = await ((await cache?.match(job.configUrl)) ?? (await fetch(job.configUrl))).json();
      if (!config.csi_gguf) {
        self.postMessage(null);
        return;
      }
    }
    const expanded = expandBlocks(await read(job.url, job.cacheKey));
    if (!expanded) {
      self.postMessage(null);
      return;
    }
    const { graph, data } = expanded;
    self.postMessage({ graph, data }, [graph.buffer, data.buffer]);
  } catch (/** @type {any} */ err) {
    self.postMessage({ error: String(err?.message ?? err) });
  }
};
