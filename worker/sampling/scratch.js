// Typed arrays reused by every step (a step is synchronous), sized for the largest vocabulary seen.

/** Sets at most this large are sorted and walked in order (selection.js). */
export const SORTED_WALK = 512;
/** Buckets of the histogram over the logit range (selection.js). */
export const BUCKETS = 4096;

/**
 * `w` weights, `idx` token ids in some order, `bucket` each token's histogram bucket, `mass` and
 * `count` per bucket, `f32` the penalized copy of the logits, `tmp` room for a counting sort.
 * @typedef {{w: Float64Array, idx: Int32Array, bucket: Uint16Array, mass: Float64Array,
 *            count: Int32Array, f32: Float32Array, tmp: Int32Array}} Scratch
 */

/** @type {Scratch|null} */
let scratch = null;

/** The scratch arrays, for a vocabulary of `n`. @param {number} n @returns {Scratch} */
export function scratchFor(n) {
  if (!scratch || scratch.w.length < n) {
    scratch = {
      // idx: a cut bucket as large as the vocabulary may be gathered after SORTED_WALK slots
      w: new Float64Array(n), idx: new Int32Array(n + SORTED_WALK), bucket: new Uint16Array(n),
      mass: new Float64Array(BUCKETS + 1), count: new Int32Array(BUCKETS + 1), f32: new Float32Array(n),
      tmp: new Int32Array(n),
    };
  }
  return scratch;
}
