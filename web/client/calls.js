// @ts-check
// What every API namespace of the page client shares: a call's deadline, a millisecond argument
// checked on the page, a method that sends its first argument as the message's `request`, and
// methods that always settle (a bad argument rejects, it never throws).

import { EngineError } from "../engine_error.js";

/**
 * @typedef {import("../../worker/protocol.js").Progress} Progress
 * @typedef {{timeoutMs?: number, progress?: (p: Progress) => void}} Deadline
 *   Every method takes these last: past `timeoutMs` the call rejects with a `TimeoutError` (its work
 *   in the worker is cancelled; the engine goes on); `progress` receives the call's progress
 *   events, among them `{stage: "queued", waiting_for, skill?}` when it has to wait: for a model
 *   another request is using (`waiting_for` is that request's id), or for a skill that keeps the
 *   worker's Python busy (`skill` names it).
 * @typedef {Deadline & {signal?: AbortSignal}} CallOptions
 * @typedef {keyof import("../../worker/wire_types.js").Requests} RequestType message types with a `request`
 */

/**
 * The `request` a message of type `K` carries (worker/wire_types.d.ts, generated from Python).
 * @template {RequestType} K
 * @typedef {import("../../worker/wire_types.js").Requests[K]} RequestOf
 */

/**
 * The `result` of a message of type `K` (worker/wire_types.d.ts, generated from Python's reply models).
 * @template {import("../../worker/protocol.js").MessageType} K
 * @typedef {import("../../worker/protocol.js").ResultOf<K>} ResultOf
 */

/**
 * Call `cancel` when `signal` aborts (once the request is sent, if it already has).
 * @param {AbortSignal|undefined} signal @param {() => void} cancel
 * @returns {() => void} stops listening (call it when the call has settled)
 */
export function cancelOnAbort(signal, cancel) {
  if (!signal || typeof signal.addEventListener !== "function") return () => {};
  if (signal.aborted) {
    queueMicrotask(cancel);
    return () => {};
  }
  signal.addEventListener("abort", cancel, { once: true });
  return () => signal.removeEventListener("abort", cancel);
}

/** The longest time limit a call takes (a day). */
export const MAX_TIME_LIMIT_MS = 86_400_000;

/**
 * `value` as a number of milliseconds, or a typed error naming `param`.
 * @param {unknown} value @param {string} param @param {number} [max]
 * @returns {number|undefined}
 */
export function milliseconds(value, param, max = MAX_TIME_LIMIT_MS) {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !(value > 0 && value <= max)) {
    throw new EngineError({ name: "InvalidInputError", param,
      message: `\`${param}\` must be a number of milliseconds from 0 (excluded) to ${max}` });
  }
  return value;
}

/**
 * The `timeoutMs` and `progress` of a method's last argument (undefined when it has none).
 * @param {any} options @returns {Deadline}
 */
export function deadline(options) {
  return options && typeof options === "object"
    ? { timeoutMs: options.timeoutMs, progress: typeof options.progress === "function" ? options.progress : undefined }
    : {};
}

/**
 * A method that sends its first argument as the message's `request` (`fallback` when it is left
 * out), with the call's {@link Deadline} last.
 * @template {RequestType} K
 * @param {import("./worker_client.js").WorkerClient} client @param {K} type @param {RequestOf<K>} [fallback]
 * @returns {(request?: RequestOf<K>, options?: Deadline) => Promise<ResultOf<K>>}
 */
export function requestCall(client, type, fallback) {
  return (request = fallback, options = {}) =>
    client.send(type, /** @type {import("../../worker/protocol.js").MessageBody<K>} */ ({ request }), deadline(options));
}

/**
 * Make every method of `api` (and of the objects under it) return a rejected promise instead of
 * throwing, whatever its arguments. A method that returns an async iterable (a stream whose errors
 * end its loop) returns it as it is.
 * @param {Record<string, any>} api
 */
export function settleOnly(api) {
  for (const [key, value] of Object.entries(api)) {
    if (typeof value === "function") {
      api[key] = (/** @type {any[]} */ ...args) => {
        try {
          const out = value(...args);
          return out && typeof out[Symbol.asyncIterator] === "function" && typeof out.then !== "function"
            ? out : Promise.resolve(out);
        } catch (err) {
          const e = /** @type {any} */ (err);
          return Promise.reject(e instanceof EngineError || e?.name === "InvalidInputError" ? e
            : new EngineError({ name: "InvalidInputError", message: String(e?.message ?? e), param: "arguments" }));
        }
      };
    } else if (value && typeof value === "object") {
      settleOnly(value);
    }
  }
}
