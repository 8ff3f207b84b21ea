// A token's draw and log-probabilities on the WebAssembly kernel (kernel.js): the rules of
// selection.js and logprobs.js (the same order, sums, cut and draw), with the passes over every
// logit done by the kernel. Small sets (a histogram bucket, the top-k) are ordered here, in JS.

import { fastExp } from "./fast_exp.js";
import { MIN_LOGPROB } from "./logprobs.js";
import { orderBy, sortByKey } from "./order.js";

/** @typedef {import("./kernel.js").Kernel} Kernel */
/** @typedef {import("./params.js").SamplingParams} SamplingParams */
/** @typedef {import("./rng.js").Rng} Rng */

// as selection.js
const SORTED_WALK = 512;
const BUCKETS = 4096;
const SPAN = 40;

/**
 * Logits per histogram bucket for weights down to e^-`reach` of the best: the span is that of the
 * logits within reach (a far outlier, a -100 bias, would squeeze the rest into a few buckets).
 * @param {Kernel} k @param {number} n @param {number} max @param {number} reach in logits
 */
function scaleFor(k, n, max, reach) {
  let min = k.x.minLogit();
  if (max - min > reach) min = k.x.minAbove(n, Math.fround(max - reach));
  // one logit alone within reach (a processor's or a bias's +100): the histogram spans the reach
  const span = max - min > 0 ? Math.min(max - min, reach) : reach;
  return span > 0 ? (BUCKETS - 1) / span : 0;
}

/**
 * The histogram's logits: a float32 range holding every logit whose s = (max - v) * scale is in
 * [lo, hi), a little wide (the kernel checks s itself).
 * @param {number} max @param {number} scale @param {number} lo @param {number} hi @returns {[number, number]}
 */
function logitRange(max, scale, lo, hi) {
  if (!(scale > 0)) return [-Infinity, Infinity];
  const top = max - lo / scale;
  const bottom = hi === Infinity ? -Infinity : max - hi / scale;
  const slack = 1e-5 * (Math.abs(max) + Math.abs(bottom === -Infinity ? 0 : bottom) + 1 / scale);
  return [bottom - slack, top + slack];
}

/**
 * Ids with s in [lo, hi), ascending, at k.ids[at, ...); their weights in k.w, those at 0 dropped.
 * @param {Kernel} k @param {number} n @param {number} max @param {number} invT @param {number} scale
 * @param {number} lo @param {number} hi @param {number} at @returns {number} how many
 */
function gatherWeighed(k, n, max, invT, scale, lo, hi, at) {
  const [vlo, vhi] = logitRange(max, scale, lo, hi);
  const size = k.x.gather(n, max, scale, lo, hi, vlo, vhi, at);
  const { ids, w, logits } = k;
  let m = at;
  for (let j = at; j < at + size; j++) {
    const id = ids[j];
    const x = fastExp((logits[id] - max) * invT);
    if (x > 0) {
      w[id] = x;
      ids[m++] = id;
    }
  }
  return m - at;
}

/** Put k.ids[lo, hi) in the deciding order (weight descending, then id). @param {Kernel} k @param {number} lo @param {number} hi */
function order(k, lo, hi) {
  const { w, ids } = k;
  let distinct = false;
  for (let j = lo + 1; j < hi && !distinct; j++) distinct = w[ids[j]] !== w[ids[lo]];
  if (distinct) orderBy(w, ids, lo, hi, k.tmp);
}

/**
 * As selection.js scanBuckets, on the kernel's bucket masses.
 * @param {Float64Array} mass @param {number} limit @param {number} partial @param {number} target
 * @param {boolean} strict @returns {[number, number]}
 */
function scanBuckets(mass, limit, partial, target, strict) {
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
 * The kernel's draw (temperature > 0): the token, and the log-sum-exp when the weighing was at
 * temperature 1 (else NaN). Null when the logits are not for it (NaN, +Infinity, all -Infinity):
 * the JS path draws those.
 * @param {Kernel} k @param {Float32Array} input @param {SamplingParams} p @param {Rng} rng
 * @returns {{token: number, lse: number}|null}
 */
export function drawOnKernel(k, input, p, rng) {
  const logits = k.load(input);
  const n = logits.length;
  if (k.x.stats(n) !== 0) return null;
  const max = k.x.maxLogit();
  if (!(max > -Infinity)) return null;
  const invT = 1 / p.temperature;
  const topP = Math.min(p.top_p, 1);
  const scale = scaleFor(k, n, max, SPAN / invT);
  if (p.top_k > 0 && p.top_k < n) return drawTopK(k, n, max, invT, scale, p, rng);
  // with log-probabilities at another temperature, their total weight in the same pass when exact
  const both = p.logprobs === true && invT !== 1 && scale > 0 && 1 / scale <= 0.015;
  const total = both ? k.x.weighBoth(n, max, invT, scale) : k.x.weigh(n, max, invT, scale);
  const lse = invT === 1 ? max + Math.log(total) : both ? max + Math.log(k.x.totalAtOne()) : NaN;
  const { ids, w, mass } = k;
  let cut = BUCKETS;
  let cutTaken = 0;
  let keptMass = total;
  // a cut bucket's tokens go after the slots a small kept set may need
  const cutStart = SORTED_WALK;
  if (topP < 1) {
    const [b, before] = scanBuckets(mass, BUCKETS, 0, topP * total, false);
    if (b >= 0) {
      cut = b;
      const size = gatherWeighed(k, n, max, invT, scale, b, b < BUCKETS - 1 ? b + 1 : Infinity, cutStart);
      order(k, cutStart, cutStart + size);
      let acc = before;
      cutTaken = size;
      for (let j = 0; j < size; j++) {
        acc += w[ids[cutStart + j]];
        if (acc >= topP * total) {
          cutTaken = j + 1;
          break;
        }
      }
      keptMass = acc;
    }
  }
  const below = cut < BUCKETS ? k.x.countBelow(n, max, scale, cut) : ((n + 3) & ~3) - k.x.zeros();
  const keptCount = below + cutTaken;
  if (keptCount === 0) return { token: argmaxOf(logits), lse };
  const u = rng.next();
  if (keptCount <= SORTED_WALK) {
    // small: the kept set itself, sorted, summed in order
    let m = gatherWeighed(k, n, max, invT, scale, 0, cut < BUCKETS ? cut : Infinity, 0);
    if (cut < BUCKETS) ids.copyWithin(m, cutStart, cutStart + cutTaken);
    m += cut < BUCKETS ? cutTaken : 0;
    sortByKey(w, ids, 0, m);
    let sum = 0;
    for (let j = 0; j < m; j++) sum += w[ids[j]];
    let acc = 0;
    for (let j = 0; j < m; j++) {
      acc += w[ids[j]] / sum;
      if (u < acc) return { token: ids[j], lse };
    }
    return { token: ids[m - 1], lse };
  }
  // the bucket the draw lands in, then the token within it (the cut bucket is already in order)
  const target = u * keptMass;
  let partial = 0;
  for (let j = 0; j < cutTaken; j++) partial += w[ids[cutStart + j]];
  let [b, acc] = scanBuckets(mass, cut, partial, target, true);
  if (b < 0) b = lastBucket(mass, cut, cutTaken);
  let start = cutStart;
  let size = cutTaken;
  if (b !== cut) {
    start = 0;
    size = gatherWeighed(k, n, max, invT, scale, b, b < BUCKETS - 1 ? b + 1 : Infinity, 0);
    order(k, 0, size);
  }
  for (let j = 0; j < size; j++) {
    acc += w[ids[start + j]];
    if (acc > target) return { token: ids[start + j], lse };
  }
  return { token: ids[start + size - 1], lse };
}

/** @param {Float64Array} mass @param {number} cut @param {number} cutTaken */
function lastBucket(mass, cut, cutTaken) {
  if (cut < BUCKETS && cutTaken > 0) return cut;
  for (let b = Math.min(cut, BUCKETS) - 1; b >= 0; b--) if (mass[b] > 0) return b;
  return 0;
}

/** @param {Float32Array} logits */
function argmaxOf(logits) {
  let best = 0;
  for (let i = 1; i < logits.length; i++) if (logits[i] > logits[best]) best = i;
  return best;
}

/**
 * Top-k (then top-p) as selection.js: the k best by logit found on a histogram of counts.
 * @param {Kernel} k @param {number} n @param {number} max @param {number} invT @param {number} scale
 * @param {SamplingParams} p @param {Rng} rng @returns {{token: number, lse: number}}
 */
function drawTopK(k, n, max, invT, scale, p, rng) {
  k.x.countBuckets(n, max, scale);
  const { count, ids, w, logits } = k;
  let before = 0;
  let cut = 0;
  while (cut < BUCKETS && before + count[cut] < p.top_k) before += count[cut++];
  let m = k.x.gather(n, max, scale, 0, cut, ...logitRange(max, scale, 0, cut), 0);
  if (cut < BUCKETS) {
    const hi = cut < BUCKETS - 1 ? cut + 1 : Infinity;
    const g = m + k.x.gather(n, max, scale, cut, hi, ...logitRange(max, scale, cut, hi), m);
    orderBy(logits, ids, m, g, k.tmp);
    m = Math.min(g, p.top_k);
  }
  let c = 0;
  for (let j = 0; j < m; j++) {
    const id = ids[j];
    const x = fastExp((logits[id] - max) * invT);
    if (x > 0) {
      w[id] = x;
      ids[c++] = id;
    }
  }
  orderBy(w, ids, 0, c, k.tmp);
  let mass = 0;
  for (let j = 0; j < c; j++) mass += w[ids[j]];
  const topP = Math.min(p.top_p, 1);
  if (topP < 1) {
    const target = topP * mass;
    let acc = 0;
    for (let j = 0; j < c; j++) {
      acc += w[ids[j]];
      if (acc >= target) {
        c = j + 1;
        mass = acc;
        break;
      }
    }
  }
  if (c === 0) return { token: argmaxOf(logits), lse: NaN };
  const u = rng.next();
  let acc = 0;
  for (let j = 0; j < c; j++) {
    acc += w[ids[j]] / mass;
    if (u < acc) return { token: ids[j], lse: NaN };
  }
  return { token: ids[c - 1], lse: NaN };
}

/** @param {number} v @returns {number} */
function floorLogprob(v) {
  return Number.isFinite(v) && v > MIN_LOGPROB ? v : MIN_LOGPROB;
}

/**
 * As logprobs.js `logprobs`, on the kernel; null when the logits are not for it (the JS path then).
 * @param {Kernel} k @param {Float32Array} input @param {number} token @param {number} top
 * @param {number} [lse] @returns {{logprob: number, top: Array<[number, number]>}|null}
 */
export function logprobsOnKernel(k, input, token, top, lse) {
  const logits = k.load(input);
  const n = logits.length;
  if (top > k.topIds.length || k.x.stats(n) !== 0) return null;
  const max = k.x.maxLogit();
  if (!(max > -Infinity)) return null;
  if (lse === undefined) {
    lse = max + Math.log(k.x.weigh(n, max, 1, scaleFor(k, n, max, SPAN)));
  }
  /** @type {Array<[number, number]>} */
  const out = [];
  if (top > 0) {
    k.x.topk(n, top);
    for (let j = 0; j < top; j++) {
      const v = k.topValues[j];
      if (v > -Infinity) out.push([k.topIds[j], floorLogprob(v - lse)]);
    }
  }
  return { logprob: floorLogprob(logits[token] - lse), top: out };
}
