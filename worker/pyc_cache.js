// The bytecode of the wheels' modules, kept between visits: Pyodide installs the wheels' sources
// afresh at each boot and writes no bytecode, so every boot compiled each module it imports again
// (about a third of the imports' time). The first boot lets Python write the bytecode of what it
// imports, then keeps it in Cache Storage; later boots put it back before importing.
//
// Each file is kept as a checked hash-based pyc (PEP 552): Python compares the hash of the source in
// it with the source it has before using it, so a pyc never stands for a source other than its own.
// The entry is named by the Pyodide version, where the wheels are served and their names; a boot that
// finds a pyc in it whose source changed (a wheel rebuilt under the same name) deletes it, so the
// next boot keeps a fresh one. It is the whole archive or nothing (its length is checked, and every
// file's), and older entries are deleted when a new one is kept.

import { version } from "../vendor/pyodide/pyodide.mjs";
import { digestUrl } from "./pyodide_boot.js";

/** The Cache Storage bucket of the bytecode (one entry: the current one). */
export const PYC_CACHE = "csi-pyc";

/** Python: the site-packages bytecode Python wrote, as checked hash-based pycs, in one archive. */
const HARVEST = `
import importlib.util, json, os, struct, sysconfig
def _harvest():
    root = sysconfig.get_paths()["purelib"]
    files = []
    for d, _, names in os.walk(root):
        if os.path.basename(d) != "__pycache__":
            continue
        for n in sorted(names):
            p = os.path.join(d, n)
            try:
                with open(p, "rb") as f:
                    data = f.read()
                with open(importlib.util.source_from_cache(p), "rb") as f:
                    source = f.read()
            except (OSError, ValueError):
                continue
            if len(data) < 16 or data[:4] != importlib.util.MAGIC_NUMBER:
                continue
            files.append((os.path.relpath(p, root), data[:4] + (3).to_bytes(4, "little")
                          + importlib.util.source_hash(source) + data[16:]))
    head = json.dumps([[r, len(b)] for r, b in files]).encode()
    return struct.pack("<I", len(head)) + head + b"".join(b for _, b in files)
_harvest()
`;

/** Python: whether every restored pyc (paths in `_csi_pycs`) holds the hash of its source. */
const FRESH = `
import importlib.util, os, sysconfig
def _fresh(paths):
    root = sysconfig.get_paths()["purelib"]
    for rel in paths:
        p = os.path.join(root, rel)
        try:
            with open(p, "rb") as f:
                head = f.read(16)
            with open(importlib.util.source_from_cache(p), "rb") as f:
                source = f.read()
        except (OSError, ValueError):
            continue
        if head[8:16] != importlib.util.source_hash(source):
            return False
    return True
_fresh(_csi_pycs)
`;

/**
 * The name of the bytecode of `wheels` (files of the site's wheels/) in the cache.
 * @param {URL} site @param {string[]} wheels @returns {Promise<string>}
 */
export function pycKey(site, wheels) {
  return digestUrl([version, site.href, wheels], "pyc-", new URL("wheels/", site).href);
}

/**
 * The files of an archive (see HARVEST), or null when it is not a whole one.
 * @param {Uint8Array} bytes @returns {Array<[string, Uint8Array]>|null}
 */
export function unpack(bytes) {
  try {
    if (bytes.length < 4) return null;
    const headLength = new DataView(bytes.buffer, bytes.byteOffset, 4).getUint32(0, true);
    /** @type {Array<[string, number]>} */
    const head = JSON.parse(new TextDecoder().decode(bytes.subarray(4, 4 + headLength)));
    let at = 4 + headLength;
    /** @type {Array<[string, Uint8Array]>} */
    const out = [];
    for (const [path, size] of head) {
      if (typeof path !== "string" || !Number.isSafeInteger(size) || size < 16 || path.split("/").includes("..")) return null;
      out.push([path, bytes.subarray(at, at + size)]);
      at += size;
    }
    return at === bytes.length ? out : null;
  } catch {
    return null;
  }
}

/**
 * For one boot: put the kept bytecode back (`restore`, before the imports), and after the imports,
 * keep what Python wrote when there was none (`keep`).
 * @param {any} pyodide @param {URL} site @param {string[]} wheels the wheels installed
 */
export async function pycCache(pyodide, site, wheels) {
  const cache = typeof caches === "undefined" ? null : await caches.open(PYC_CACHE).catch(() => null);
  const key = cache ? await pycKey(site, wheels).catch(() => null) : null;
  /** @type {"used"|"made"|"none"} */
  let use = "none";
  /** @type {string[]} the files restored */
  let restored = [];
  const sys = pyodide.pyimport("sys");
  // read now: the wheels install meanwhile
  const reading = cache && key ? read(cache, key) : Promise.resolve(null);
  return {
    /** Write the kept files into site-packages (Python checks each against its source). */
    async restore() {
      if (!cache || !key) return use;
      const kept = await reading;
      if (kept) {
        const root = pyodide.runPython("import sysconfig; sysconfig.get_paths()['purelib']");
        for (const [path, data] of kept) {
          const file = `${root}/${path}`;
          pyodide.FS.mkdirTree(file.slice(0, file.lastIndexOf("/")));
          pyodide.FS.writeFile(file, data);
        }
        restored = kept.map(([path]) => path);
        use = "used";
      } else {
        sys.dont_write_bytecode = false; // Python writes what it compiles: kept after the imports
        use = "made";
      }
      return use;
    },
    /**
     * After the imports: keep the bytecode Python wrote (when it wrote it), without waiting; or, soon
     * after, check the bytecode restored, and drop the entry when a source changed.
     */
    keep() {
      sys.dont_write_bytecode = true;
      sys.destroy();
      if (use === "used" && cache && key) setTimeout(() => checkFresh(pyodide, cache, key, restored));
      if (use !== "made" || !cache || !key) return;
      const proxy = pyodide.runPython(HARVEST);
      const bytes = proxy.toJs();
      proxy.destroy();
      store(cache, key, bytes);
    },
  };
}

/**
 * Delete the entry `key` when a pyc restored from it (`paths`) is not its source's.
 * @param {any} pyodide @param {Cache} cache @param {string} key @param {string[]} paths
 */
function checkFresh(pyodide, cache, key, paths) {
  try {
    const globals = pyodide.toPy({ _csi_pycs: paths });
    const fresh = pyodide.runPython(FRESH, { globals });
    globals.destroy();
    if (!fresh) cache.delete(key).catch(() => {});
  } catch (err) {
    console.warn("the wheels' bytecode could not be checked:", err);
  }
}

/**
 * The files kept under `key`, when the entry is a whole archive (else null, and the entry deleted).
 * @param {Cache} cache @param {string} key @returns {Promise<Array<[string, Uint8Array]>|null>}
 */
async function read(cache, key) {
  try {
    const r = await cache.match(key);
    if (!r) return null;
    const bytes = new Uint8Array(await r.arrayBuffer());
    const kept = String(bytes.length) === r.headers.get("x-csi-pyc-length") ? unpack(bytes) : null;
    if (!kept) await cache.delete(key);
    return kept;
  } catch {
    return null;
  }
}

/**
 * Store `bytes` under `key`, the other entries (older builds) deleted.
 * @param {Cache} cache @param {string} key @param {Uint8Array} bytes
 */
async function store(cache, key, bytes) {
  try {
    for (const old of await cache.keys()) if (old.url !== key) await cache.delete(old);
    const headers = { "content-type": "application/octet-stream", "x-csi-pyc-length": String(bytes.length) };
    await cache.put(key, new Response(/** @type {BodyInit} */ (bytes), { headers }));
  } catch (err) {
    console.warn("the wheels' bytecode could not be kept:", err);
  }
}
