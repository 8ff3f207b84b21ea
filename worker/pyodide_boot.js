// Booting Pyodide from a memory snapshot: the first visit boots it as usual and keeps a copy of its
// memory as Python has just started (before any wheel or import of ours: no JS object of ours, no
// dynamic library is in it yet) in Cache Storage; later visits restore that memory instead of
// starting Python again (about a second less of this worker's thread, which also has the model's
// ONNX session to make).
//
// An entry is named by the Pyodide version and where its files are served from, so a new Pyodide or a
// moved site never restores an old one. An entry is the whole snapshot or nothing (Cache Storage
// keeps a body once it has it all), its length is checked, and Pyodide checks the snapshot's magic
// number and build id: an entry that fails is deleted and Python boots as usual.

import { loadPyodide, version } from "../vendor/pyodide/pyodide.mjs";

/** The Cache Storage bucket of the snapshots (one entry: the current one). */
export const SNAPSHOT_CACHE = "csi-pyodide-snapshot";

/**
 * How this worker's Python started: from a snapshot (`used`), as usual with a snapshot kept for the
 * next visits (`made`), or as usual (`none`: no Cache Storage, or it failed).
 * @typedef {"used" | "made" | "none"} SnapshotUse
 */

/**
 * The snapshot's name in the cache for the Pyodide at `indexURL`: a URL made of the digest of the
 * Pyodide version and `indexURL` (Pyodide's files of one version are the same files; Pyodide itself
 * refuses a snapshot of another build).
 * @param {string} indexURL @returns {Promise<string>}
 */
export function snapshotKey(indexURL) {
  return digestUrl([version, indexURL], "snapshot-", indexURL);
}

/**
 * A URL under `base` named `prefix` and the SHA-256 of `parts` (as JSON).
 * @param {unknown} parts @param {string} prefix @param {string} base @returns {Promise<string>}
 */
export async function digestUrl(parts, prefix, base) {
  const text = JSON.stringify(parts);
  const hash = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
  const hex = Array.from(hash, (b) => b.toString(16).padStart(2, "0")).join("");
  return new URL(`${prefix}${hex}.bin`, base).href;
}

/**
 * The snapshot kept under `key`, whole (its length is the one it was stored with), else null (and a
 * wrong entry deleted).
 * @param {Cache} cache @param {string} key @returns {Promise<Uint8Array|null>}
 */
async function kept(cache, key) {
  const r = await cache.match(key);
  if (!r) return null;
  const bytes = new Uint8Array(await r.arrayBuffer());
  if (bytes.length > 0 && String(bytes.length) === r.headers.get("x-csi-snapshot-length")) return bytes;
  await cache.delete(key);
  return null;
}

/**
 * Pyodide started (from a snapshot when there is one for this site), and how.
 * @param {string} indexURL where Pyodide's files are
 * @returns {Promise<{pyodide: any, snapshot: SnapshotUse}>}
 */
export async function bootPyodide(indexURL) {
  const cache = typeof caches === "undefined" ? null : await caches.open(SNAPSHOT_CACHE).catch(() => null);
  const key = cache ? await snapshotKey(indexURL).catch(() => null) : null;
  if (!cache || !key) return { pyodide: await loadPyodide({ indexURL }), snapshot: "none" };
  const snapshot = await kept(cache, key).catch(() => null);
  if (snapshot) {
    try {
      return { pyodide: await loadPyodide({ indexURL, _loadSnapshot: snapshot }), snapshot: "used" };
    } catch (err) {
      console.warn("Python's snapshot could not be restored; booting without it:", err);
      await cache.delete(key).catch(() => {});
    }
  }
  const pyodide = await loadPyodide({ indexURL, _makeSnapshot: true });
  let made;
  try {
    made = pyodide.makeMemorySnapshot();
  } catch (err) {
    console.warn("no snapshot of Python's memory:", err);
    return { pyodide, snapshot: "none" };
  }
  keep(cache, key, made); // not awaited: the boot goes on
  return { pyodide, snapshot: "made" };
}

/**
 * Store `bytes` under `key`, the other entries (older builds) deleted.
 * @param {Cache} cache @param {string} key @param {Uint8Array} bytes
 */
async function keep(cache, key, bytes) {
  try {
    for (const old of await cache.keys()) if (old.url !== key) await cache.delete(old);
    const headers = { "content-type": "application/octet-stream", "x-csi-snapshot-length": String(bytes.length) };
    await cache.put(key, new Response(/** @type {BodyInit} */ (bytes), { headers }));
  } catch (err) {
    console.warn("Python's snapshot could not be kept:", err);
  }
}
