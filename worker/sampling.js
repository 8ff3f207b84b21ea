// Whole-vocabulary next-token selection on typed arrays, parameterized from Python.
// The same algorithm (and the same generator) as csi.cpython_backend, so a seeded request picks
// the same tokens on both backends when their logits agree.

/**
 * @typedef {{temperature: number, top_k: number, top_p: number, seed: number|null}} SamplingParams
 */

/** mulberry32: a small, fast, seedable 32-bit generator. Returns floats in [0, 1). */
export class Rng {
  /** @param {number} seed */
  constructor(seed) {
    this.state = seed >>> 0;
  }
  next() {
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
}

/** @param {number|null} seed */
export function makeRng(seed) {
  if (seed === null || seed === undefined) {
    seed = crypto.getRandomValues(new Uint32Array(1))[0];
  }
  // Fold a 53-bit JS integer (or a negative one) into 32 bits deterministically.
  const hi = Math.floor(seed / 4294967296);
  return new Rng((seed ^ hi) >>> 0);
}

/** @param {Float32Array} logits */
export function argmax(logits) {
  let best = 0;
  let bestValue = -Infinity;
  for (let i = 0; i < logits.length; i++) {
    if (logits[i] > bestValue) {
      bestValue = logits[i];
      best = i;
    }
  }
  return best;
}

/**
 * Candidates after temperature, top-k and top-p, with their renormalized probabilities,
 * most likely first (ties broken by lower token id).
 * @param {Float32Array} logits
 * @param {SamplingParams} p
 * @returns {{ids: Int32Array, probs: Float64Array}}
 */
export function candidates(logits, p) {
  const n = logits.length;
  let max = -Infinity;
  for (let i = 0; i < n; i++) if (logits[i] > max) max = logits[i];
  const invT = 1 / p.temperature;
  const weights = new Float64Array(n);
  let total = 0;
  for (let i = 0; i < n; i++) {
    const w = Math.exp((logits[i] - max) * invT);
    weights[i] = w;
    total += w;
  }
  // Only tokens above a threshold need sorting: lower it until what is above surely holds the
  // kept set (the k most likely, or enough mass for top-p), so the result is exact.
  const k = p.top_k > 0 ? Math.min(p.top_k, n) : n;
  const topP = Math.min(p.top_p, 1);
  let threshold = 1 / 1024;
  let ids;
  for (;;) {
    const picked = [];
    let mass = 0;
    for (let i = 0; i < n; i++) {
      if (weights[i] >= threshold) {
        picked.push(i);
        mass += weights[i];
      }
    }
    const enough = k < n ? picked.length >= k : mass >= topP * total * (1 - 1e-12);
    if (enough || threshold === 0) {
      ids = picked;
      break;
    }
    threshold = threshold < 1e-30 ? 0 : threshold / 1024;
  }
  ids.sort((a, b) => weights[b] - weights[a] || a - b);
  if (ids.length > k) ids.length = k;
  let keep = ids.length;
  if (topP < 1) {
    // top-p applies to the distribution top-k left (all of it when top-k is off)
    let kMass = total;
    if (k < n) {
      kMass = 0;
      for (const id of ids) kMass += weights[id];
    }
    let acc = 0;
    for (let j = 0; j < ids.length; j++) {
      acc += weights[ids[j]];
      if (acc >= topP * kMass) {
        keep = j + 1;
        break;
      }
    }
  }
  const out = Int32Array.from(ids.slice(0, keep));
  const probs = new Float64Array(keep);
  let kept = 0;
  for (let j = 0; j < keep; j++) kept += weights[out[j]];
  for (let j = 0; j < keep; j++) probs[j] = weights[out[j]] / kept;
  return { ids: out, probs };
}

/**
 * Pick the next token.
 * @param {Float32Array} logits
 * @param {SamplingParams} p
 * @param {Rng} rng
 */
export function sample(logits, p, rng) {
  if (!(p.temperature > 0)) return argmax(logits);
  const { ids, probs } = candidates(logits, p);
  const u = rng.next();
  let acc = 0;
  for (let j = 0; j < ids.length; j++) {
    acc += probs[j];
    if (u < acc) return ids[j];
  }
  return ids[ids.length - 1];
}
