// @ts-check
// How the Prompt API facade (prompt_api.js) calls a csi-web engine: the `monitor` target, a prefill
// of a session's tokens, a signal that cuts a call short, and engine errors as the DOMExceptions the
// Prompt API names.

import { domError, quotaExceeded } from "./prompt_api_input.js";

/**
 * @typedef {import("./prompt_api_input.js").TextMessage} TextMessage
 * @typedef {import("./engine.js").WebWorkerEngine} WebWorkerEngine
 */

/**
 * The `monitor` callback's target, which receives `downloadprogress` events (loaded 0 to 1,
 * total 1, never backwards; 0 and 1 always come).
 * @param {unknown} monitor
 */
export function createMonitor(monitor) {
  if (monitor !== undefined && typeof monitor !== "function") throw new TypeError("monitor must be a function");
  const target = Object.assign(new EventTarget(), { ondownloadprogress: /** @type {((e: ProgressEvent) => any)|null} */ (null) });
  monitor?.(target);
  let last = -1;
  return {
    report: (/** @type {number} */ fraction) => {
      if (fraction <= last) return;
      last = fraction;
      const event = new ProgressEvent("downloadprogress", { loaded: fraction, total: 1, lengthComputable: true });
      target.dispatchEvent(event);
      target.ondownloadprogress?.call(target, event);
    },
  };
}

/**
 * Run `ids` through the model so that its KV cache holds them (one token is generated and dropped).
 * @param {WebWorkerEngine} engine @param {string} model @param {number[]} ids @param {AbortSignal|undefined} signal
 */
export async function prefill(engine, model, ids, signal) {
  await engine.completions.create({ model, prompt: ids, max_tokens: 1, temperature: 0 }, { signal })
    .catch((e) => { throw fromEngine(e); });
  signal?.throwIfAborted();
}

/** The messages as chat_tokens takes them. @param {TextMessage[]} messages */
export const wire = (messages) => messages.map(({ role, content, calls, callId }) => ({
  role, content, ...(calls ? { tool_calls: calls } : {}), ...(callId === undefined ? {} : { tool_call_id: callId }),
}));

/**
 * `promise`, or its signal's abort reason as soon as it aborts.
 * @template T @param {Promise<T>} promise @param {AbortSignal|undefined} signal
 * @returns {Promise<T>}
 */
export function abortable(promise, signal) {
  if (!signal) return promise;
  return new Promise((resolve, reject) => {
    const stop = () => reject(signal.reason);
    if (signal.aborted) stop();
    signal.addEventListener("abort", stop, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", stop));
  });
}

/**
 * An engine's error as the Prompt API names it (the engine's error stays as `cause`).
 * @param {any} e
 * @returns {Error}
 */
export function fromEngine(e) {
  if (e instanceof DOMException || e instanceof TypeError || e instanceof RangeError) return e;
  const name = String(e?.name ?? "");
  const param = String(e?.param ?? "");
  const mapped = param.startsWith("response_format") || param.startsWith("tools") || name === "ModelNotSupportedError"
    || name === "NotSupportedError" ? "NotSupportedError"
    : name === "ModelLoadError" ? "NetworkError"
      : name === "TimeoutError" ? "TimeoutError" : "UnknownError";
  if (name === "ContextWindowExceededError") return quotaExceeded(String(e.message), NaN, NaN);
  const out = domError(mapped, `${name ? `${name}: ` : ""}${e?.message ?? e}`);
  Object.defineProperty(out, "cause", { value: e });
  return out;
}

/**
 * Read a streamed reply of the engine to its end, each chunk's first choice to `each`: its finish
 * reason and the tokens it generated. An abort (`signal`, or the engine's `abort` finish) is the
 * Prompt API's `AbortError`; an engine error is named as the Prompt API names it.
 * @param {() => Promise<AsyncIterable<any>>} open @param {AbortSignal} signal
 * @param {(choice: any) => void} each
 * @returns {Promise<{finish: string|null, generated: number}>}
 */
export async function readReply(open, signal, each) {
  let finish = null;
  let generated = 0;
  try {
    for await (const c of await open()) {
      const choice = c.choices?.[0];
      each(choice);
      if (choice?.finish_reason) finish = choice.finish_reason;
      if (c.usage) generated = c.usage.completion_tokens;
    }
  } catch (e) {
    signal.throwIfAborted();
    throw fromEngine(e);
  }
  signal.throwIfAborted();
  if (finish === "abort") throw domError("AbortError", "the prompt was aborted");
  return { finish, generated };
}
