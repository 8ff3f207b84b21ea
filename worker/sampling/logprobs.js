// Log-probabilities of the chosen token and of the most likely ones, always finite.

import { fastExp } from "./fast_exp.js";

/**
 * The floor of every log-probability (csi.core.request.MIN_LOGPROB, OpenAI's "very unlikely"): a
 * token with no chance, or logits that are not finite, give this, never -Infinity or NaN.
 */
export const MIN_LOGPROB = -9999;

/** @param {number} v a log-probability @returns {number} finite, at least {@link MIN_LOGPROB} */
function floorLogprob(v) {
  return Number.isFinite(v) && v > MIN_LOGPROB ? v : MIN_LOGPROB;
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
    for (let i = 0; i < n; i++) sum += fastExp(logits[i] - max);
    lse = max + Math.log(sum);
  }
  /** @type {Array<[number, number]>} */
  const top = [];
  // tokens a grammar ruled out (-Infinity) are never among the alternatives
  for (let j = 0; j < k; j++) if (topValues[j] > -Infinity) top.push([topIds[j], floorLogprob(topValues[j] - lse)]);
  return { logprob: floorLogprob(logits[token] - lse), top };
}
