// Models imported from GGUF files (buildtools/models/gguf_import.py) keep their quantized blocks in the
// ONNX file (Q4_0, Q4_1, Q8_0 as they are; Q5_0, Q5_1 and the K-quants Q2_K..Q6_K unpacked into bit
// planes and per-block integers, as buildtools/models/gguf_blocks.py describes), with nodes that
// onnxruntime would fold into fp32 weights when the session starts.
// Folding keeps every intermediate tensor until it is done (several times the weights' size), so
// this loader expands the blocks itself instead: one pass over typed arrays, writing the fp32
// weights into one external-data buffer, and a graph without the expansion nodes whose weights
// point into that buffer. onnxruntime then copies each weight once. The arithmetic is the graph's,
// in float32, so the weights are bit for bit those the folding makes.

import { encodeVarint, fields, graphField, lengthDelimited } from "./onnx_graph.js";

/**
 * Model files (absolute URL) whose expanded graph transformers.js must be handed instead of the
 * file, while their load is under way (runtime_env.js's cache and hub_fetch.js answer from here).
 * @type {Map<string, Uint8Array>}
 */
export const EXPANDED_GRAPHS = new Map();

/**
 * An expanded graph as a response; its length is said, or transformers.js would size its buffer
 * from the file on the server.
 * @param {Uint8Array} graph
 */
export function graphResponse(graph) {
  return new Response(/** @type {BodyInit} */ (graph), { headers: { "content-length": String(graph.length) } });
}

/** The model property (onnx metadata_props) that lists the expansions. */
export const BLOCKS_KEY = "csi.gguf_blocks";
/** The external-data file name the expanded weights are given. */
export const EXPANDED_DATA = "gguf_expanded.bin";

const MODEL = { graph: 7, metadata: 14 };
const GRAPH = { node: 1, initializer: 5 };
const NODE_OUTPUT = 2;
const TENSOR = { dims: 1, dataType: 2, name: 8, rawData: 9, externalData: 13, dataLocation: 14 };
const FLOAT = 1;
const utf8 = new TextDecoder();
const utf8e = new TextEncoder();

/**
 * @typedef {{out: string, dims: number[], kind?: string, q?: string, d?: string, m?: string|null,
 *   transposed?: boolean, transpose_of?: string, planes?: [string, number, number][], offset?: number,
 *   shape?: [number, number, number], sc?: string|null, sc_signed?: boolean, mn?: string|null,
 *   msc?: string|null, nibbles?: boolean}} Recipe
 */

/** @type {Float32Array|null} every float16 bit pattern as float32 */
let halfTable = null;
function halves() {
  if (!halfTable) {
    halfTable = new Float32Array(65536);
    for (let h = 0; h < 65536; h++) {
      const sign = h & 0x8000 ? -1 : 1;
      const exp = (h >> 10) & 0x1f;
      const frac = h & 0x3ff;
      halfTable[h] = exp === 0 ? sign * frac * 2 ** -24
        : exp === 31 ? (frac ? NaN : sign * Infinity)
        : sign * (1 + frac / 1024) * 2 ** (exp - 15);
    }
  }
  return halfTable;
}

/**
 * The expansions listed in the model's properties, or null for any other model.
 * @param {Uint8Array} buf the model file @returns {Recipe[]|null}
 */
export function blockRecipes(buf) {
  for (const f of fields(buf, 0, buf.length)) {
    if (f.field !== MODEL.metadata || f.wire !== 2) continue;
    let key = "";
    let value = "";
    for (const e of fields(buf, f.start, f.end)) {
      if (e.field === 1) key = utf8.decode(buf.subarray(e.start, e.end));
      else if (e.field === 2) value = utf8.decode(buf.subarray(e.start, e.end));
    }
    if (key === BLOCKS_KEY) return JSON.parse(value);
  }
  return null;
}

/**
 * The raw bytes of the graph's initializers named in `names`.
 * @param {Uint8Array} buf @param {{start: number, end: number}} g @param {Set<string>} names
 */
function rawInitializers(buf, g, names) {
  /** @type {Map<string, Uint8Array>} */
  const out = new Map();
  for (const f of fields(buf, g.start, g.end)) {
    if (f.field !== GRAPH.initializer || f.wire !== 2) continue;
    let name = "";
    let raw = null;
    for (const t of fields(buf, f.start, f.end)) {
      if (t.field === TENSOR.name) name = utf8.decode(buf.subarray(t.start, t.end));
      else if (t.field === TENSOR.rawData) raw = buf.subarray(t.start, t.end);
    }
    if (names.has(name) && raw) out.set(name, raw);
  }
  return out;
}

/** @param {Uint8Array} raw little-endian uint16 values, maybe unaligned */
function u16(raw) {
  return new Uint16Array(raw.slice().buffer);
}

/**
 * Expand one block-quantized weight into `out` (float32, `recipe.dims`), as the graph's nodes do.
 * @param {Recipe} r @param {Map<string, Uint8Array>} raw @param {Float32Array} out
 */
function expand(r, raw, out) {
  const half = halves();
  const kind = /** @type {string} */ (r.kind);
  const q = /** @type {Uint8Array} */ (raw.get(/** @type {string} */ (r.q)));
  if (kind === "F16") {
    const h = u16(q);
    for (let i = 0; i < out.length; i++) out[i] = half[h[i]];
    return;
  }
  const d = u16(/** @type {Uint8Array} */ (raw.get(/** @type {string} */ (r.d))));
  const m = r.m ? u16(/** @type {Uint8Array} */ (raw.get(r.m))) : null;
  // rows: the GGUF tensor's rows; cols: the values along its blocks
  const [rows, cols] = r.transposed ? [r.dims[1], r.dims[0]] : [r.dims[0], r.dims[1]];
  const blocks = cols / 32;
  const signed = kind === "Q8_0" ? new Int8Array(q.buffer, q.byteOffset, q.length) : null;
  for (let row = 0; row < rows; row++) {
    for (let b = 0; b < blocks; b++) {
      const s = r.transposed ? b * rows + row : row * blocks + b;
      const scale = half[d[s]];
      const min = m ? half[m[s]] : 0;
      for (let j = 0; j < 32; j++) {
        const col = b * 32 + j;
        let value;
        if (signed) {
          value = signed[r.transposed ? col * rows + row : row * cols + col];
        } else {
          const k = j & 15;
          const byte = q[r.transposed ? (b * 16 + k) * rows + row : (row * blocks + b) * 16 + k];
          value = j < 16 ? byte & 15 : byte >> 4;
          if (kind === "Q4_0") value -= 8;
        }
        // float32 products and sums, rounded as the graph's Mul and Add round them
        const w = Math.fround(value * scale);
        out[r.transposed ? col * rows + row : row * cols + col] = m ? Math.fround(w + min) : w;
      }
    }
  }
}

/**
 * Expand one weight in the planes layout into `out`, as the graph's nodes do:
 * w = (q - offset) * (d * sc) + mn * msc, each product and sum rounded to float32.
 * Transposed weights (blocks stored with the row axis last) are walked column by column, so that
 * reads and writes both run along memory.
 * @param {Recipe} r @param {Map<string, Uint8Array>} raw @param {Float32Array} out
 */
function expandPlanes(r, raw, out) {
  const half = halves();
  const T = Boolean(r.transposed);
  const get = (/** @type {string} */ name) => /** @type {Uint8Array} */ (raw.get(name));
  // rows: the GGUF tensor's rows; cols: the values along its blocks
  const [rows, cols] = T ? [r.dims[1], r.dims[0]] : [r.dims[0], r.dims[1]];
  const [supers, subs, group] = /** @type {[number, number, number]} */ (r.shape);
  // at most two planes (4+2, 4+1, 2+1 bits, or one); a missing second plane has no bits
  const planes = /** @type {[string, number, number][]} */ (r.planes);
  const [nameA, bitsA, shiftA] = planes[0];
  const [nameB, bitsB, shiftB] = planes[1] ?? [nameA, 0, 0];
  const [a, b] = [get(nameA), get(nameB)];
  const [widthA, widthB] = [(cols * bitsA) / 8, (cols * bitsB) / 8];
  const [maskA, maskB] = [(1 << bitsA) - 1, (1 << bitsB) - 1];
  // byte c of an n-bit plane holds columns c + k * width, at bits k * n
  const byteA = new Int32Array(cols);
  const bitA = new Uint8Array(cols);
  const byteB = new Int32Array(cols);
  const bitB = new Uint8Array(cols);
  for (let col = 0; col < cols; col++) {
    byteA[col] = col % widthA;
    bitA[col] = Math.floor(col / widthA) * bitsA;
    if (bitsB) {
      byteB[col] = col % widthB;
      bitB[col] = Math.floor(col / widthB) * bitsB;
    }
  }
  const offset = /** @type {number} */ (r.offset);
  const d = u16(get(/** @type {string} */ (r.d)));
  const scRaw = r.sc ? get(r.sc) : null;
  const sc = scRaw && r.sc_signed ? new Int8Array(scRaw.buffer, scRaw.byteOffset, scRaw.length) : scRaw;
  const mn = r.mn ? u16(get(r.mn)) : null;
  const msc = r.msc ? get(r.msc) : null;
  /** The scale and minimum of the row's sub-block `k` (k = s * subs + u), into `at`. */
  const block = (/** @type {number} */ row, /** @type {number} */ k, /** @type {Float32Array} */ scales,
    /** @type {Float32Array} */ mins, /** @type {number} */ at) => {
    const s = Math.floor(k / subs);
    const di = T ? s * rows + row : row * supers + s;
    const ui = T ? k * rows + row : row * supers * subs + k;
    // Q2_K: the sub-block's 4-bit scale and minimum share a byte
    scales[at] = sc ? Math.fround(half[d[di]] * (r.nibbles ? sc[ui] & 15 : sc[ui])) : half[d[di]];
    if (mn) mins[at] = msc ? Math.fround(half[mn[di]] * (r.nibbles ? msc[ui] >> 4 : msc[ui])) : half[mn[di]];
  };
  if (T) {
    // blocks [.., rows]: for each column, every row in turn
    const scales = new Float32Array(rows);
    const mins = new Float32Array(rows);
    for (let col = 0; col < cols; col++) {
      if (col % group === 0) for (let row = 0; row < rows; row++) block(row, col / group, scales, mins, row);
      const [pa, sa, pb, sb] = [byteA[col] * rows, bitA[col], byteB[col] * rows, bitB[col]];
      const o = col * rows;
      for (let row = 0; row < rows; row++) {
        let q = ((a[pa + row] >> sa) & maskA) << shiftA;
        if (bitsB) q += ((b[pb + row] >> sb) & maskB) << shiftB;
        const w = Math.fround((q - offset) * scales[row]);
        out[o + row] = mn ? Math.fround(w + mins[row]) : w;
      }
    }
    return;
  }
  const scales = new Float32Array(1);
  const mins = new Float32Array(1);
  for (let row = 0; row < rows; row++) {
    const [pa, pb, o] = [row * widthA, row * widthB, row * cols];
    for (let col = 0; col < cols; col++) {
      if (col % group === 0) block(row, col / group, scales, mins, 0);
      let q = ((a[pa + byteA[col]] >> bitA[col]) & maskA) << shiftA;
      if (bitsB) q += ((b[pb + byteB[col]] >> bitB[col]) & maskB) << shiftB;
      const w = Math.fround((q - offset) * scales[0]);
      out[o + col] = mn ? Math.fround(w + mins[0]) : w;
    }
  }
}

/** @param {Float32Array} src @param {number[]} dims the output's [a, b] @param {Float32Array} out */
function transpose(src, dims, out) {
  const [a, b] = dims;
  for (let i = 0; i < b; i++) for (let j = 0; j < a; j++) out[j * b + i] = src[i * a + j];
}

/** A TensorProto naming `location` bytes [offset, offset + length) as its data. */
function externalTensor(/** @type {string} */ name, /** @type {number[]} */ dims, /** @type {number} */ offset,
  /** @type {number} */ length) {
  const entry = (/** @type {string} */ k, /** @type {string} */ v) => lengthDelimited(TENSOR.externalData,
    concat([lengthDelimited(1, utf8e.encode(k)), lengthDelimited(2, utf8e.encode(v))]));
  return concat([
    ...dims.map((x) => Uint8Array.from([TENSOR.dims * 8, ...encodeVarint(x)])),
    Uint8Array.from([TENSOR.dataType * 8, FLOAT]),
    lengthDelimited(TENSOR.name, utf8e.encode(name)),
    entry("location", EXPANDED_DATA), entry("offset", String(offset)), entry("length", String(length)),
    Uint8Array.from([TENSOR.dataLocation * 8, 1]),
  ]);
}

/** @param {Uint8Array[]} parts */
function concat(parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let pos = 0;
  for (const p of parts) {
    out.set(p, pos);
    pos += p.length;
  }
  return out;
}

/**
 * The model with its blocks expanded: a graph without the expansion nodes and the blocks, whose
 * expanded weights are external data, and that data. Null for a model without blocks.
 * @param {Uint8Array} buf the model file
 * @returns {{graph: Uint8Array, data: Uint8Array}|null}
 */
export function expandBlocks(buf) {
  const recipes = blockRecipes(buf);
  if (!recipes) return null;
  const g = graphField(buf);
  const sources = new Set(recipes.flatMap((r) => [r.q, r.d, r.m, r.sc, r.mn, r.msc, ...(r.planes ?? []).map((p) => p[0])])
    .filter((x) => typeof x === "string"));
  const raw = rawInitializers(buf, g, /** @type {Set<string>} */ (sources));
  const sizes = recipes.map((r) => r.dims[0] * r.dims[1] * 4);
  /** @type {number[]} */
  const offsets = [];
  let total = 0;
  for (const size of sizes) {
    offsets.push(total);
    total += Math.ceil(size / 64) * 64;
  }
  const data = new Uint8Array(total);
  /** @type {Map<string, Float32Array>} */
  const made = new Map();
  recipes.forEach((r, i) => {
    const out = new Float32Array(data.buffer, offsets[i], sizes[i] / 4);
    if (r.transpose_of) transpose(/** @type {Float32Array} */ (made.get(r.transpose_of)), r.dims, out);
    else if (r.planes) expandPlanes(r, raw, out);
    else expand(r, raw, out);
    made.set(r.out, out);
  });
  const outs = new Set(recipes.map((r) => r.out));
  /** @type {Uint8Array[]} */
  const kept = [];
  for (const f of fields(buf, g.start, g.end)) {

    if (f.field === GRAPH.node && f.wire === 2) {
      let drop = false;
      for (const n of fields(buf, f.start, f.end)) {
        if (n.field !== NODE_OUTPUT) continue;
        const name = utf8.decode(buf.subarray(n.start, n.end));
        drop ||= outs.has(name) || name.startsWith("gguf/");
      }
      if (drop) continue;
    } else if (f.field === GRAPH.initializer && f.wire === 2) {
      let name = "";
      for (const t of fields(buf, f.start, f.end)) {
        if (t.field === TENSOR.name) name = utf8.decode(buf.subarray(t.start, t.end));
      }
      if (name.startsWith("gguf/")) continue;
    }
    kept.push(buf.subarray(f.tagStart, f.end));
  }
  recipes.forEach((r, i) => kept.push(lengthDelimited(GRAPH.initializer, externalTensor(r.out, r.dims, offsets[i], sizes[i]))));
  const graph = concat(kept);
  const head = [...encodeVarint(MODEL.graph * 8 + 2), ...encodeVarint(graph.length)];
  const model = concat([buf.subarray(0, g.tagStart), Uint8Array.from(head), graph, buf.subarray(g.end)]);
  return { graph: model, data };
}
