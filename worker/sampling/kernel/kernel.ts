// The whole-vocabulary passes of one token's choice, in WebAssembly SIMD (AssemblyScript, compiled
// by buildtools/site/kernel.py). worker/sampling/kernel_draw.js drives them with the same rules as
// selection.js and logprobs.js: these passes only replace the loops over every logit.
//
// Weights are float64 like the JS path's. A token at s = (max - v) * scale (its place in the
// histogram, bucket floor(s)) weighs e^{-s h} with h = invT / scale: e^{-b h} (a table per call)
// times e^{-f h} with f = s - b in [0, 1) and f h <= 40 / 4095, where a degree-6 series is exact to
// float64 rounding. So each bucket's mass is its table entry times a sum of series, without an exp
// per token. Tokens past the histogram's span (weights under e^-40 of the best) use Math.exp.

const BUCKETS: i32 = 4096;
const LAST: f64 = 4095;
/** room for the ids a step gathers past the vocabulary (selection.js: SORTED_WALK) */
const EXTRA_IDS: i32 = 1024;
/** the most log-probability alternatives `topk` keeps */
const MAX_TOP: i32 = 256;

let capacity: i32 = 0;
let logitsAt: usize = 0; // f32[n rounded up to 4]
let idsAt: usize = 0; // i32[n + EXTRA_IDS]
let massAt: usize = 0; // f64[BUCKETS + 1]
let countAt: usize = 0; // i32[BUCKETS + 4]
let baseAt: usize = 0; // f64[BUCKETS]
let mass1At: usize = 0; // f64[BUCKETS]: `weighBoth`'s weights at temperature 1
let topIdsAt: usize = 0; // i32[MAX_TOP]
let topValuesAt: usize = 0; // f32[MAX_TOP]

let statMax: f64 = 0;
let statMin: f64 = 0;
let zeroCount: i32 = 0;
let total1: f64 = 0;

/** Make room for a vocabulary of `n`; returns where its logits go. */
export function reserve(n: i32): usize {
  if (n > capacity) {
    const padded = (n + 3) & ~3;
    logitsAt = (__heap_base + 15) & ~15;
    idsAt = logitsAt + (<usize>padded << 2);
    massAt = idsAt + (<usize>(padded + EXTRA_IDS) << 2);
    countAt = massAt + (<usize>(BUCKETS + 2) << 3);
    baseAt = countAt + (<usize>(BUCKETS + 4) << 2);
    mass1At = baseAt + (<usize>BUCKETS << 3);
    topIdsAt = mass1At + (<usize>BUCKETS << 3);
    topValuesAt = topIdsAt + (<usize>MAX_TOP << 2);
    const end = topValuesAt + (<usize>MAX_TOP << 2);
    const pages = <i32>((end + 0xffff) >> 16);
    if (pages > memory.size()) memory.grow(pages - memory.size());
    capacity = n;
  }
  return logitsAt;
}

export function idsPointer(): usize { return idsAt; }
export function massPointer(): usize { return massAt; }
export function countPointer(): usize { return countAt; }
export function topIdsPointer(): usize { return topIdsAt; }
export function topValuesPointer(): usize { return topValuesAt; }
export function maxLogit(): f64 { return statMax; }
export function minLogit(): f64 { return statMin; }
/** the total weight at temperature 1 the last `weighBoth` found */
export function totalAtOne(): f64 { return total1; }
/** tokens (padding included) that the last `weigh` gave no weight */
export function zeros(): i32 { return zeroCount; }

/**
 * Largest logit and smallest one above -Infinity (maxLogit, minLogit); pads the logits to a multiple
 * of 4 with -Infinity. Returns 1 when a logit is NaN or +Infinity (the JS path handles those).
 */
export function stats(n: i32): i32 {
  const padded = (n + 3) & ~3;
  for (let i = n; i < padded; i++) store<f32>(logitsAt + (<usize>i << 2), -Infinity);
  const ninf = f32x4.splat(-Infinity);
  const pinf = f32x4.splat(Infinity);
  let hi = ninf;
  let lo = pinf;
  let bad = i32x4.splat(0);
  for (let p = logitsAt, end = logitsAt + (<usize>padded << 2); p < end; p += 16) {
    const v = v128.load(p);
    hi = f32x4.pmax(hi, v);
    lo = f32x4.pmin(lo, v128.bitselect(v, pinf, f32x4.ne(v, ninf)));
    bad = v128.or(bad, v128.or(f32x4.ne(v, v), f32x4.eq(v, pinf)));
  }
  statMax = <f64>Mathf.max(Mathf.max(f32x4.extract_lane(hi, 0), f32x4.extract_lane(hi, 1)),
    Mathf.max(f32x4.extract_lane(hi, 2), f32x4.extract_lane(hi, 3)));
  statMin = <f64>Mathf.min(Mathf.min(f32x4.extract_lane(lo, 0), f32x4.extract_lane(lo, 1)),
    Mathf.min(f32x4.extract_lane(lo, 2), f32x4.extract_lane(lo, 3)));
  return v128.any_true(bad) ? 1 : 0;
}

// @ts-ignore: decorator
@inline function addTo(b: i32, x: f64): void {
  const at = massAt + (<usize>b << 3);
  store<f64>(at, load<f64>(at) + x);
}

// @ts-ignore: decorator
@inline function addTo1(b: i32, x: f64): void {
  const at = mass1At + (<usize>b << 3);
  store<f64>(at, load<f64>(at) + x);
}

/** e^{-b h} for every bucket b into baseAt: e^{-64 j h} e^{-i h} for b = 64 j + i (128 exps). */
function fillBase(h: f64): void {
  for (let i = 0; i < 64; i++) store<f64>(baseAt + (<usize>i << 3), Math.exp(-<f64>i * h));
  for (let j = 63; j > 0; j--) {
    const coarse = Math.exp(-<f64>(j << 6) * h);
    for (let i = 0; i < 64; i++) {
      store<f64>(baseAt + (<usize>((j << 6) + i) << 3), coarse * load<f64>(baseAt + (<usize>i << 3)));
    }
  }
}

/** Series sums per bucket (at `at`) times e^{-b h}, in place; returns their total. */
function scaleBuckets(at: usize, h: f64): f64 {
  fillBase(h);
  let total: f64 = 0;
  for (let b = 0; b < BUCKETS - 1; b++) {
    const m = load<f64>(at + (<usize>b << 3)) * load<f64>(baseAt + (<usize>b << 3));
    store<f64>(at + (<usize>b << 3), m);
    total += m;
  }
  return total;
}

/**
 * Weigh every token (weight e^{(v - max) invT}) into the histogram of `scale` buckets per logit:
 * mass[b] is bucket b's weight, tokens at s >= 4095 share bucket 4095. Returns the total weight.
 * (`stats` first: it pads the logits.)
 */
export function weigh(n: i32, max: f64, invT: f64, scale: f64): f64 {
  const padded = (n + 3) & ~3;
  const h = scale > 0 ? invT / scale : 0.0;
  // e^{-f h} = sum of (-f h)^k / k!, as a polynomial in f
  const c1 = -h;
  const c2 = h * h / 2;
  const c3 = -h * h * h / 6;
  const c4 = h * h * h * h / 24;
  const c5 = -h * h * h * h * h / 120;
  const c6 = h * h * h * h * h * h / 720;
  memory.fill(massAt, 0, <usize>(BUCKETS + 1) << 3);
  let tail: f64 = 0;
  let zero: i32 = 0;
  const vmax = f64x2.splat(max);
  const vscale = f64x2.splat(scale);
  const vlast = f64x2.splat(LAST);
  const k1 = f64x2.splat(c1), k2 = f64x2.splat(c2), k3 = f64x2.splat(c3);
  const k4 = f64x2.splat(c4), k5 = f64x2.splat(c5), k6 = f64x2.splat(c6), one = f64x2.splat(1);
  for (let p = logitsAt, end = logitsAt + (<usize>padded << 2); p < end; p += 16) {
    const v = v128.load(p);
    const slo = f64x2.mul(f64x2.sub(vmax, f64x2.promote_low_f32x4(v)), vscale);
    const shi = f64x2.mul(f64x2.sub(vmax, f64x2.promote_low_f32x4(v128.shuffle<u32>(v, v, 2, 3, 0, 1))), vscale);
    if (i64x2.all_true(v128.and(f64x2.lt(slo, vlast), f64x2.lt(shi, vlast)))) {
      const blo = f64x2.floor(slo);
      const bhi = f64x2.floor(shi);
      const flo = f64x2.sub(slo, blo);
      const fhi = f64x2.sub(shi, bhi);
      let qlo = f64x2.add(f64x2.mul(k6, flo), k5);
      let qhi = f64x2.add(f64x2.mul(k6, fhi), k5);
      qlo = f64x2.add(f64x2.mul(qlo, flo), k4);
      qhi = f64x2.add(f64x2.mul(qhi, fhi), k4);
      qlo = f64x2.add(f64x2.mul(qlo, flo), k3);
      qhi = f64x2.add(f64x2.mul(qhi, fhi), k3);
      qlo = f64x2.add(f64x2.mul(qlo, flo), k2);
      qhi = f64x2.add(f64x2.mul(qhi, fhi), k2);
      qlo = f64x2.add(f64x2.mul(qlo, flo), k1);
      qhi = f64x2.add(f64x2.mul(qhi, fhi), k1);
      qlo = f64x2.add(f64x2.mul(qlo, flo), one);
      qhi = f64x2.add(f64x2.mul(qhi, fhi), one);
      const ilo = i32x4.trunc_sat_f64x2_s_zero(blo);
      const ihi = i32x4.trunc_sat_f64x2_s_zero(bhi);
      addTo(i32x4.extract_lane(ilo, 0), f64x2.extract_lane(qlo, 0));
      addTo(i32x4.extract_lane(ilo, 1), f64x2.extract_lane(qlo, 1));
      addTo(i32x4.extract_lane(ihi, 0), f64x2.extract_lane(qhi, 0));
      addTo(i32x4.extract_lane(ihi, 1), f64x2.extract_lane(qhi, 1));
    } else {
      for (let j: usize = 0; j < 16; j += 4) {
        const x = <f64>load<f32>(p + j);
        const s = (max - x) * scale;
        if (s < LAST) {
          const b = <i32>s;
          const f = s - <f64>b;
          addTo(b, 1 + f * (c1 + f * (c2 + f * (c3 + f * (c4 + f * (c5 + f * c6))))));
        } else {
          const w = Math.exp((x - max) * invT);
          if (w > 0) tail += w;
          else zero++;
        }
      }
    }
  }
  const total = scaleBuckets(massAt, h);
  store<f64>(massAt + (<usize>(BUCKETS - 1) << 3), tail);
  zeroCount = zero;
  return total + tail;
}

/** How many tokens have s = (max - v) * scale below `cut`. */
export function countBelow(n: i32, max: f64, scale: f64, cut: f64): i32 {
  const padded = (n + 3) & ~3;
  const vmax = f64x2.splat(max);
  const vscale = f64x2.splat(scale);
  const vcut = f64x2.splat(cut);
  let acc = i64x2.splat(0);
  for (let p = logitsAt, end = logitsAt + (<usize>padded << 2); p < end; p += 16) {
    const v = v128.load(p);
    const slo = f64x2.mul(f64x2.sub(vmax, f64x2.promote_low_f32x4(v)), vscale);
    const shi = f64x2.mul(f64x2.sub(vmax, f64x2.promote_low_f32x4(v128.shuffle<u32>(v, v, 2, 3, 0, 1))), vscale);
    acc = i64x2.sub(i64x2.sub(acc, f64x2.lt(slo, vcut)), f64x2.lt(shi, vcut));
  }
  return <i32>(i64x2.extract_lane(acc, 0) + i64x2.extract_lane(acc, 1));
}

/**
 * The ids (ascending) of the tokens with `lo <= s < hi`, written to ids[at, ...); returns how many.
 * Only logits in [vlo, vhi] (a float32 range a little wider than the s range's) are looked at.
 */
export function gather(n: i32, max: f64, scale: f64, lo: f64, hi: f64, vlo: f32, vhi: f32, at: i32): i32 {
  const padded = (n + 3) & ~3;
  const low = f32x4.splat(vlo);
  const high = f32x4.splat(vhi);
  let out = idsAt + (<usize>at << 2);
  const start = out;
  for (let p = logitsAt, end = logitsAt + (<usize>padded << 2); p < end; p += 16) {
    const v = v128.load(p);
    if (!v128.any_true(v128.and(f32x4.ge(v, low), f32x4.le(v, high)))) continue;
    for (let j: usize = 0; j < 16; j += 4) {
      const s = (max - <f64>load<f32>(p + j)) * scale;
      if (s >= lo && s < hi) {
        store<i32>(out, <i32>((p + j - logitsAt) >> 2));
        out += 4;
      }
    }
  }
  return <i32>((out - start) >> 2);
}

/** count[b]: how many logits above -Infinity fall in bucket b (s >= 4095 in 4095); -Infinity in 4096. */
export function countBuckets(n: i32, max: f64, scale: f64): void {
  memory.fill(countAt, 0, <usize>(BUCKETS + 1) << 2);
  for (let p = logitsAt, end = logitsAt + (<usize>n << 2); p < end; p += 4) {
    const v = <f64>load<f32>(p);
    const s = (max - v) * scale;
    const b = v > -Infinity ? (s < LAST ? <i32>s : BUCKETS - 1) : BUCKETS;
    const at = countAt + (<usize>b << 2);
    store<i32>(at, load<i32>(at) + 1);
  }
}

/**
 * The `k` largest logits, largest first (ties: the lower id first), into topIds / topValues; slots
 * not filled hold -Infinity. The same insertion as logprobs.js, past a SIMD test against the k-th.
 */
export function topk(n: i32, k: i32): void {
  const padded = (n + 3) & ~3;
  for (let j = 0; j < k; j++) store<f32>(topValuesAt + (<usize>j << 2), -Infinity);
  let worst: f32 = -Infinity;
  let bar = f32x4.splat(worst);
  for (let p = logitsAt, end = logitsAt + (<usize>padded << 2); p < end; p += 16) {
    if (!v128.any_true(f32x4.gt(v128.load(p), bar))) continue;
    for (let lane: usize = 0; lane < 16; lane += 4) {
      const v = load<f32>(p + lane);
      if (!(v > worst)) continue;
      let j = k - 1;
      while (j > 0 && load<f32>(topValuesAt + (<usize>(j - 1) << 2)) < v) {
        store<f32>(topValuesAt + (<usize>j << 2), load<f32>(topValuesAt + (<usize>(j - 1) << 2)));
        store<i32>(topIdsAt + (<usize>j << 2), load<i32>(topIdsAt + (<usize>(j - 1) << 2)));
        j--;
      }
      store<f32>(topValuesAt + (<usize>j << 2), v);
      store<i32>(topIdsAt + (<usize>j << 2), <i32>((p + lane - logitsAt) >> 2));
      worst = load<f32>(topValuesAt + (<usize>(k - 1) << 2));
    }
    bar = f32x4.splat(worst);
  }
}

/** The smallest logit at or above `bound` (after `stats`, which pads). */
export function minAbove(n: i32, bound: f32): f64 {
  const padded = (n + 3) & ~3;
  const low = f32x4.splat(bound);
  const pinf = f32x4.splat(Infinity);
  let lo = pinf;
  for (let p = logitsAt, end = logitsAt + (<usize>padded << 2); p < end; p += 16) {
    const v = v128.load(p);
    lo = f32x4.pmin(lo, v128.bitselect(v, pinf, f32x4.ge(v, low)));
  }
  return <f64>Mathf.min(Mathf.min(f32x4.extract_lane(lo, 0), f32x4.extract_lane(lo, 1)),
    Mathf.min(f32x4.extract_lane(lo, 2), f32x4.extract_lane(lo, 3)));
}

/**
 * `weigh`, and in the same pass the total weight at temperature 1 (totalAtOne: the log-sum-exp of
 * log-probabilities), on the same buckets: a token weighs e^{-s h1} there, h1 = 1 / scale. For
 * scales where f h1 <= 0.015 (the series stays exact), which the caller checks.
 */
export function weighBoth(n: i32, max: f64, invT: f64, scale: f64): f64 {
  const padded = (n + 3) & ~3;
  const h = invT / scale;
  const g = 1 / scale;
  memory.fill(massAt, 0, <usize>(BUCKETS + 1) << 3);
  memory.fill(mass1At, 0, <usize>BUCKETS << 3);
  let tail: f64 = 0;
  let tail1: f64 = 0;
  let zero: i32 = 0;
  const vmax = f64x2.splat(max);
  const vscale = f64x2.splat(scale);
  const vlast = f64x2.splat(LAST);
  const one = f64x2.splat(1);
  const k1 = f64x2.splat(-h), k2 = f64x2.splat(h * h / 2), k3 = f64x2.splat(-h * h * h / 6);
  const k4 = f64x2.splat(h * h * h * h / 24), k5 = f64x2.splat(-h * h * h * h * h / 120);
  const k6 = f64x2.splat(h * h * h * h * h * h / 720);
  const g1 = f64x2.splat(-g), g2 = f64x2.splat(g * g / 2), g3 = f64x2.splat(-g * g * g / 6);
  const g4 = f64x2.splat(g * g * g * g / 24), g5 = f64x2.splat(-g * g * g * g * g / 120);
  const g6 = f64x2.splat(g * g * g * g * g * g / 720);
  for (let p = logitsAt, end = logitsAt + (<usize>padded << 2); p < end; p += 16) {
    const v = v128.load(p);
    const slo = f64x2.mul(f64x2.sub(vmax, f64x2.promote_low_f32x4(v)), vscale);
    const shi = f64x2.mul(f64x2.sub(vmax, f64x2.promote_low_f32x4(v128.shuffle<u32>(v, v, 2, 3, 0, 1))), vscale);
    if (i64x2.all_true(v128.and(f64x2.lt(slo, vlast), f64x2.lt(shi, vlast)))) {
      const blo = f64x2.floor(slo);
      const bhi = f64x2.floor(shi);
      const flo = f64x2.sub(slo, blo);
      const fhi = f64x2.sub(shi, bhi);
      let qlo = f64x2.add(f64x2.mul(k6, flo), k5);
      let qhi = f64x2.add(f64x2.mul(k6, fhi), k5);
      let rlo = f64x2.add(f64x2.mul(g6, flo), g5);
      let rhi = f64x2.add(f64x2.mul(g6, fhi), g5);
      qlo = f64x2.add(f64x2.mul(qlo, flo), k4);
      qhi = f64x2.add(f64x2.mul(qhi, fhi), k4);
      rlo = f64x2.add(f64x2.mul(rlo, flo), g4);
      rhi = f64x2.add(f64x2.mul(rhi, fhi), g4);
      qlo = f64x2.add(f64x2.mul(qlo, flo), k3);
      qhi = f64x2.add(f64x2.mul(qhi, fhi), k3);
      rlo = f64x2.add(f64x2.mul(rlo, flo), g3);
      rhi = f64x2.add(f64x2.mul(rhi, fhi), g3);
      qlo = f64x2.add(f64x2.mul(qlo, flo), k2);
      qhi = f64x2.add(f64x2.mul(qhi, fhi), k2);
      rlo = f64x2.add(f64x2.mul(rlo, flo), g2);
      rhi = f64x2.add(f64x2.mul(rhi, fhi), g2);
      qlo = f64x2.add(f64x2.mul(qlo, flo), k1);
      qhi = f64x2.add(f64x2.mul(qhi, fhi), k1);
      rlo = f64x2.add(f64x2.mul(rlo, flo), g1);
      rhi = f64x2.add(f64x2.mul(rhi, fhi), g1);
      qlo = f64x2.add(f64x2.mul(qlo, flo), one);
      qhi = f64x2.add(f64x2.mul(qhi, fhi), one);
      rlo = f64x2.add(f64x2.mul(rlo, flo), one);
      rhi = f64x2.add(f64x2.mul(rhi, fhi), one);
      const ilo = i32x4.trunc_sat_f64x2_s_zero(blo);
      const ihi = i32x4.trunc_sat_f64x2_s_zero(bhi);
      const b0 = i32x4.extract_lane(ilo, 0), b1 = i32x4.extract_lane(ilo, 1);
      const b2 = i32x4.extract_lane(ihi, 0), b3 = i32x4.extract_lane(ihi, 1);
      addTo(b0, f64x2.extract_lane(qlo, 0));
      addTo(b1, f64x2.extract_lane(qlo, 1));
      addTo(b2, f64x2.extract_lane(qhi, 0));
      addTo(b3, f64x2.extract_lane(qhi, 1));
      addTo1(b0, f64x2.extract_lane(rlo, 0));
      addTo1(b1, f64x2.extract_lane(rlo, 1));
      addTo1(b2, f64x2.extract_lane(rhi, 0));
      addTo1(b3, f64x2.extract_lane(rhi, 1));
    } else {
      for (let j: usize = 0; j < 16; j += 4) {
        const x = <f64>load<f32>(p + j);
        const s = (max - x) * scale;
        if (s < LAST) {
          const b = <i32>s;
          const f = s - <f64>b;
          addTo(b, 1 + f * (-h + f * (h * h / 2 + f * (-h * h * h / 6 + f * (h * h * h * h / 24
            + f * (-h * h * h * h * h / 120 + f * (h * h * h * h * h * h / 720)))))));
          addTo1(b, 1 + f * (-g + f * (g * g / 2 + f * (-g * g * g / 6 + f * (g * g * g * g / 24
            + f * (-g * g * g * g * g / 120 + f * (g * g * g * g * g * g / 720)))))));
        } else {
          const w = Math.exp((x - max) * invT);
          if (w > 0) tail += w;
          else zero++;
          tail1 += Math.exp(x - max);
        }
      }
    }
  }
  total1 = scaleBuckets(mass1At, g) + tail1;
  const total = scaleBuckets(massAt, h);
  store<f64>(massAt + (<usize>(BUCKETS - 1) << 3), tail);
  zeroCount = zero;
  return total + tail;
}
