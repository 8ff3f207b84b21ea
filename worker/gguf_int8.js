// A GGUF tensor requantized for the graph's compressed forms (csi.gguf.graph, FORMS), the rows
// dequantized a tile at a time (gguf_dequant.js), so no float32 copy of the whole tensor is ever held:
// int8 per row (max |w| / 127 a row) for the int8 form; 8-bit blocks of 32 with a scale and zero point
// each for the nbits8 form (MatMulNBits). Rounding is half to even, as numpy's rint, in float32.

import { dequantize } from "./gguf_dequant.js";

const TILE = 64;

/** @param {number} x @returns {number} x rounded to the nearest integer, ties to even */
function rint(x) {
  const r = Math.round(x);
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/**
 * Requantize `rows` x `cols` values of ggml type `type` (the tensor's bytes `src`) into `out` at byte
 * `at` (int8 `[rows, cols]`, or `[cols, rows]` with `transpose`) and their float32 scales, one a
 * row, into `scales` at float index `scaleAt`.
 * @param {number} type @param {Uint8Array} src @param {number} rows @param {number} cols
 * @param {Int8Array} out @param {number} at @param {Float32Array} scales @param {number} scaleAt
 * @param {{rowOrder?: ArrayLike<number>, transpose?: boolean}} [options]
 */
export function requantizeInt8(type, src, rows, cols, out, at, scales, scaleAt, options = {}) {
  eachRow(type, src, rows, cols, options.rowOrder, (row, r) => {
    let max = 0;
    for (let c = 0; c < cols; c++) max = Math.max(max, Math.abs(row[c]));
    const scale = Math.fround(max / 127) || 1;
    scales[scaleAt + r] = scale;
    for (let c = 0; c < cols; c++) {
      const q = Math.max(-127, Math.min(127, rint(Math.fround(row[c] / scale))));
      out[options.transpose ? at + c * rows + r : at + r * cols + c] = q;
    }
  });
}

/**
 * Call `fn` with each row of a tensor, dequantized a tile of rows at a time, and its index.
 * @param {number} type @param {Uint8Array} src @param {number} rows @param {number} cols
 * @param {ArrayLike<number>|undefined} order row `i` is stored row `order[i]`
 * @param {(row: Float32Array, r: number) => void} fn
 */
function eachRow(type, src, rows, cols, order, fn) {
  const scratch = new Float32Array(Math.min(TILE, rows) * cols);
  for (let r0 = 0; r0 < rows; r0 += TILE) {
    const n = Math.min(TILE, rows - r0);
    const picked = Array.from({ length: n }, (_, i) => (order ? order[r0 + i] : r0 + i));
    dequantize(type, src, n, cols, scratch, 0, { rowOrder: picked });
    for (let i = 0; i < n; i++) fn(scratch.subarray(i * cols, (i + 1) * cols), r0 + i);
  }
}

const BLOCK = 32;

/**
 * Requantize `rows` x `cols` values of ggml type `type` into 8-bit blocks of 32 (each row zero-padded
 * to whole blocks): over each block's range with 0 in it, scale `(hi - lo) / 255` (1 for a block of
 * zeros), zero point `rint(-lo / scale)`, values `rint(v / scale) + zero point` clipped to 0..255.
 * Values go to `out` at byte `at` (`[rows, blocks, 32]`), float32 scales to `scales` from float index
 * `scaleAt`, zero points to `out` at byte `zpAt` (`[rows * blocks]` each).
 * @param {number} type @param {Uint8Array} src @param {number} rows @param {number} cols
 * @param {Uint8Array} out @param {number} at @param {Float32Array} scales @param {number} scaleAt
 * @param {number} zpAt @param {{rowOrder?: ArrayLike<number>}} [options]
 */
export function requantizeBlocks8(type, src, rows, cols, out, at, scales, scaleAt, zpAt, options = {}) {
  const blocks = Math.ceil(cols / BLOCK);
  eachRow(type, src, rows, cols, options.rowOrder, (row, r) => {
    for (let b = 0; b < blocks; b++) {
      const start = b * BLOCK, end = Math.min(cols, start + BLOCK);
      let lo = 0, hi = 0;
      for (let c = start; c < end; c++) { lo = Math.min(lo, row[c]); hi = Math.max(hi, row[c]); }
      const scale = Math.fround(Math.fround(hi - lo) / 255) || 1;
      const zp = Math.max(0, Math.min(255, rint(Math.fround(-lo / scale))));
      const k = r * blocks + b;
      scales[scaleAt + k] = scale;
      out[zpAt + k] = zp;
      const base = at + k * BLOCK;
      for (let c = 0; c < BLOCK; c++) {
        const v = start + c < end ? row[start + c] : 0;
        out[base + c] = Math.max(0, Math.min(255, rint(Math.fround(v / scale)) + zp));
      }
    }
  });
}
