// Reads GGUF files' headers with worker/gguf_reader.js, through byte ranges of the files (fs), and
// prints one JSON list: per file {header, types, bytesRead} or {error: {name, message}}. BigInts are
// written {"$int": "digits"}, NaN and infinities {"$float": "NaN"}, typed arrays as lists.
// Usage: node tests/support/gguf_read.mjs FILE...

import { open } from "node:fs/promises";
import { readGGUFHeader, tensorTypes } from "../../worker/gguf_reader.js";

/** @param {unknown} v @returns {unknown} */
function plain(v) {
  if (typeof v === "bigint") return { $int: String(v) };
  if (typeof v === "number" && !Number.isFinite(v)) return { $float: String(v) };
  if (ArrayBuffer.isView(v)) return Array.from(/** @type {ArrayLike<unknown>} */ (/** @type {unknown} */ (v)), plain);
  if (Array.isArray(v)) return v.map(plain);
  if (v instanceof Map) return Object.fromEntries([...v].map(([k, x]) => [k, plain(x)]));
  if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  return v;
}

/** @param {string} path */
async function readOne(path) {
  let bytesRead = 0;
  /** @type {import("node:fs/promises").FileHandle|null} */
  let file = null;
  try {
    file = await open(path);
    const size = (await file.stat()).size;
    const source = {
      size,
      /** @param {number} offset @param {number} length */
      read: async (offset, length) => {
        const bytes = new Uint8Array(length);
        const { bytesRead: n } = await /** @type {import("node:fs/promises").FileHandle} */ (file).read(bytes, 0, length, offset);
        bytesRead += n;
        return bytes.subarray(0, n);
      },
    };
    const header = await readGGUFHeader(source);
    return { header: plain(header), types: plain(tensorTypes(header)), bytesRead };
  } catch (e) {
    const err = /** @type {Error} */ (e);
    return { error: { name: err.name, message: err.message, isGGUFError: err.constructor.name === "GGUFError" } };
  } finally {
    await file?.close();
  }
}

const out = [];
for (const path of process.argv.slice(2)) out.push(await readOne(path));
process.stdout.write(JSON.stringify(out));
