// WebLLM's logit processors: JS objects registered in the worker, per model, that see the logits
// of every token the model samples (before csi-web's own processing: penalties, bias, grammar,
// temperature, ...), hear which token was sampled, and are reset by the page's `resetChat()`.
// They live in the worker because functions cannot cross to it: register them in your worker
// script (see WebWorkerMLCEngineHandler in worker.js).

/**
 * @typedef {object} LogitProcessor
 * @property {(logits: Float32Array) => Float32Array} processLogits the logits to sample from
 *   (it may change and return the array it is given, a copy of the model's)
 * @property {(token: number) => void} processSampledToken
 * @property {() => void} resetState
 */

/** @type {Map<string, LogitProcessor>} model id -> its processor */
export const LOGIT_PROCESSORS = new Map();

/**
 * Use these processors (model id -> processor) from now on, in place of the earlier ones.
 * @param {Map<string, LogitProcessor>} registry
 */
export function setLogitProcessorRegistry(registry) {
  if (!(registry instanceof Map)) throw new TypeError("a logit processor registry is a Map of model id -> processor");
  for (const [id, p] of registry) {
    for (const method of ["processLogits", "processSampledToken", "resetState"]) {
      if (typeof /** @type {any} */ (p)?.[method] !== "function") throw new TypeError(`the logit processor of ${id} has no ${method}()`);
    }
  }
  LOGIT_PROCESSORS.clear();
  for (const [id, p] of registry) LOGIT_PROCESSORS.set(id, p);
}

/**
 * The logits a model samples from: its processor's, when it has one.
 * @param {string} model @param {Float32Array} logits
 */
export function processedLogits(model, logits) {
  const p = LOGIT_PROCESSORS.get(model);
  if (!p) return logits;
  const out = p.processLogits(logits.slice());
  if (!(out instanceof Float32Array) || out.length !== logits.length) {
    throw new Error(`the logit processor of ${model} returned no Float32Array of ${logits.length} logits`);
  }
  return out;
}
