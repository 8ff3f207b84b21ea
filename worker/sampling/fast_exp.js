// e^x for the weighing loops over the vocabulary: the same float64 value as Math.exp to within an
// ulp or two, in a few multiplies and two table reads that the JIT inlines (Math.exp is a call into
// the engine's C library, and most of a sampling step's time when it ran over 151,936 logits).

/** Table entries per power of two: e^x = 2^(k/64) e^r with |r| <= ln2/128. */
const N = 64;
const INV_LN2_N = N / Math.LN2;
// ln2/64 in two parts (fdlibm's split, the high part with 21 trailing zero bits): k * HI is exact
const LN2_N_HI = 6.93147180369123816490e-1 / N;
const LN2_N_LO = 1.90821492927058770002e-10 / N;
/** 1.5 * 2^52: adding and subtracting it rounds a double to the nearest integer */
const ROUND = 6755399441055744;
/** 2^(j/64) for j in [0, 64) */
const FRACTIONS = Float64Array.from({ length: N }, (_, j) => 2 ** (j / N));
/** 2^(i - 1023) for i in [0, 2047]: normal numbers only (smaller arguments go to Math.exp) */
const POWERS = Float64Array.from({ length: 2048 }, (_, i) => 2 ** (i - 1023));

/**
 * e^x for x <= 709 (x < -708, -Infinity and NaN go to Math.exp; the weighing loops never pass more).
 * @param {number} x
 * @returns {number}
 */
export function fastExp(x) {
  if (!(x >= -708)) return Math.exp(x);
  const kd = x * INV_LN2_N + ROUND - ROUND;
  const k = kd | 0;
  const r = x - kd * LN2_N_HI - kd * LN2_N_LO;
  // degree 5: the next term, r^6/720 < 4e-17, is below half an ulp
  const p = 1 + r * (1 + r * (0.5 + r * (1 / 6 + r * (1 / 24 + r * (1 / 120)))));
  return POWERS[(k >> 6) + 1023] * FRACTIONS[k & 63] * p;
}

