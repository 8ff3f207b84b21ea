// Whole-vocabulary next-token selection on typed arrays, parameterized from Python.

import { applyBitmask } from "./grammar.js";

/** Marks a step error that is the request's grammar's fault (Python makes it a typed error). */
const GRAMMAR_ERROR = "[grammar] ";
// The same algorithm (and the same generator) as csi.backends.cpython, so a seeded request picks
// the same tokens on both backends when their logits agree.

/**
 * @typedef {{temperature: number, top_k: number, top_p: number, seed: number|null,
 *            repetition_penalty?: number, repetition_window?: number,
 *            frequency_penalty?: number, presence_penalty?: number,
 *            logit_bias?: Array<[number, number]>, logprobs?: boolean, top_logprobs?: number,
 *            grammar?: import("./grammar.js").GrammarSpec|null}} SamplingParams
 *
 * Order of the per-token math: repetition penalty (HF: divide positive logits, multiply negative
 * ones, over the last `repetition_window` tokens of the sequence, all of it when 0), frequency and
 * presence penalties (OpenAI: over the tokens generated so far), logit bias, then log-probabilities
 * of that distribution, then temperature, top-k, top-p and the draw.
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
      if (weights[i] >= threshold && weights[i] > 0) {
        picked.push(i);
        mass += weights[i];
      }
    }
    const enough = k < n ? picked.length >= k : mass >= topP * total * (1 - 1e-12);
    // (threshold 0 keeps every token of weight > 0: tokens a grammar ruled out never count)
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

/**
 * Penalties and bias applied to a copy of `logits` (the same array when there is nothing to do).
 * @param {Float32Array} logits
 * @param {SamplingParams} p
 * @param {number[]} sequence every token in the model's context so far (prompt and generated)
 * @param {Map<number, number>} counts how often each token was generated so far
 */
export function processLogits(logits, p, sequence, counts) {
  const rep = p.repetition_penalty ?? 1;
  const freq = p.frequency_penalty ?? 0;
  const pres = p.presence_penalty ?? 0;
  const bias = p.logit_bias ?? [];
  if (rep === 1 && freq === 0 && pres === 0 && bias.length === 0) return logits;
  const out = new Float32Array(logits);
  if (rep !== 1) {
    const window = p.repetition_window ?? 0;
    const from = window > 0 ? Math.max(0, sequence.length - window) : 0;
    const seen = new Set(sequence.slice(from));
    for (const id of seen) {
      if (id < out.length) out[id] = out[id] > 0 ? out[id] / rep : out[id] * rep;
    }
  }
  if (freq !== 0 || pres !== 0) {
    for (const [id, n] of counts) {
      if (id < out.length) out[id] -= n * freq + (n > 0 ? pres : 0);
    }
  }
  for (const [id, b] of bias) {
    if (id >= 0 && id < out.length) out[id] += b;
  }
  return out;
}

/**
 * Log-probability of `token` and the `k` most likely tokens under softmax(`logits`).
 * @param {Float32Array} logits
 * @param {number} token
 * @param {number} k
 * @returns {{logprob: number, top: Array<[number, number]>}}
 */
export function logprobs(logits, token, k) {
  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) if (logits[i] > max) max = logits[i];
  let sum = 0;
  for (let i = 0; i < logits.length; i++) sum += Math.exp(logits[i] - max);
  const lse = max + Math.log(sum);
  const top = [];
  if (k > 0) {
    // keep the k best in a small sorted array: k <= 20
    for (let i = 0; i < logits.length; i++) {
      const v = logits[i];
      if (top.length < k || v > top[top.length - 1][1]) {
        let j = top.length < k ? top.length : k - 1;
        if (top.length < k) top.push([i, v]);
        while (j > 0 && top[j - 1][1] < v) {
          top[j] = top[j - 1];
          j--;
        }
        top[j] = [i, v];
      }
    }
  }
  // tokens a grammar ruled out (-Infinity) are never among the alternatives
  return { logprob: logits[token] - lse, top: top.filter(([, v]) => v > -Infinity).map(([i, v]) => [i, v - lse]) };
}

/**
 * @typedef {{token: number, logprob?: number, top?: Array<[number, number]>, grammarS?: number}} Choice
 */

/**
 * Per-request sampling state: parameters, generator, counts of generated tokens, and the grammar
 * matcher when the request is constrained.
 */
export class Sampler {
  /**
   * @param {SamplingParams} params
   * @param {import("./grammar.js").Grammars|null} [grammars] the model's, when `params.grammar` is set
   */
  constructor(params, grammars = null) {
    this.params = params;
    this.rng = makeRng(params.seed);
    /** @type {Map<number, number>} */
    this.counts = new Map();
    this.grammars = params.grammar ? grammars : null;
    /** @type {any} created on the first step */
    this.matcher = null;
  }

  get constrained() {
    return this.grammars !== null;
  }

  /** Start another choice of the same request: counts and the grammar restart, the generator goes on. */
  nextChoice() {
    this.counts = new Map();
    this.matcher?.reset();
  }

  dispose() {
    this.matcher?.dispose();
    this.matcher = null;
  }

  /**
   * Choose the next token under the request's grammar: mask, then as `choose`, then feed the
   * token to the matcher.
   * @param {Float32Array} logits @param {number[]} sequence
   * @returns {Promise<Choice>}
   */
  async chooseConstrained(logits, sequence) {
    const grammars = /** @type {import("./grammar.js").Grammars} */ (this.grammars);
    let started = performance.now();
    if (!this.matcher) {
      this.matcher = await grammars.matcher(/** @type {import("./grammar.js").GrammarSpec} */ (this.params.grammar));
      started = performance.now(); // creating the matcher is once per request, not per-token work
    }
    const bitmask = await this.matcher.getNextTokenBitmask();
    if (!bitmask.some((word) => word !== 0)) {
      throw new Error(`${GRAMMAR_ERROR}the grammar allows no token here: it accepts no text`);
    }
    const masked = applyBitmask(logits, bitmask);
    let spent = performance.now() - started;
    const choice = this.choose(masked, sequence);
    started = performance.now();
    if (!this.matcher.acceptToken(choice.token)) {
      throw new Error(`the grammar rejected token ${choice.token} it allowed`);
    }
    spent += performance.now() - started;
    return { ...choice, grammarS: spent / 1000 };
  }

  /**
   * Choose the next token from the model's logits.
   * @param {Float32Array} logits @param {number[]} sequence
   * @returns {Choice}
   */
  choose(logits, sequence) {
    const p = this.params;
    const processed = processLogits(logits, p, sequence, this.counts);
    const token = sample(processed, p, this.rng);
    this.counts.set(token, (this.counts.get(token) ?? 0) + 1);
    if (!p.logprobs) return { token };
    return { token, ...logprobs(processed, token, p.top_logprobs ?? 0) };
  }
}
