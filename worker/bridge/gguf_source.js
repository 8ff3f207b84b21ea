// A GGUF file a person opens in the page, with no build step: a URL, a file they picked (a blob: URL
// the page made for it) or a file in the site's models/. Its bytes are kept in Cache Storage as they
// come (a second visit reads them from there; an interrupted download is never kept), read as a Blob
// (on disk, not in memory), its header read by gguf_reader.js, and its weights expanded tensor by
// tensor (gguf_dequant.js) into the buffer the graph Python wrote (csi.gguf.graph) points into.

import { dequantize } from "../gguf_dequant.js";
import { requantizeBlocks8, requantizeInt8 } from "../gguf_int8.js";
import { blobSource, readGGUFHeader } from "../gguf_reader.js";

/** The Cache Storage bucket GGUF files are kept in, by URL. */
export const GGUF_CACHE = "csi-gguf";
const FIRST_RANGE = 4 << 20; // the first bytes asked for: most headers (metadata, vocabulary, tensors) fit
const SITE = new URL("../../", import.meta.url);

/** Whether model id `id` names a GGUF file (its path, or a blob: URL's fragment, ends in .gguf). @param {string} id */
export function isGGUF(id) {
  const [path, fragment = ""] = id.split("#", 2);
  return /\.gguf$/i.test(path.split("?")[0]) || /\.gguf$/i.test(fragment);
}

/** The file's URL (a relative id is the site's). @param {string} id */
export function ggufUrl(id) {
  return new URL(id.split("#")[0], SITE).href;
}

/** A short name for progress and messages. @param {string} id */
export function ggufName(id) {
  const [path, fragment] = id.split("#", 2);
  return decodeURIComponent(fragment || path.split("?")[0].split("/").pop() || id);
}

/**
 * @typedef {(loaded: number, total: number) => void} BytesProgress
 */

/**
 * The file of `id` as a Blob if this browser has it already (a picked file, or one the cache kept);
 * else null.
 * @param {string} id @returns {Promise<Blob|null>}
 */
export async function ggufAtHand(id) {
  const url = ggufUrl(id);
  if (url.startsWith("blob:")) return (await fetch(url)).blob();
  const cache = typeof caches === "undefined" ? null : await caches.open(GGUF_CACHE).catch(() => null);
  return (await (await cache?.match(url))?.blob()) ?? null;
}

/**
 * The file at `id`'s URL read by byte ranges, when its server answers them (null when it does not):
 * the header is read, and the file refused if need be, before the whole file is downloaded.
 * @param {string} id @param {AbortSignal} signal @returns {Promise<import("../gguf_reader.js").ByteSource|null>}
 */
export async function rangeSource(id, signal) {
  const url = ggufUrl(id);
  const first = await fetch(url, { signal, headers: { Range: `bytes=0-${FIRST_RANGE - 1}` } });
  const size = Number(first.headers.get("content-range")?.match(/\/(\d+)$/)?.[1]);
  if (first.status !== 206 || !Number.isSafeInteger(size)) {
    await first.body?.cancel();
    if (!first.ok && first.status !== 416) throw new Error(`could not download ${ggufName(id)}: HTTP ${first.status}`);
    return null;
  }
  const head = new Uint8Array(await first.arrayBuffer());
  return {
    size,
    read: async (offset, length) => {
      if (offset + length <= head.length) return head.subarray(offset, offset + length);
      const r = await fetch(url, { signal, headers: { Range: `bytes=${offset}-${offset + length - 1}` } });
      const bytes = new Uint8Array(await r.arrayBuffer());
      if (r.status !== 206 || bytes.length !== length) {
        throw new Error(`${ggufName(id)}: the server answered ${bytes.length} bytes (HTTP ${r.status}) for ${length} at ${offset}`);
      }
      return bytes;
    },
  };
}

/**
 * The file of `id` (a URL this browser has not kept: {@link ggufAtHand} said so) downloaded into the
 * cache, with progress, and read back as a Blob; into memory where there is no cache or it refuses.
 * @param {string} id @param {AbortSignal} signal @param {BytesProgress} onProgress
 * @returns {Promise<Blob>}
 */
export async function ggufBlob(id, signal, onProgress) {
  const url = ggufUrl(id);
  const cache = typeof caches === "undefined" ? null : await caches.open(GGUF_CACHE).catch(() => null);
  if (cache) {
    const { body, total } = await download(id, signal, onProgress);
    /** @type {Record<string, string>} */
    const headers = { "content-type": "application/octet-stream" };
    if (total) headers["content-length"] = String(total);
    try {
      await cache.put(url, new Response(body, { headers })); // kept only once whole
      const stored = await cache.match(url);
      if (stored) return stored.blob();
    } catch (err) {
      signal.throwIfAborted();
      // a private window's cache, or a full quota: this visit reads the file into memory instead
      console.warn(`${ggufName(id)} could not be kept in this browser's cache (${err}): reading it into memory`);
    }
  }
  return new Response((await download(id, signal, onProgress)).body).blob();
}

/**
 * The file's bytes as they come, counted.
 * @param {string} id @param {AbortSignal} signal @param {BytesProgress} onProgress
 * @returns {Promise<{body: ReadableStream<Uint8Array>, total: number}>}
 */
async function download(id, signal, onProgress) {
  const response = await fetch(ggufUrl(id), { signal });
  if (!response.ok || !response.body) throw new Error(`could not download ${ggufName(id)}: HTTP ${response.status}`);
  const total = Number(response.headers.get("content-length")) || 0;
  let loaded = 0;
  onProgress(0, total);
  const body = response.body.pipeThrough(new TransformStream({
    transform(chunk, out) {
      loaded += chunk.length;
      onProgress(loaded, Math.max(total, loaded));
      out.enqueue(chunk);
    },
  }));
  return { body, total };
}

/**
 * The header as JSON for Python: metadata (numeric arrays as arrays, 64-bit integers as numbers
 * where exact, else strings) and the tensor table.
 * @param {Blob|import("../gguf_reader.js").ByteSource} file @returns {Promise<string>}
 */
export async function headerJson(file) {
  const header = await readGGUFHeader(file instanceof Blob ? blobSource(file) : file);
  /** @type {Record<string, any>} */
  const metadata = {};
  for (const [key, value] of header.metadata) metadata[key] = plain(value);
  const tensors = header.tensors.map((t) => ({ name: t.name, dims: t.dims, type: t.type, offset: t.offset, size: t.size }));
  return JSON.stringify({ metadata, tensors, file_size: header.fileSize });
}

/** @param {any} v @returns {any} */
function plain(v) {
  if (typeof v === "bigint") return Number.isSafeInteger(Number(v)) ? Number(v) : String(v);
  if (ArrayBuffer.isView(v)) return Array.from(/** @type {any} */ (v), plain);
  if (Array.isArray(v)) return v.map(plain);
  return v;
}

/**
 * @typedef {{tensor: string, type: number, offset: number, size: number, rows: number, cols: number,
 *            at: number, row_order: number[]|null, form: string, scale_at: number, zp_at: number}} Weight
 *   one initializer of the graph: the file's tensor (`size` bytes at `offset`) expanded to float32
 *   at byte `at` of the weights buffer, or requantized there: to int8 (form "i8", "i8t") with its
 *   scales at `scale_at`, or to 8-bit blocks (form "b8") with scales at `scale_at` and zero points
 *   at `zp_at` (csi.gguf.graph.Weight)
 */

/**
 * The weights buffer of the graph: every tensor read from the file and expanded.
 * @param {Blob} blob @param {Weight[]} weights @param {number} bytes the buffer's size
 * @param {AbortSignal} signal @param {BytesProgress} onProgress (bytes of the file read)
 * @returns {Promise<Uint8Array>}
 */
export async function expandWeights(blob, weights, bytes, signal, onProgress) {
  const data = new Uint8Array(bytes);
  const floats = new Float32Array(data.buffer);
  const int8 = new Int8Array(data.buffer);
  const total = weights.reduce((n, w) => n + w.size, 0);
  let done = 0;
  for (const w of weights) {
    signal.throwIfAborted();
    if (w.offset + w.size > blob.size) throw new Error(`tensor ${w.tensor} lies past the end of the file`);
    const src = new Uint8Array(await blob.slice(w.offset, w.offset + w.size).arrayBuffer());
    const rowOrder = w.row_order ?? undefined;
    if (w.form === "f32") dequantize(w.type, src, w.rows, w.cols, floats, w.at / 4, { rowOrder });
    else if (w.form === "b8") requantizeBlocks8(w.type, src, w.rows, w.cols, data, w.at, floats, w.scale_at / 4, w.zp_at, { rowOrder });
    else requantizeInt8(w.type, src, w.rows, w.cols, int8, w.at, floats, w.scale_at / 4, { rowOrder, transpose: w.form === "i8t" });
    done += w.size;
    onProgress(done, total);
  }
  return data;
}
