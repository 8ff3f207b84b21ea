// A GGUF file's header read in the worker: its version, metadata (key -> value) and tensor table
// (name, dims, ggml type, absolute offset and size in bytes), read through byte ranges so that it
// works the same on a File (its slices), an HTTP range fetch or bytes in memory. The tensor data
// itself is not read. Any file is taken as possibly hostile: every length, count and offset is
// checked against the bytes the file has (and the limits below) before anything is allocated or
// looped over, and whatever is wrong is a GGUFError naming what and where, never a RangeError.
//
// Format (GGUF v2/v3, little-endian): "GGUF", u32 version, u64 tensor count, u64 key count; the
// key/value pairs (string key, u32 value type, value; a string is a u64 length and UTF-8 bytes, an
// array a u32 item type, a u64 count and the items); the tensor infos (string name, u32 n_dims,
// u64 dims[n_dims] (the row first), u32 ggml type, u64 offset into the data); padding up to
// `general.alignment` (32 if absent); the data.

import { GGML_TYPES, VALUE_TYPES } from "./gguf_types.js";

/** What this reader accepts at most. Real files stay far below: SmolLM2's header is ~2 MB, the
 * largest vocabularies hold ~260k tokens, GGUF tensor names are at most 63 bytes (llama.cpp). */
export const GGUF_LIMITS = Object.freeze({
  headerBytes: 256 * 2 ** 20, // metadata + tensor table
  stringBytes: 16 * 2 ** 20, // one metadata string (a chat template is ~10 kB)
  keyBytes: 65535, // one key (the spec's limit)
  nameBytes: 63, // one tensor name (llama.cpp's GGML_MAX_NAME - 1)
  keys: 2 ** 20,
  tensors: 2 ** 20,
  items: 2 ** 24, // strings, bools and arrays inside metadata arrays, all keys together
  depth: 8, // arrays of arrays of ...
  dims: 4, // GGML_MAX_DIMS
});
const CHUNK = 2 ** 20; // bytes read at once
const MAGIC = 0x46554747; // "GGUF" as a little-endian u32
const DEFAULT_ALIGNMENT = 32;
const SCALAR_BYTES = [1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8];
const [STRING, ARRAY] = [8, 9];
const LITTLE_HOST = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** A GGUF file this reader refuses: truncated, inconsistent or past its limits. */
export class GGUFError extends Error {
  /** @param {string} message */
  constructor(message) {
    super(message);
    this.name = "GGUFError";
  }
}

/**
 * @typedef {{size: number, read: (offset: number, length: number) => Promise<Uint8Array>}} ByteSource
 *   a file's size and a way to read `length` bytes at `offset` (always within the size)
 * @typedef {number|bigint|boolean|string|GGUFArray} GGUFValue
 *   integers are numbers, 64-bit ones BigInt when past Number.MAX_SAFE_INTEGER
 * @typedef {Uint8Array|Int8Array|Uint16Array|Int16Array|Uint32Array|Int32Array|Float32Array|Float64Array
 *   |BigUint64Array|BigInt64Array|boolean[]|string[]|GGUFValue[]} GGUFArray
 *   numeric arrays are typed arrays (64-bit ones BigInt arrays), others JS arrays
 * @typedef {{name: string, dims: number[], type: number, typeName: string, offset: number, size: number}} GGUFTensor
 *   dims as in the file (the row's length first); offset absolute in the file; size in bytes
 * @typedef {{version: number, alignment: number, architecture: string|null, metadata: Map<string, GGUFValue>,
 *   metadataTypes: Map<string, string>, tensors: GGUFTensor[], dataOffset: number, fileSize: number}} GGUFHeader
 *   metadataTypes: each key's GGUF type, e.g. "uint32", "array<string>", "array<array<int32>>"
 */

/** @param {Blob} blob @returns {ByteSource} a File or Blob, read by slices */
export function blobSource(blob) {
  return { size: blob.size, read: async (offset, length) => new Uint8Array(await blob.slice(offset, offset + length).arrayBuffer()) };
}

/** @param {Uint8Array} bytes @returns {ByteSource} bytes in memory */
export function bytesSource(bytes) {
  return { size: bytes.length, read: async (offset, length) => bytes.subarray(offset, offset + length) };
}

/** Reads the header through byte ranges, with the position and what it reads, for the errors. */
class Cursor {
  /** @param {ByteSource} source */
  constructor(source) {
    this.source = source;
    this.size = source.size;
    this.pos = 0;
    this.start = 0;
    /** @type {Uint8Array<ArrayBufferLike>} */
    this.bytes = new Uint8Array(0);
    /** @type {DataView<ArrayBufferLike>} */
    this.view = new DataView(this.bytes.buffer);
    /** @type {string} what is being read, for the errors */
    this.what = "the header";
    this.items = 0;
  }

  /** @param {string} problem */
  fail(problem) {
    return new GGUFError(`${this.what}: ${problem}`);
  }

  get left() {
    return this.size - this.pos;
  }

  /** Makes the `n` bytes at the position readable. @param {number} n */
  async need(n) {
    if (this.pos + n <= this.start + this.bytes.length) return;
    if (n > this.left) {
      throw this.fail(`truncated: ${n} bytes needed at offset ${this.pos}, the file ends at ${this.size}`);
    }
    if (this.pos + n > GGUF_LIMITS.headerBytes) {
      throw this.fail(`the header goes past offset ${GGUF_LIMITS.headerBytes} (the limit on a GGUF header's size)`);
    }
    const length = Math.min(Math.max(n, CHUNK), this.size - this.pos, GGUF_LIMITS.headerBytes - this.pos);
    const bytes = await this.source.read(this.pos, length);
    if (!(bytes instanceof Uint8Array) || bytes.length !== length) {
      throw this.fail(`reading ${length} bytes at offset ${this.pos} gave ${bytes?.length ?? "no"} bytes`);
    }
    this.bytes = bytes;
    this.start = this.pos;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  /** The next `n` bytes, already made readable by need(); a view, not a copy. @param {number} n */
  take(n) {
    const at = this.pos - this.start;
    this.pos += n;
    return this.bytes.subarray(at, at + n);
  }

  u32() {
    const v = this.view.getUint32(this.pos - this.start, true);
    this.pos += 4;
    return v;
  }

  u64() {
    const v = this.view.getBigUint64(this.pos - this.start, true);
    this.pos += 8;
    return v;
  }

  /**
   * A count (u64) of things of at least `unit` bytes each, checked against the bytes left.
   * @param {string} things @param {number} unit @param {number} max
   */
  async count(things, unit, max) {
    await this.need(8);
    const at = this.pos;
    const n = this.u64();
    if (n * BigInt(unit) > BigInt(this.left)) {
      throw this.fail(`${n} ${things} said at offset ${at}, more than the ${this.left} bytes left in the file hold`);
    }
    if (n > BigInt(max)) throw this.fail(`${n} ${things} said at offset ${at}, more than the limit of ${max}`);
    return Number(n);
  }

  /** A string: u64 length, UTF-8 bytes. @param {number} max its length at most, in bytes */
  async string(max) {
    const at = this.pos;
    const n = await this.count("bytes of string", 1, max);
    await this.need(n);
    try {
      return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(this.take(n));
    } catch {
      throw this.fail(`the string at offset ${at} is not valid UTF-8`);
    }
  }

  /** @param {number} type @returns {number|bigint|boolean} */
  scalar(type) {
    const v = this.view;
    const at = this.pos - this.start;
    this.pos += SCALAR_BYTES[type];
    switch (type) {
      case 0: return v.getUint8(at);
      case 1: return v.getInt8(at);
      case 2: return v.getUint16(at, true);
      case 3: return v.getInt16(at, true);
      case 4: return v.getUint32(at, true);
      case 5: return v.getInt32(at, true);
      case 6: return v.getFloat32(at, true);
      case 7: return v.getUint8(at) !== 0;
      case 10: return safe(v.getBigUint64(at, true));
      case 11: return safe(v.getBigInt64(at, true));
      default: return v.getFloat64(at, true);
    }
  }

  /**
   * One metadata value of GGUF type `type`, and its type's name.
   * @param {number} type @param {number} depth @returns {Promise<{value: GGUFValue, type: string}>}
   */
  async value(type, depth) {
    if (type === STRING) return { value: await this.string(GGUF_LIMITS.stringBytes), type: "string" };
    if (type === ARRAY) return this.array(depth);
    if (!(type in SCALAR_BYTES)) throw this.fail(`unknown value type ${type} at offset ${this.pos - 4}`);
    await this.need(SCALAR_BYTES[type]);
    return { value: this.scalar(type), type: VALUE_TYPES[type] };
  }

  /** @param {number} depth @returns {Promise<{value: GGUFValue, type: string}>} */
  async array(depth) {
    if (depth >= GGUF_LIMITS.depth) throw this.fail(`arrays nested deeper than ${GGUF_LIMITS.depth} at offset ${this.pos}`);
    await this.need(4);
    const itemAt = this.pos;
    const itemType = this.u32();
    if (!(itemType in VALUE_TYPES)) throw this.fail(`unknown array item type ${itemType} at offset ${itemAt}`);
    const scalarBytes = SCALAR_BYTES[itemType];
    const unit = itemType === STRING ? 8 : itemType === ARRAY ? 12 : scalarBytes;
    const n = await this.count(`array items of type ${VALUE_TYPES[itemType]}`, unit, GGUF_LIMITS.headerBytes);
    if (scalarBytes && itemType !== 7) {
      await this.need(n * scalarBytes);
      const raw = this.take(n * scalarBytes);
      if (!LITTLE_HOST) throw this.fail("numeric arrays are read on little-endian hosts only");
      const TypedArray = TYPED_ARRAYS[itemType];
      return { value: new TypedArray(raw.slice().buffer), type: `array<${VALUE_TYPES[itemType]}>` };
    }
    this.items += n;
    if (this.items > GGUF_LIMITS.items) {
      throw this.fail(`more than ${GGUF_LIMITS.items} strings, bools and arrays in metadata arrays`);
    }
    /** @type {GGUFValue[]} */
    const items = [];
    let type = itemType === ARRAY ? "array" : VALUE_TYPES[itemType];
    for (let i = 0; i < n; i++) {
      const item = await this.value(itemType, depth + 1);
      if (i === 0) type = item.type;
      items.push(item.value);
    }
    return { value: /** @type {GGUFArray} */ (items), type: `array<${type}>` };
  }
}

const TYPED_ARRAYS = [Uint8Array, Int8Array, Uint16Array, Int16Array, Uint32Array, Int32Array, Float32Array, Uint8Array,
  Uint8Array, Uint8Array, BigUint64Array, BigInt64Array, Float64Array];

/** @param {bigint} v */
function safe(v) {
  return v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(v) : v;
}

/**
 * Reads and checks a GGUF file's header: metadata and tensor table (not the tensor data).
 * @param {ByteSource} source see blobSource, bytesSource
 * @returns {Promise<GGUFHeader>}
 * @throws {GGUFError} for any file that is not a well-formed GGUF v2/v3 within GGUF_LIMITS
 */
export async function readGGUFHeader(source) {
  if (!Number.isSafeInteger(source.size) || source.size < 0) throw new GGUFError(`a file size of ${source.size} bytes`);
  const c = new Cursor(source);
  await c.need(8);
  if (c.u32() !== MAGIC) throw new GGUFError("not a GGUF file: it does not begin with \"GGUF\"");
  const version = c.u32();
  if ((version & 0xffff) === 0 && version !== 0) {
    throw new GGUFError(`a big-endian GGUF (version ${version >>> 24}): only little-endian files are read`);
  }
  if (version === 1) throw new GGUFError("a GGUF v1 file: only versions 2 and 3 are read (convert it again)");
  if (version !== 2 && version !== 3) throw new GGUFError(`GGUF version ${version}: only versions 2 and 3 are read`);
  c.what = "the header's counts";
  // a tensor info takes at least 24 bytes (empty name, no dims), a key/value pair at least 13
  const tensorCount = await c.count("tensors", 24, GGUF_LIMITS.tensors);
  const keyCount = await c.count("metadata keys", 13, GGUF_LIMITS.keys);
  if (tensorCount * 24 + keyCount * 13 > c.left) {
    throw c.fail(`${tensorCount} tensors and ${keyCount} keys do not fit in the ${c.left} bytes left`);
  }

  /** @type {Map<string, GGUFValue>} */
  const metadata = new Map();
  /** @type {Map<string, string>} */
  const metadataTypes = new Map();
  for (let i = 0; i < keyCount; i++) {
    c.what = `metadata key #${i} (at offset ${c.pos})`;
    const key = await c.string(GGUF_LIMITS.keyBytes);
    c.what = `metadata key "${key}"`;
    if (metadata.has(key)) throw c.fail("the key appears twice");
    await c.need(4);
    const { value, type } = await c.value(c.u32(), 0);
    metadata.set(key, value);
    metadataTypes.set(key, type);
  }

  let alignment = DEFAULT_ALIGNMENT;
  if (metadata.has("general.alignment")) {
    const a = metadata.get("general.alignment");
    if (metadataTypes.get("general.alignment") !== "uint32" || typeof a !== "number" || a === 0 || (a & (a - 1)) !== 0) {
      throw new GGUFError(`general.alignment is ${a} (${metadataTypes.get("general.alignment")}): a power of two (uint32) is needed`);
    }
    alignment = a;
  }
  const architecture = metadata.get("general.architecture");
  if (architecture !== undefined && typeof architecture !== "string") {
    throw new GGUFError(`general.architecture is a ${metadataTypes.get("general.architecture")}, not a string`);
  }

  /** @type {Array<{name: string, dims: bigint[], type: number, offset: bigint}>} */
  const infos = [];
  for (let i = 0; i < tensorCount; i++) {
    c.what = `tensor #${i} (at offset ${c.pos})`;
    const name = await c.string(GGUF_LIMITS.nameBytes);
    c.what = `tensor "${name}"`;
    await c.need(4);
    const nDims = c.u32();
    if (nDims > GGUF_LIMITS.dims) throw c.fail(`${nDims} dims, more than GGML_MAX_DIMS (${GGUF_LIMITS.dims})`);
    await c.need(nDims * 8 + 12);
    const dims = Array.from({ length: nDims }, () => c.u64());
    infos.push({ name, dims, type: c.u32(), offset: c.u64() });
  }
  const dataOffset = Math.ceil(c.pos / alignment) * alignment;
  const dataSize = Math.max(0, source.size - dataOffset);
  const tensors = infos.map((info) => checkTensor(info, alignment, dataOffset, dataSize));
  checkLayout(tensors);
  return { version, alignment, architecture: architecture ?? null, metadata, metadataTypes, tensors, dataOffset, fileSize: source.size };
}

/**
 * @param {{name: string, dims: bigint[], type: number, offset: bigint}} info
 * @param {number} alignment @param {number} dataOffset @param {number} dataSize
 * @returns {GGUFTensor}
 */
function checkTensor({ name, dims, type, offset }, alignment, dataOffset, dataSize) {
  /** @param {string} problem */
  const fail = (problem) => new GGUFError(`tensor "${name}": ${problem}`);
  const ggml = GGML_TYPES.get(type);
  if (!ggml) throw fail(`unknown ggml type ${type}`);
  const elements = dims.reduce((a, b) => a * b, 1n);
  const shape = dims.join(" x ") || "a scalar";
  if (dims.some((d) => d > BigInt(Number.MAX_SAFE_INTEGER)) || elements > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw fail(`dims ${shape}: too many values`);
  }
  if ((dims[0] ?? 1n) % BigInt(ggml.block) !== 0n) {
    throw fail(`rows of ${dims[0] ?? 1n} values, not whole ${ggml.name} blocks of ${ggml.block}`);
  }
  const size = (elements / BigInt(ggml.block)) * BigInt(ggml.bytes);
  if (offset % BigInt(alignment) !== 0n) throw fail(`offset ${offset} in the data is not a multiple of the alignment ${alignment}`);
  if (offset + size > BigInt(dataSize)) {
    throw fail(`${size} bytes (${shape} ${ggml.name}) at offset ${offset} in the data, past its end (the data holds ${dataSize} bytes)`);
  }
  return { name, dims: dims.map(Number), type, typeName: ggml.name, offset: dataOffset + Number(offset), size: Number(size) };
}

/** No two tensors with one name, no two sharing bytes. @param {GGUFTensor[]} tensors */
function checkLayout(tensors) {
  const names = new Set();
  for (const t of tensors) {
    if (names.has(t.name)) throw new GGUFError(`tensor "${t.name}": the name appears twice`);
    names.add(t.name);
  }
  const placed = tensors.filter((t) => t.size > 0).sort((a, b) => a.offset - b.offset);
  for (let i = 1; i < placed.length; i++) {
    const [a, b] = [placed[i - 1], placed[i]];
    if (b.offset < a.offset + a.size) {
      throw new GGUFError(`tensor "${b.name}" at offset ${b.offset} overlaps tensor "${a.name}" (offsets ${a.offset} to ${a.offset + a.size})`);
    }
  }
}

/** The ggml types a file's tensors use, with how many tensors use each (in order of first use). @param {GGUFHeader} header */
export function tensorTypes(header) {
  /** @type {Map<string, number>} */
  const types = new Map();
  for (const t of header.tensors) types.set(t.typeName, (types.get(t.typeName) ?? 0) + 1);
  return types;
}
