// A GGUF tensor's stored bytes (its rows of ggml blocks) dequantized to float32, bit for bit as
// gguf-py's gguf.quants.dequantize does it, with numpy's float32 operations in numpy's order.
// Every product there is exact in float32: an f16 scale (11 significant bits) times the sub-block's
// integer scale (at most 7 bits) times the quant (at most 5) needs at most 23 bits, and neither
// overflows nor leaves the normal range; so is it in double, and the stores into SC/MN and `out`
// keep it. Only the last sum or difference of a value (Q4_1, Q5_1, Q2_K, Q4_K, Q5_K) rounds: taken
// in double and rounded once by the store into the Float32Array, it is the correctly rounded
// float32 result numpy gives (53 >= 2 * 24 + 2 bits: rounding twice is harmless). A new type whose
// products may not be exact needs Math.fround on them.
// F32, F16 and BF16 values are copied as bit patterns (NaN payloads included), as numpy's views
// and casts keep them. The blocks may start at any byte: scales are read byte by byte.
// Output rows may be taken in another order (a GGUF's permuted Q/K rows) and written transposed;
// the transposed path dequantizes a tile of rows into scratch and writes each column's run of the
// tile in one go, so that writes run along memory.

import { GGML_TYPES } from "./gguf_types.js";

/** ggml type ids this module dequantizes (F32=0, F16=1, Q4_0=2, Q4_1=3, Q5_0=6, Q5_1=7, Q8_0=8, Q2_K=10, Q3_K=11, Q4_K=12, Q5_K=13, Q6_K=14, BF16=30) */
export const DEQUANT_TYPES = new Set([0, 1, 2, 3, 6, 7, 8, 10, 11, 12, 13, 14, 30]);

/**
 * Kernels dequantize `blocks` blocks read from src[p..] into out[o..]: "float" ones into a
 * Float32Array, "bits" ones (F16, BF16) float32 bit patterns into an Int32Array, "bytes" (F32) the
 * stored bytes into a Uint8Array (o counts floats).
 * @typedef {(src: Uint8Array, p: number, blocks: number, out: any, o: number) => void} Kernel
 * @typedef {{kernel: Kernel, kind: "float"|"bits"|"bytes"}} Dequantizer
 */

/** Rows dequantized together on the transposed path. */
const TILE = 64;

/** every float16 bit pattern's float32 bit pattern, and the same as floats (filled on first use) */
let HALF_BITS = new Int32Array(0);
let HALF = new Float32Array(0);

function fillHalves() {
  const bits = new Int32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const sign = (h & 0x8000) << 16;
    const exp = (h >> 10) & 31;
    let frac = h & 0x3ff;
    if (exp === 31) bits[h] = sign | 0x7f800000 | (frac << 13);
    else if (exp) bits[h] = sign | ((exp + 112) << 23) | (frac << 13);
    else if (!frac) bits[h] = sign;
    else {
      let e = 113; // a subnormal: frac * 2^-24, normalized
      while (!(frac & 0x400)) {
        frac <<= 1;
        e--;
      }
      bits[h] = sign | (e << 23) | ((frac & 0x3ff) << 13);
    }
  }
  HALF_BITS = bits;
  HALF = new Float32Array(bits.buffer);
}

/** Per-block scales and minimums of the K-quants' sub-blocks. */
const SC = new Float32Array(16);
const MN = new Float32Array(16);

/** @type {Kernel} */
function f32(src, p, n, out, o) {
  out.set(src.subarray(p, p + n * 4), o * 4);
}

/** @type {Kernel} */
function f16(src, p, n, out, o) {
  const bits = HALF_BITS;
  for (let j = 0; j < n; j++, p += 2) out[o + j] = bits[src[p] | (src[p + 1] << 8)];
}

/** @type {Kernel} */
function bf16(src, p, n, out, o) {
  for (let j = 0; j < n; j++, p += 2) out[o + j] = (src[p] | (src[p + 1] << 8)) << 16;
}

/** @type {Kernel} d * (q - 8) */
function q4_0(src, p, n, out, o) {
  const half = HALF;
  for (let b = 0; b < n; b++, p += 18, o += 32) {
    const d = half[src[p] | (src[p + 1] << 8)];
    for (let j = 0; j < 16; j++) {
      const x = src[p + 2 + j];
      out[o + j] = d * ((x & 15) - 8);
      out[o + j + 16] = d * ((x >> 4) - 8);
    }
  }
}

/** @type {Kernel} d * q + m */
function q4_1(src, p, n, out, o) {
  const half = HALF;
  for (let b = 0; b < n; b++, p += 20, o += 32) {
    const d = half[src[p] | (src[p + 1] << 8)];
    const m = half[src[p + 2] | (src[p + 3] << 8)];
    for (let j = 0; j < 16; j++) {
      const x = src[p + 4 + j];
      out[o + j] = (d * (x & 15)) + m;
      out[o + j + 16] = (d * (x >> 4)) + m;
    }
  }
}

/** @type {Kernel} d * (q - 16), the fifth bits in a little-endian uint32 */
function q5_0(src, p, n, out, o) {
  const half = HALF;
  for (let b = 0; b < n; b++, p += 22, o += 32) {
    const d = half[src[p] | (src[p + 1] << 8)];
    const qh = src[p + 2] | (src[p + 3] << 8) | (src[p + 4] << 16) | (src[p + 5] << 24);
    for (let j = 0; j < 16; j++) {
      const x = src[p + 6 + j];
      out[o + j] = d * (((x & 15) | (((qh >> j) & 1) << 4)) - 16);
      out[o + j + 16] = d * (((x >> 4) | (((qh >> (j + 16)) & 1) << 4)) - 16);
    }
  }
}

/** @type {Kernel} d * q + m */
function q5_1(src, p, n, out, o) {
  const half = HALF;
  for (let b = 0; b < n; b++, p += 24, o += 32) {
    const d = half[src[p] | (src[p + 1] << 8)];
    const m = half[src[p + 2] | (src[p + 3] << 8)];
    const qh = src[p + 4] | (src[p + 5] << 8) | (src[p + 6] << 16) | (src[p + 7] << 24);
    for (let j = 0; j < 16; j++) {
      const x = src[p + 8 + j];
      out[o + j] = d * ((x & 15) | (((qh >> j) & 1) << 4)) + m;
      out[o + j + 16] = d * ((x >> 4) | (((qh >> (j + 16)) & 1) << 4)) + m;
    }
  }
}

/** @type {Kernel} q * d, q an int8 */
function q8_0(src, p, n, out, o) {
  const half = HALF;
  for (let b = 0; b < n; b++, p += 34, o += 32) {
    const d = half[src[p] | (src[p + 1] << 8)];
    for (let j = 0; j < 32; j++) out[o + j] = ((src[p + 2 + j] << 24) >> 24) * d;
  }
}

/**
 * Q2_K (84 bytes: 16 scale bytes, 64 bytes of 2-bit q, d, dmin): value h*128 + s*32 + l is bits
 * 2s of qs[h*32 + l]; its sub-block of 16 is i = h*8 + s*2 + (l >> 4); (d*sc_i) * q - (dmin*m_i).
 * @type {Kernel}
 */
function q2_k(src, p, n, out, o) {
  const half = HALF;
  for (let b = 0; b < n; b++, p += 84, o += 256) {
    const d = half[src[p + 80] | (src[p + 81] << 8)];
    const dmin = half[src[p + 82] | (src[p + 83] << 8)];
    for (let i = 0; i < 16; i++) {
      SC[i] = d * (src[p + i] & 15);
      MN[i] = dmin * (src[p + i] >> 4);
    }
    for (let h = 0; h < 2; h++) {
      const qs = p + 16 + h * 32;
      for (let s = 0; s < 4; s++) {
        const shift = 2 * s;
        const w = o + h * 128 + s * 32;
        const i = h * 8 + s * 2;
        const dl0 = SC[i], ml0 = MN[i], dl1 = SC[i + 1], ml1 = MN[i + 1];
        for (let l = 0; l < 16; l++) out[w + l] = dl0 * ((src[qs + l] >> shift) & 3) - ml0;
        for (let l = 16; l < 32; l++) out[w + l] = dl1 * ((src[qs + l] >> shift) & 3) - ml1;
      }
    }
  }
}

/**
 * Q3_K (110 bytes: hmask 32, qs 64, 12 bytes of 6-bit scales, d): value h*128 + s*32 + l is
 * (bits 2s of qs[h*32 + l]) - 4 * !(bit h*4 + s of hmask[l]), times d * (scale - 32) of its
 * sub-block of 16.
 * @type {Kernel}
 */
function q3_k(src, p, n, out, o) {
  const half = HALF;
  for (let b = 0; b < n; b++, p += 110, o += 256) {
    const d = half[src[p + 108] | (src[p + 109] << 8)];
    const sc = p + 96;
    for (let k = 0; k < 16; k++) {
      const low = k < 8 ? src[sc + k] & 15 : src[sc + k - 8] >> 4;
      const high = (src[sc + 8 + (k & 3)] >> (2 * (k >> 2))) & 3;
      SC[k] = d * ((low | (high << 4)) - 32);
    }
    for (let h = 0; h < 2; h++) {
      const qs = p + 32 + h * 32;
      for (let s = 0; s < 4; s++) {
        const shift = 2 * s;
        const hbit = h * 4 + s;
        const w = o + h * 128 + s * 32;
        const i = h * 8 + s * 2;
        const dl0 = SC[i], dl1 = SC[i + 1];
        for (let l = 0; l < 16; l++) {
          out[w + l] = dl0 * (((src[qs + l] >> shift) & 3) - (((src[p + l] >> hbit) & 1) ^ 1) * 4);
        }
        for (let l = 16; l < 32; l++) {
          out[w + l] = dl1 * (((src[qs + l] >> shift) & 3) - (((src[p + l] >> hbit) & 1) ^ 1) * 4);
        }
      }
    }
  }
}

/**
 * The 8 6-bit scales and minimums of a Q4_K/Q5_K block (gguf-py's Q4_K.get_scale_min), times d
 * and dmin, into SC and MN.
 * @param {Uint8Array} src @param {number} p the block
 */
function kScales(src, p) {
  const half = HALF;
  const d = half[src[p] | (src[p + 1] << 8)];
  const dmin = half[src[p + 2] | (src[p + 3] << 8)];
  const s = p + 4;
  for (let j = 0; j < 4; j++) {
    SC[j] = d * (src[s + j] & 63);
    MN[j] = dmin * (src[s + j + 4] & 63);
    SC[j + 4] = d * ((src[s + j + 8] & 15) | ((src[s + j] >> 2) & 0x30));
    MN[j + 4] = dmin * ((src[s + j + 8] >> 4) | ((src[s + j + 4] >> 2) & 0x30));
  }
}

/**
 * Q4_K (144 bytes: d, dmin, 12 scale bytes, qs 128): sub-block j = 2h + s of 32 values is the
 * nibbles s of qs[h*32 ..]; (d*sc_j) * q - (dmin*m_j).
 * @type {Kernel}
 */
function q4_k(src, p, n, out, o) {
  for (let b = 0; b < n; b++, p += 144, o += 256) {
    kScales(src, p);
    for (let h = 0; h < 4; h++) {
      const qs = p + 16 + h * 32;
      const w = o + h * 64;
      const d0 = SC[2 * h], m0 = MN[2 * h], d1 = SC[2 * h + 1], m1 = MN[2 * h + 1];
      for (let l = 0; l < 32; l++) {
        const x = src[qs + l];
        out[w + l] = (d0 * (x & 15)) - m0;
        out[w + 32 + l] = (d1 * (x >> 4)) - m1;
      }
    }
  }
}

/**
 * Q5_K (176 bytes: d, dmin, 12 scale bytes, qh 32, qs 128): Q4_K's nibbles with bit j of qh[l]
 * as the fifth bit of sub-block j's value l.
 * @type {Kernel}
 */
function q5_k(src, p, n, out, o) {
  for (let b = 0; b < n; b++, p += 176, o += 256) {
    kScales(src, p);
    const qh = p + 16;
    for (let h = 0; h < 4; h++) {
      const qs = p + 48 + h * 32;
      const w = o + h * 64;
      const j0 = 2 * h, j1 = 2 * h + 1;
      const d0 = SC[j0], m0 = MN[j0], d1 = SC[j1], m1 = MN[j1];
      for (let l = 0; l < 32; l++) {
        const x = src[qs + l];
        const y = src[qh + l];
        out[w + l] = d0 * ((x & 15) | (((y >> j0) & 1) << 4)) - m0;
        out[w + 32 + l] = d1 * ((x >> 4) | (((y >> j1) & 1) << 4)) - m1;
      }
    }
  }
}

/**
 * Q6_K (210 bytes: ql 128, qh 64, 16 int8 scales, d): value h*128 + k*32 + l is the low nibble
 * (k < 2) or high nibble of ql[h*64 + (k&1)*32 + l] with bits 2k of qh[h*32 + l] above, minus 32,
 * times d * scale of its sub-block of 16.
 * @type {Kernel}
 */
function q6_k(src, p, n, out, o) {
  const half = HALF;
  for (let b = 0; b < n; b++, p += 210, o += 256) {
    const d = half[src[p + 208] | (src[p + 209] << 8)];
    for (let i = 0; i < 16; i++) SC[i] = d * ((src[p + 192 + i] << 24) >> 24);
    for (let h = 0; h < 2; h++) {
      const ql = p + h * 64;
      const qh = p + 128 + h * 32;
      const w = o + h * 128;
      const i = h * 8;
      for (let l = 0; l < 32; l++) {
        const a = src[ql + l];
        const c = src[ql + 32 + l];
        const y = src[qh + l];
        const u = l >> 4;
        out[w + l] = SC[i + u] * (((a & 15) | ((y & 3) << 4)) - 32);
        out[w + 32 + l] = SC[i + 2 + u] * (((c & 15) | (((y >> 2) & 3) << 4)) - 32);
        out[w + 64 + l] = SC[i + 4 + u] * (((a >> 4) | (((y >> 4) & 3) << 4)) - 32);
        out[w + 96 + l] = SC[i + 6 + u] * (((c >> 4) | (((y >> 6) & 3) << 4)) - 32);
      }
    }
  }
}

/** @type {Map<number, Dequantizer>} */
const KERNELS = new Map([
  [0, { kernel: f32, kind: "bytes" }], [1, { kernel: f16, kind: "bits" }], [30, { kernel: bf16, kind: "bits" }],
  [2, { kernel: q4_0, kind: "float" }], [3, { kernel: q4_1, kind: "float" }], [6, { kernel: q5_0, kind: "float" }],
  [7, { kernel: q5_1, kind: "float" }], [8, { kernel: q8_0, kind: "float" }], [10, { kernel: q2_k, kind: "float" }],
  [11, { kernel: q3_k, kind: "float" }], [12, { kernel: q4_k, kind: "float" }], [13, { kernel: q5_k, kind: "float" }],
  [14, { kernel: q6_k, kind: "float" }],
]);

/** @param {number} type */
function typeOf(type) {
  const t = GGML_TYPES.get(type);
  if (!t) throw new Error(`ggml type ${type} is not a known type`);
  return t;
}

/**
 * Bytes a tensor of `rows` rows of `cols` values of ggml type `type` takes in a GGUF.
 * @param {number} type @param {number} rows @param {number} cols
 */
export function tensorBytes(type, rows, cols) {
  const t = typeOf(type);
  if (!Number.isInteger(cols) || cols < 0 || cols % t.block) {
    throw new Error(`${t.name}: a row of ${cols} values is not whole blocks of ${t.block}`);
  }
  return rows * (cols / t.block) * t.bytes;
}

/** The view of `out` a kind of kernel writes. @param {Float32Array} out @param {string} kind */
function viewFor(out, kind) {
  if (kind === "float") return out;
  if (kind === "bits") return new Int32Array(out.buffer, out.byteOffset, out.length);
  return new Uint8Array(out.buffer, out.byteOffset, out.length * 4);
}

/**
 * Dequantize `rows` rows of `cols` values each, of ggml type `type`, from `src` (the tensor's bytes as stored in the GGUF: row-major, each row `cols/blockSize` blocks) into `out` at `outOffset` (in floats).
 * options.rowOrder: output row i is stored row rowOrder[i] (default identity)
 * options.transpose: write value (r, c) at out[outOffset + c*rows + r] instead of out[outOffset + r*cols + c]
 * @param {number} type @param {Uint8Array} src @param {number} rows @param {number} cols
 * @param {Float32Array} out @param {number} [outOffset]
 * @param {{rowOrder?: ArrayLike<number>|null, transpose?: boolean}} [options]
 */
export function dequantize(type, src, rows, cols, out, outOffset = 0, options = {}) {
  const t = typeOf(type);
  const deq = KERNELS.get(type);
  if (!deq) throw new Error(`${t.name} (ggml type ${type}) cannot be dequantized here`);
  const rowBytes = tensorBytes(type, 1, cols);
  if (!Number.isInteger(rows) || rows < 0) throw new Error(`${t.name}: ${rows} is not a number of rows`);
  const order = options.rowOrder ?? null;
  let stored = rows;
  if (order) {
    if (order.length !== rows) throw new Error(`${t.name}: rowOrder has ${order.length} rows, not ${rows}`);
    stored = 0;
    for (let i = 0; i < rows; i++) {
      const r = order[i];
      if (!Number.isInteger(r) || r < 0) throw new Error(`${t.name}: rowOrder[${i}] = ${r} is not a row`);
      if (r >= stored) stored = r + 1;
    }
  }
  if (src.length < stored * rowBytes) {
    throw new Error(`${t.name}: ${src.length} bytes are too short for ${stored} rows of ${cols} values `
      + `(${stored * rowBytes} bytes)`);
  }
  if (!Number.isInteger(outOffset) || outOffset < 0 || outOffset + rows * cols > out.length) {
    throw new Error(`${t.name}: ${rows}x${cols} values do not fit in ${out.length} floats at ${outOffset}`);
  }
  if (HALF.length === 0) fillHalves();
  const { kernel, kind } = deq;
  const blocks = cols / t.block;
  const at = (/** @type {number} */ i) => (order ? order[i] : i) * rowBytes;
  if (!options.transpose || rows === 1 || cols === 1) {
    // a transposed single row or column is the same run of values
    const dst = viewFor(out, kind);
    for (let i = 0; i < rows; i++) kernel(src, at(i), blocks, dst, outOffset + i * cols);
    return;
  }
  // the tile's rows `pitch` floats apart: a multiple of 4096 bytes would put them in one cache set
  const pitch = cols + 16;
  const scratch = new Float32Array(Math.min(TILE, rows) * pitch);
  const dst = viewFor(scratch, kind);
  const bits = new Int32Array(scratch.buffer);
  const outBits = new Int32Array(out.buffer, out.byteOffset, out.length);
  for (let r0 = 0; r0 < rows; r0 += TILE) {
    const n = Math.min(TILE, rows - r0);
    for (let i = 0; i < n; i++) kernel(src, at(r0 + i), blocks, dst, i * pitch);
    // column c of the tile: rows r0..r0+n-1, one run of out
    for (let c = 0; c < cols; c++) {
      const w = outOffset + c * rows + r0;
      for (let i = 0, s = c; i < n; i++, s += pitch) outBits[w + i] = bits[s];
    }
  }
}
