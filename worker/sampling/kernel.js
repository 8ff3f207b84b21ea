// The WebAssembly SIMD sampling kernel (kernel/kernel.ts, built into kernel.wasm beside this file):
// loading it, and its memory as typed arrays. kernel_draw.js runs a token's choice on it; without
// WebAssembly SIMD (or the file) the Sampler keeps the JS path (selection.js, logprobs.js).

/** A module that uses one SIMD instruction: it validates only where WebAssembly SIMD is supported. */
const SIMD_PROBE = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 10, 1, 8, 0,
  65, 0, 253, 15, 253, 98, 11]);

/** Whether this engine runs WebAssembly SIMD. */
export const SIMD = typeof WebAssembly === "object" && WebAssembly.validate(SIMD_PROBE);

/**
 * @typedef {{memory: WebAssembly.Memory, reserve(n: number): number, idsPointer(): number,
 *   massPointer(): number, countPointer(): number, topIdsPointer(): number, topValuesPointer(): number,
 *   maxLogit(): number, minLogit(): number, zeros(): number, stats(n: number): number,
 *   weigh(n: number, max: number, invT: number, scale: number): number,
 *   countBelow(n: number, max: number, scale: number, cut: number): number,
 *   gather(n: number, max: number, scale: number, lo: number, hi: number, vlo: number, vhi: number, at: number): number,
 *   countBuckets(n: number, max: number, scale: number): void, topk(n: number, k: number): void,
 *   minAbove(n: number, bound: number): number, totalAtOne(): number,
 *   weighBoth(n: number, max: number, invT: number, scale: number): number}} Exports
 */

/** One instance of the kernel and views of its memory (remade when the memory grows). */
export class Kernel {
  /** @param {WebAssembly.Instance} instance */
  constructor(instance) {
    this.x = /** @type {Exports} */ (/** @type {unknown} */ (instance.exports));
    this.logits = new Float32Array(0);
    this.ids = new Int32Array(0);
    this.mass = new Float64Array(0);
    this.count = new Int32Array(0);
    this.topIds = new Int32Array(0);
    this.topValues = new Float32Array(0);
    /** @type {Float64Array} weights by token id, written only for the tokens a step gathers */
    this.w = new Float64Array(0);
    /** @type {Int32Array} room for a counting sort (order.js) */
    this.tmp = new Int32Array(0);
  }

  /**
   * `logits` in the kernel's memory: copied there unless they are that memory already.
   * @param {Float32Array} logits @returns {Float32Array}
   */
  load(logits) {
    if (logits === this.logits) return logits;
    const n = logits.length;
    const buffer = this.x.memory.buffer;
    const at = this.x.reserve(n);
    if (this.x.memory.buffer !== buffer || this.logits.length !== n) this.#views(n, at);
    this.logits.set(logits);
    return this.logits;
  }

  /** @param {number} n @param {number} at */
  #views(n, at) {
    const x = this.x;
    const buffer = x.memory.buffer;
    this.logits = new Float32Array(buffer, at, n);
    this.ids = new Int32Array(buffer, x.idsPointer(), n + 1024);
    this.mass = new Float64Array(buffer, x.massPointer(), 4097);
    this.count = new Int32Array(buffer, x.countPointer(), 4097);
    this.topIds = new Int32Array(buffer, x.topIdsPointer(), 256);
    this.topValues = new Float32Array(buffer, x.topValuesPointer(), 256);
    if (this.w.length < n) {
      this.w = new Float64Array(n);
      this.tmp = new Int32Array(n);
    }
  }
}

/**
 * The kernel made from its module's bytes (or a fetch of them).
 * @param {BufferSource|Response|Promise<Response>} source @returns {Promise<Kernel>}
 */
export async function loadKernel(source) {
  const s = await source;
  const bytes = s instanceof Response ? await s.arrayBuffer() : s;
  const { instance } = await WebAssembly.instantiate(bytes, {});
  return new Kernel(instance);
}

/** @type {Kernel|null} the worker's kernel, once loaded */
let shared = null;

/** Make `kernel` the one new Samplers use (null: the JS path). @param {Kernel|null} kernel */
export function useKernel(kernel) {
  shared = kernel;
}

/** The kernel new Samplers use, or null before it has loaded (or where it cannot). */
export function sharedKernel() {
  return shared;
}

/** Settles once the site's kernel.wasm is loaded (to the kernel), or known not to load (to null). */
export const kernelReady = SIMD && typeof fetch === "function" && !import.meta.url.startsWith("file:")
  ? loadKernel(fetch(new URL("./kernel.wasm", import.meta.url))).then((k) => (shared ??= k), (err) => {
    console.warn("sampling: the WebAssembly kernel did not load, the JS path samples", err);
    return null;
  })
  : Promise.resolve(null);
