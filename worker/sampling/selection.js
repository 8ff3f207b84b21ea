// Temperature, top-k, top-p and the draw over the whole vocabulary, by selection instead of sorting.
//
// The order that decides is weight descending, then lower id. A small set is sorted and walked
// exactly as a full sort would (the same sums in the same order). The whole vocabulary is not
// sorted: one pass weighs every token and histograms the weights into buckets of logit ranges (a
// bucket holds a contiguous stretch of the order), the bucket where the top-p mass or the draw
// lands is found on the histogram, and only that bucket's tokens are sorted. A step costs a few
// passes over typed arrays whatever the distribution's shape.

import { fastExp } from "./fast_exp.js";
import { orderBy, sortByKey } from "./order.js";

/** @typedef {import("./params.js").SamplingParams} SamplingParams */
/** @typedef {import("./rng.js").Rng} Rng */

// (module-local constants: the per-token loops read them over the whole vocabulary)
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

/**
 * `w` weights, `idx` token ids in some order, `bucket` each token's histogram bucket, `mass` and
 * `count` per bucket, `tmp` room for a counting sort.
 * @typedef {{w: Float64Array, idx: Int32Array, bucket: Uint16Array, mass: Float64Array,
 *            count: Int32Array, tmp: Int32Array}} Scratch
 */
/** @type {Scratch|null} reused across steps (a step is synchronous) */
let scratch = null;

/** The scratch arrays, for a vocabulary of `n`. @param {number} n @returns {Scratch} */
function scratchFor(n) {
  if (!scratch || scratch.w.length < n) {
    scratch = {
      // idx: a cut bucket as large as the vocabulary may be gathered after SORTED_WALK slots
      w: new Float64Array(n), idx: new Int32Array(n + SORTED_WALK), bucket: new Uint16Array(n),
      mass: new Float64Array(BUCKETS + 1), count: new Int32Array(BUCKETS + 1), tmp: new Int32Array(n),
    };
  }
  return scratch;
}

/** The first token with the largest logit. @param {Float32Array} logits */
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
  if (distinct) orderBy(w, idx, start, m, sc.tmp);
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
      orderBy(logits, idx, m, g, sc.tmp);
      m = Math.min(g, p.top_k);
    }
    let c = 0;
    for (let j = 0; j < m; j++) {
      const id = idx[j];
      const x = fastExp((logits[id] - max) * invT);
      if (x > 0) {
        w[id] = x;
        idx[c++] = id;
      }
    }
    orderBy(w, idx, 0, c, sc.tmp);
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
    const x = fastExp((v - max) * invT);
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
    const sc = scratchFor(k.n);
    /** @type {number[]} */
    const below = [];
    for (let i = 0; i < k.n; i++) if (sc.bucket[i] < k.cut) below.push(i);
    ids = Int32Array.from([...below, ...k.idx.subarray(k.cutStart, k.cutStart + k.cutTaken)]);
    orderBy(k.w, ids, 0, ids.length, sc.tmp);
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
export function draw(logits, p, rng) {
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
  const sc = scratchFor(k.n);
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
