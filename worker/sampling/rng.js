// The seedable generator of every draw; csi.backends.cpython has the same one, so a seeded request
// picks the same tokens on both backends when their logits agree.

/** mulberry32: a small, fast, seedable 32-bit generator. Returns floats in [0, 1). */
export class Rng {
  /** @param {number} seed */
  constructor(seed) {
    this.state = seed >>> 0;
  }

  /** @returns {number} the next float in [0, 1) */
  next() {
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
}

/**
 * The generator of a request: seeded as asked, else from the system's randomness.
 * @param {number|null|undefined} seed
 */
export function makeRng(seed) {
  if (seed === null || seed === undefined) {
    seed = crypto.getRandomValues(new Uint32Array(1))[0];
  }
  // Fold a 53-bit JS integer (or a negative one) into 32 bits deterministically.
  const hi = Math.floor(seed / 4294967296);
  return new Rng((seed ^ hi) >>> 0);
}
