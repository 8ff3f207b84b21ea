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

/** The largest float32: a repetition penalty saturates there instead of making an infinity. */
const F32_MAX = 3.4028234663852886e38;

/**
 * The floor of every log-probability (csi.core.request.MIN_LOGPROB, OpenAI's "very unlikely"): a
 * token with no chance, or logits that are not finite, give this, never -Infinity or NaN.
 */
export const MIN_LOGPROB = -9999;

/** @param {number} v a log-probability @returns {number} finite, at least {@link MIN_LOGPROB} */
function floorLogprob(v) {
  return Number.isFinite(v) && v > MIN_LOGPROB ? v : MIN_LOGPROB;
}

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

// Selection instead of sorting. The order that decides is weight descending, then lower id. A
// small set is sorted and walked exactly as a full sort would (the same sums in the same order).
// The whole vocabulary is not sorted: one pass weighs every token and histograms the weights into
// buckets of logit ranges (a bucket holds a contiguous stretch of the order), the bucket where the
// top-p mass or the draw lands is found on the histogram, and only that bucket's tokens are sorted.
// A step costs a few passes over typed arrays whatever the distribution's shape.

/** Sets at most this large are sorted and walked in order. */
const SORTED_WALK = 512;
/** Buckets of the histogram over the logit range. */
const BUCKETS = 4096;
/**
 * The histogram spans at most this many temperature-scaled logits below the best (weights down to
 * e^-40 of the best's); lower tokens share the last bucket, so one far outlier (a -100 bias) does
 * not squeeze the rest into a few buckets.
 */
const SPAN = 40;
/** A range larger than this is put in order by a finer histogram of its own before sorting. */
const REFINE_ABOVE = 256;

/**
 * @typedef {{w: Float64Array, idx: Int32Array, bucket: Uint16Array, mass: Float64Array,
 *            count: Int32Array, f32: Float32Array, tmp: Int32Array}} Scratch
 */
/** @type {Scratch|null} reused across steps (a step is synchronous) */
let scratch = null;

/** @param {number} n @returns {Scratch} */
function scratchFor(n) {
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

/**
 * Sort idx[lo, hi) by key descending, then by lower id.
 * @param {Float32Array|Float64Array} key @param {Int32Array} idx @param {number} lo @param {number} hi
 */
function sortByKey(key, idx, lo, hi) {
  idx.subarray(lo, hi).sort((a, b) => key[b] - key[a] || a - b);
}

/**
 * As {@link sortByKey}, for ranges of any size: a large range is first spread over a histogram of
 * its own key range (a stable counting sort), then each sub-bucket is put in order the same way.
 * @param {Float32Array|Float64Array} key @param {Int32Array} idx @param {number} lo @param {number} hi
 */
function orderBy(key, idx, lo, hi) {
  const m = hi - lo;
  if (m <= REFINE_ABOVE) return sortByKey(key, idx, lo, hi);
  let top = -Infinity;
  let bottom = Infinity;
  for (let j = lo; j < hi; j++) {
    const x = key[idx[j]];
    if (x > top) top = x;
    if (x < bottom) bottom = x;
  }
  if (top === bottom) {
    idx.subarray(lo, hi).sort(); // all tied: by id
    return;
  }
  if (!Number.isFinite(top - bottom)) return sortByKey(key, idx, lo, hi);
  const subs = Math.min(1024, m);
  const scale = (subs - 1) / (top - bottom);
  const start = new Int32Array(subs + 1);
  for (let j = lo; j < hi; j++) start[(((top - key[idx[j]]) * scale) | 0) + 1]++;
  for (let b = 1; b <= subs; b++) start[b] += start[b - 1];
  const tmp = /** @type {Scratch} */ (scratch).tmp;
  for (let j = lo; j < hi; j++) {
    const id = idx[j];
    tmp[start[((top - key[id]) * scale) | 0]++] = id;
  }
  idx.set(tmp.subarray(0, m), lo);
  // start[b] is now where sub-bucket b ends
  for (let b = 0, from = lo; b < subs; b++) {
    const to = lo + start[b];
    if (to - from > 1) orderBy(key, idx, from, to);
    from = to;
  }
}

/**
 * The kept set: in order in idx[0, count) when `sorted`; else every token whose bucket is below
 * `cut` and, of bucket `cut`, the first `cutTaken` of idx[cutStart, ...) (that bucket's tokens, in
 * order). `mass` is the set's weight.
 * @typedef {{w: Float64Array, idx: Int32Array, sorted: boolean, count: number, mass: number,
 *            lse: number, n: number, cut: number, cutStart: number, cutTaken: number}} Kept
 */

/**
 * Gather bucket `b`'s tokens (ids ascending) at idx[start, ...) and put them in order.
 * @param {Scratch} sc @param {number} n @param {number} b @param {number} start @returns {number} how many
 */
function gatherBucket(sc, n, b, start) {
  const { bucket, idx, w } = sc;
  let m = start;
  for (let i = 0; i < n; i++) if (bucket[i] === b) idx[m++] = i;
  // gathered by id: only distinct weights need a sort (ties stay by id)
  let distinct = false;
  for (let j = start + 1; j < m && !distinct; j++) distinct = w[idx[j]] !== w[idx[start]];
  if (distinct) orderBy(w, idx, start, m);
  return m - start;
}

/**
 * Where the running mass, over the histogram's buckets below `limit` (and `partial` as the mass of
 * bucket `limit`), first reaches `target`: [bucket, mass before it], or [-1, total] if never.
 * @param {Scratch} sc @param {number} limit @param {number} partial @param {number} target
 * @param {boolean} strict
 * @returns {[number, number]}
 */
function scanBuckets(sc, limit, partial, target, strict) {
  const { mass } = sc;
  let acc = 0;
  for (let b = 0; b <= limit && b < BUCKETS; b++) {
    const m = b === limit ? partial : mass[b];
    const next = acc + m;
    if (m > 0 && (strict ? next > target : next >= target)) return [b, acc];
    acc = next;
  }
  return [-1, acc];
}

/**
 * The tokens kept by temperature, top-k and top-p, and their weights.
 * @param {Float32Array} logits @param {SamplingParams} p @returns {Kept}
 */
function kept(logits, p) {
  const n = logits.length;
  const sc = scratchFor(n);
  const { w, idx, bucket, mass, count } = sc;
  let max = -Infinity;
  let min = Infinity;
  for (let i = 0; i < n; i++) {
    const v = logits[i];
    if (v > max) max = v;
    if (v < min && v > -Infinity) min = v;
  }
  const invT = 1 / p.temperature;
  const topP = Math.min(p.top_p, 1);
  const span = Math.min(max - min, SPAN / invT);
  const scale = span > 0 ? (BUCKETS - 1) / span : 0;
  /** @type {Kept} */
  const out = { w, idx, sorted: true, count: 0, mass: 0, lse: NaN, n, cut: -1, cutStart: 0, cutTaken: 0 };
  if (p.top_k > 0 && p.top_k < n) {
    // the k best by logit (the same order as by weight), found on a histogram of counts
    count.fill(0);
    for (let i = 0; i < n; i++) {
      const v = logits[i];
      const d = (max - v) * scale;
      const b = v > -Infinity ? (d < BUCKETS - 1 ? d | 0 : BUCKETS - 1) : BUCKETS;
      bucket[i] = b;
      count[b]++;
    }
    let before = 0;
    let cut = 0;
    while (cut < BUCKETS && before + count[cut] < p.top_k) before += count[cut++];
    let m = 0;
    for (let i = 0; i < n; i++) if (bucket[i] < cut) idx[m++] = i;
    if (cut < BUCKETS) {
      let g = m;
      for (let i = 0; i < n; i++) if (bucket[i] === cut) idx[g++] = i;
      orderBy(logits, idx, m, g);
      m = Math.min(g, p.top_k);
    }
    let c = 0;
    for (let j = 0; j < m; j++) {
      const id = idx[j];
      const x = Math.exp((logits[id] - max) * invT);
      if (x > 0) {
        w[id] = x;
        idx[c++] = id;
      }
    }
    orderBy(w, idx, 0, c);
    out.count = c;
    for (let j = 0; j < c; j++) out.mass += w[idx[j]];
    return topP < 1 ? topPOfSorted(out, topP) : out;
  }
  // every token weighed (the sum in id order), histogrammed by logit
  mass.fill(0);
  count.fill(0);
  let total = 0;
  for (let i = 0; i < n; i++) {
    const v = logits[i];
    const x = Math.exp((v - max) * invT);
    w[i] = x;
    total += x;
    if (x > 0) {
      const d = (max - v) * scale;
      const b = d < BUCKETS - 1 ? d | 0 : BUCKETS - 1;
      bucket[i] = b;
      mass[b] += x;
      count[b]++;
    } else {
      bucket[i] = BUCKETS; // never kept
    }
  }
  if (invT === 1) out.lse = max + Math.log(total);
  out.mass = total;
  let cut = BUCKETS;
  let cutTaken = 0;
  let cutStart = 0;
  let keptMass = total;
  if (topP < 1) {
    const [b, before] = scanBuckets(sc, BUCKETS, 0, topP * total, false);
    if (b >= 0) {
      cut = b;
      // the bucket's tokens go after the slots a small kept set may need (at most SORTED_WALK)
      cutStart = SORTED_WALK;
      const size = gatherBucket(sc, n, b, cutStart);
      let acc = before;
      cutTaken = size;
      for (let j = 0; j < size; j++) {
        acc += w[idx[cutStart + j]];
        if (acc >= topP * total) {
          cutTaken = j + 1;
          break;
        }
      }
      keptMass = acc;
    }
  }
  let keptCount = cutTaken;
  for (let b = 0; b < cut && b < BUCKETS; b++) keptCount += count[b];
  if (keptCount <= SORTED_WALK) {
    // small: the kept set itself, sorted, summed in order
    let m = 0;
    for (let i = 0; i < n; i++) if (bucket[i] < cut) idx[m++] = i;
    if (cut < BUCKETS) idx.copyWithin(m, cutStart, cutStart + cutTaken);
    m += cut < BUCKETS ? cutTaken : 0;
    sortByKey(w, idx, 0, m);
    out.count = m;
    out.mass = 0;
    for (let j = 0; j < m; j++) out.mass += w[idx[j]];
    return out;
  }
  return { ...out, sorted: false, count: keptCount, mass: keptMass, cut, cutStart, cutTaken };
}

/** Top-p on a sorted kept set. @param {Kept} k @param {number} topP @returns {Kept} */
function topPOfSorted(k, topP) {
  const target = topP * k.mass;
  let acc = 0;
  for (let j = 0; j < k.count; j++) {
    acc += k.w[k.idx[j]];
    if (acc >= target) return { ...k, count: j + 1, mass: acc };
  }
  return k;
}

/**
 * Candidates after temperature, top-k and top-p, with their renormalized probabilities,
 * most likely first (ties broken by lower token id).
 * @param {Float32Array} logits
 * @param {SamplingParams} p
 * @returns {{ids: Int32Array, probs: Float64Array}}
 */
export function candidates(logits, p) {
  const k = kept(logits, p);
  let ids;
  if (k.sorted) {
    ids = k.idx.slice(0, k.count);
  } else {
    const { bucket } = /** @type {Scratch} */ (scratch);
    const below = [];
    for (let i = 0; i < k.n; i++) if (bucket[i] < k.cut) below.push(i);
    ids = Int32Array.from([...below, ...k.idx.subarray(k.cutStart, k.cutStart + k.cutTaken)]);
    orderBy(k.w, ids, 0, ids.length);
  }
  const probs = new Float64Array(ids.length);
  let mass = 0;
  for (let j = 0; j < ids.length; j++) mass += k.w[ids[j]];
  for (let j = 0; j < ids.length; j++) probs[j] = k.w[ids[j]] / mass;
  return { ids, probs };
}

/**
 * Pick the next token.
 * @param {Float32Array} logits
 * @param {SamplingParams} p
 * @param {Rng} rng
 */
export function sample(logits, p, rng) {
  return draw(logits, p, rng).token;
}

/**
 * As {@link sample}, with the log-sum-exp of `logits` when the weighing computed it (else NaN).
 * @param {Float32Array} logits @param {SamplingParams} p @param {Rng} rng
 * @returns {{token: number, lse: number}}
 */
function draw(logits, p, rng) {
  if (!(p.temperature > 0)) return { token: argmax(logits), lse: NaN };
  const k = kept(logits, p);
  const { w, idx, count, lse } = k;
  if (count === 0) return { token: argmax(logits), lse };
  const u = rng.next();
  if (k.sorted) {
    let acc = 0;
    for (let j = 0; j < count; j++) {
      acc += w[idx[j]] / k.mass;
      if (u < acc) return { token: idx[j], lse };
    }
    return { token: idx[count - 1], lse };
  }
  // the bucket the draw lands in, then the token within it (the cut bucket is already in order)
  const sc = /** @type {Scratch} */ (scratch);
  const target = u * k.mass;
  let partial = 0;
  for (let j = 0; j < k.cutTaken; j++) partial += w[idx[k.cutStart + j]];
  let [b, acc] = scanBuckets(sc, k.cut, partial, target, true);
  if (b < 0) b = lastBucket(sc, k);
  let start = k.cutStart;
  let size = k.cutTaken;
  if (b !== k.cut) {
    start = 0;
    size = gatherBucket(sc, k.n, b, 0);
  }
  for (let j = 0; j < size; j++) {
    acc += w[idx[start + j]];
    if (acc > target) return { token: idx[start + j], lse };
  }
  return { token: idx[start + size - 1], lse };
}

/** The last non-empty bucket of the kept set (rounding left the draw unplaced). @param {Scratch} sc @param {Kept} k */
function lastBucket(sc, k) {
  if (k.cut < BUCKETS && k.cutTaken > 0) return k.cut;
  for (let b = Math.min(k.cut, BUCKETS) - 1; b >= 0; b--) if (sc.count[b] > 0) return b;
  return 0;
}

/**
 * Penalties and bias applied to a copy of `logits` (the same array when there is nothing to do).
 * The copy is a scratch buffer, valid until the next step.
 * @param {Float32Array} logits
 * @param {SamplingParams} p
 * @param {number[]} sequence every token in the model's context so far (prompt and generated)
 * @param {Map<number, number>} counts how often each token was generated so far
 * @param {{bias: number}} [timing] where to put the seconds the bias took
 */
export function processLogits(logits, p, sequence, counts, timing) {
  const rep = p.repetition_penalty ?? 1;
  const freq = p.frequency_penalty ?? 0;
  const pres = p.presence_penalty ?? 0;
  const bias = p.logit_bias ?? [];
  if (timing) timing.bias = 0;
  if (rep === 1 && freq === 0 && pres === 0 && bias.length === 0) return logits;
  const out = scratchFor(logits.length).f32.subarray(0, logits.length);
  out.set(logits);
  if (rep !== 1) {
    const window = p.repetition_window ?? 0;
    const from = window > 0 ? Math.max(0, sequence.length - window) : 0;
    const seen = new Set(sequence.slice(from));
    for (const id of seen) {
      if (id < out.length) {
        const v = out[id] > 0 ? out[id] / rep : out[id] * rep;
        out[id] = v > F32_MAX ? F32_MAX : v < -F32_MAX ? -F32_MAX : v;
      }
    }
  }
  if (freq !== 0 || pres !== 0) {
    for (const [id, n] of counts) {
      if (id < out.length) out[id] -= n * freq + (n > 0 ? pres : 0);
    }
  }
  const t = timing ? performance.now() : 0;
  for (const [id, b] of bias) {
    if (id >= 0 && id < out.length) out[id] += b;
  }
  if (timing) timing.bias = (performance.now() - t) / 1000;
  return out;
}

/**
 * Log-probability of `token` and the `k` most likely tokens under softmax(`logits`), each floored at
 * {@link MIN_LOGPROB} (so always finite); tokens at -Infinity (ruled out by a grammar) are never
 * among the `k`.
 * @param {Float32Array} logits
 * @param {number} token
 * @param {number} k
 * @param {number} [lse] log-sum-exp of `logits`, when a weighing at temperature 1 already has it
 * @returns {{logprob: number, top: Array<[number, number]>}}
 */
export function logprobs(logits, token, k, lse) {
  const n = logits.length;
  let max = -Infinity;
  const topIds = new Int32Array(k);
  const topValues = new Float64Array(k).fill(-Infinity);
  let worst = -Infinity;
  for (let i = 0; i < n; i++) {
    const v = logits[i];
    if (v > max) max = v;
    if (k > 0 && v > worst) {
      // insert into the k best, kept in order (ties: the earlier, lower id, stays first)
      let j = k - 1;
      while (j > 0 && topValues[j - 1] < v) {
        topValues[j] = topValues[j - 1];
        topIds[j] = topIds[j - 1];
        j--;
      }
      topValues[j] = v;
      topIds[j] = i;
      worst = topValues[k - 1];
    }
  }
  if (lse === undefined) {
    let sum = 0;
    for (let i = 0; i < n; i++) sum += Math.exp(logits[i] - max);
    lse = max + Math.log(sum);
  }
  /** @type {Array<[number, number]>} */
  const top = [];
  // tokens a grammar ruled out (-Infinity) are never among the alternatives
  for (let j = 0; j < k; j++) if (topValues[j] > -Infinity) top.push([topIds[j], floorLogprob(topValues[j] - lse)]);
  return { logprob: floorLogprob(logits[token] - lse), top };
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
    /** seconds the last `choose` spent on penalties and on the bias (the rest is the draw and logprobs) */
    this.timing = { penalty: 0, bias: 0 };
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
    const t0 = performance.now();
    const processed = processLogits(logits, p, sequence, this.counts, this.timing);
    const t1 = performance.now();
    const { token, lse } = draw(processed, p, this.rng);
    this.counts.set(token, (this.counts.get(token) ?? 0) + 1);
    const choice = p.logprobs
      ? { token, ...logprobs(processed, token, p.top_logprobs ?? 0, Number.isNaN(lse) ? undefined : lse) }
      : { token };
    this.timing.penalty = (t1 - t0) / 1000 - this.timing.bias;
    return choice;
  }
}
