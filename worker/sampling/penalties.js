// Repetition, frequency and presence penalties and the logit bias, on a float32 copy of the logits.

/** @typedef {import("./params.js").SamplingParams} SamplingParams */

/** The largest float32: a repetition penalty saturates there instead of making an infinity. */
const F32_MAX = 3.4028234663852886e38;

/** Whether penalties or bias change anything (else the logits are sampled as they are). @param {SamplingParams} p */
export function changesLogits(p) {
  return (p.repetition_penalty ?? 1) !== 1 || (p.frequency_penalty ?? 0) !== 0 || (p.presence_penalty ?? 0) !== 0
    || (p.logit_bias ?? []).length !== 0;
}

/** Where the changed logits are written, reused across steps (a step is synchronous). */
let copyBuffer = new Float32Array(0);

/**
 * `logits` copied into the scratch buffer (valid until the next step), to be changed there.
 * @param {Float32Array} logits
 */
export function scratchCopy(logits) {
  if (copyBuffer.length < logits.length) copyBuffer = new Float32Array(logits.length);
  const out = copyBuffer.subarray(0, logits.length);
  out.set(logits);
  return out;
}

/**
 * Apply the repetition penalty (over the window of `sequence`), then the frequency and presence
 * penalties (over `counts`), to `out` in place.
 * @param {Float32Array} out @param {SamplingParams} p
 * @param {number[]} sequence every token in the model's context so far (prompt and generated)
 * @param {Map<number, number>} counts how often each token was generated so far
 */
export function penalizeInPlace(out, p, sequence, counts) {
  const rep = p.repetition_penalty ?? 1;
  const freq = p.frequency_penalty ?? 0;
  const pres = p.presence_penalty ?? 0;
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
}

/** Add the logit bias to `out` in place. @param {Float32Array} out @param {Array<[number, number]>} bias */
export function biasInPlace(out, bias) {
  for (const [id, b] of bias) {
    if (id >= 0 && id < out.length) out[id] += b;
  }
}

/**
 * Penalties and bias applied to a copy of `logits` (the same array when there is nothing to do).
 * The copy is a scratch buffer, valid until the next step. (The Sampler runs the same math as
 * its `penalize` and `bias` steps.)
 * @param {Float32Array} logits
 * @param {SamplingParams} p
 * @param {number[]} sequence every token in the model's context so far (prompt and generated)
 * @param {Map<number, number>} counts how often each token was generated so far
 * @param {{bias: number}} [timing] where to put the seconds the bias took
 */
export function processLogits(logits, p, sequence, counts, timing) {
  if (timing) timing.bias = 0;
  if (!changesLogits(p)) return logits;
  const out = scratchCopy(logits);
  penalizeInPlace(out, p, sequence, counts);
  const t = timing ? performance.now() : 0;
  biasInPlace(out, p.logit_bias ?? []);
  if (timing) timing.bias = (performance.now() - t) / 1000;
  return out;
}
