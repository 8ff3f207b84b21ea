// Booting Pyodide from a memory snapshot: the first visit boots it as usual and keeps a copy of its
// memory as Python has just started (before any wheel or import of ours: no JS object of ours, no
// dynamic library is in it yet) in Cache Storage; later visits restore that memory instead of
// starting Python again (about a second less of this worker's thread, which also has the model's
// ONNX session to make).
//
// An entry is named by the digests site-manifest.json gives Pyodide's files and by where they are
// served from, so a new Pyodide or a moved site never restores an old one; a site without the
// manifest (an app built with the npm package) boots without snapshots. An entry is the whole
// snapshot or nothing (Cache Storage keeps a body once it has it all), its length is checked, and
// Pyodide checks the snapshot's magic number and build id: an entry that fails is deleted and Python
// boots as usual.

import { loadPyodide, version } from "../vendor/pyodide/pyodide.mjs";

/** The Cache Storage bucket of the snapshots (one entry: the current one). */
export const SNAPSHOT_CACHE = "csi-pyodide-snapshot";
/** Pyodide's files, as site-manifest.json names them: what a snapshot depends on. */
const FILES = ["pyodide.asm.mjs", "pyodide.asm.wasm", "pyodide.mjs", "python_stdlib.zip", "pyodide-lock.json"];

/**
 * How this worker's Python started: from a snapshot (`used`), as usual with a snapshot kept for the
 * next visits (`made`), or as usual (`none`: no manifest, no Cache Storage, or it failed).
 * @typedef {"used" | "made" | "none"} SnapshotUse
 */

/**
 * The snapshot's name in the cache for the Pyodide at `indexURL`: a URL made of the digest of the
 * Pyodide version, `indexURL` and the manifest's digests of Pyodide's files; null when the manifest
 * does not list them all.
 * @param {string} indexURL @param {URL} site the site's base (the manifest's paths are relative to it)
 * @param {Record<string, string>} files the manifest's `files`
 * @returns {Promise<string|null>}
 */
export async function snapshotKey(indexURL, site, files) {
  const prefix = new URL(indexURL).pathname.slice(site.pathname.length);
  const digests = FILES.map((f) => files[prefix + f]);
  if (digests.some((d) => typeof d !== "string")) return null;
  return digestUrl([version, indexURL, digests], "snapshot-", indexURL);
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

/** @type {Map<string, Promise<Record<string, string>|null>>} by site */
const manifests = new Map();

/**
 * The digests site-manifest.json gives the site's files by path (null without a manifest), read once.
 * @param {URL} site @returns {Promise<Record<string, string>|null>}
 */
export function manifestFiles(site) {
  let files = manifests.get(site.href);
  if (!files) {
    files = fetch(new URL("site-manifest.json", site)).then(async (r) => {
      if (!r.ok) return null;
      const manifest = await r.json();
      return { ...manifest.lazy, ...manifest.files };
    }).catch(() => null);
    manifests.set(site.href, files);
  }
  return files;
}

/**
 * The key of this site's snapshot, from its site-manifest.json (null without one).
 * @param {string} indexURL @param {URL} site @returns {Promise<string|null>}
 */
async function keyFor(indexURL, site) {
  const files = await manifestFiles(site);
  return files ? snapshotKey(indexURL, site, files).catch(() => null) : null;
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
 * @param {string} indexURL where Pyodide's files are @param {URL} site the site's base
 * @returns {Promise<{pyodide: any, snapshot: SnapshotUse}>}
 */
export async function bootPyodide(indexURL, site) {
  const cache = typeof caches === "undefined" ? null : await caches.open(SNAPSHOT_CACHE).catch(() => null);
  const key = cache ? await keyFor(indexURL, site) : null;
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
