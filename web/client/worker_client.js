// @ts-check
// The page's side of the wire: it sends each call to the worker as JSON text and settles the
// call's promise exactly once, from the worker's replies (accepted, progress, chunk, then one
// result or error), its deadline, or the worker's end (every pending call fails at once).

import { EngineError } from "../engine_error.js";
import { encodeMessage } from "../message.js";
import { milliseconds } from "./calls.js";

/**
 * @typedef {import("../../worker/protocol.js").MessageType} MessageType
 * @typedef {import("../../worker/protocol.js").WorkerReply} WorkerReply
 * @typedef {import("../../worker/protocol.js").WorkerRequest} WorkerRequest
 * @typedef {import("../../worker/protocol.js").ToolResultMessage} ToolResultMessage
 * @typedef {import("../../worker/protocol.js").Progress} Progress
 * @typedef {import("./calls.js").Deadline} Deadline
 * @typedef {Deadline & {chunk?: (chunk: any) => void, id?: string, onFinal?: () => void}} Handlers
 *   `id`: the call's id (one is made up otherwise); `onFinal`: called once the worker has answered
 *   the call (even after the page gave up on it) or is gone.
 * @typedef {{type: MessageType, resolve: (value: any) => void, reject: (err: Error) => void,
 *            chunk?: (chunk: any) => void, progress?: (p: Progress) => void, accepted: boolean,
 *            timers: ReturnType<typeof setTimeout>[], onFinal?: () => void}} PendingCall
 */

/**
 * The fields of a message of type `K` besides `id` and `type`.
 * @template {MessageType} K
 * @typedef {import("../../worker/protocol.js").MessageBody<K>} MessageBody
 */

/**
 * The `result` of a message of type `K` (worker/wire_types.d.ts, generated from Python's reply models).
 * @template {MessageType} K
 * @typedef {import("../../worker/protocol.js").ResultOf<K>} ResultOf
 */

/** A call not taken by the worker this long after a skill started is reported `queued` behind it. */
const QUEUED_AFTER_MS = 250;

/** @param {unknown} f @returns {any} `f` if it is a function */
const fn = (f) => (typeof f === "function" ? f : undefined);

/** The calls in flight to one worker. */
export class WorkerClient {
  /** @param {Worker} worker */
  constructor(worker) {
    this.worker = worker;
    this.nextId = 1;
    /** @type {Map<string, PendingCall>} */
    this.pending = new Map();
    /** @type {Map<string, () => void>} calls that timed out on the page, and what to do once the worker ends them */
    this.abandoned = new Map();
    /** @type {string|null} why the worker is gone, once it is */
    this.crashed = null;
    /** @type {Map<string, string>} skill calls (register, run) under way: id -> the skill's name */
    this.skillCalls = new Map();
    /** @type {((msg: WorkerRequest) => void)|null} what answers the worker's own requests (the page's tools) */
    this.onRequest = null;
    worker.addEventListener("message", (event) => this.receive(event.data));
    worker.addEventListener("error", (event) => {
      event.preventDefault?.();
      this.failAll(`the worker failed: ${event.message || "an uncaught error"}`);
    });
    worker.addEventListener("messageerror", () => this.failAll("a reply from the worker could not be read"));
  }

  /** A new call id. @param {string} [prefix] */
  newId(prefix = "r") {
    return `${prefix}${this.nextId++}`;
  }

  /** Calls sent and not yet settled. */
  get pendingCount() {
    return this.pending.size;
  }

  /**
   * Send a message of type `type` and follow its replies: the promise settles with its result.
   * @template {MessageType} K
   * @param {K} type @param {MessageBody<K>} [body] @param {Handlers} [handlers]
   * @returns {Promise<ResultOf<K>>}
   */
  send(type, body = /** @type {MessageBody<K>} */ ({}), handlers = {}) {
    const id = handlers.id ?? this.newId();
    return new Promise((/** @type {(result: ResultOf<K>) => void} */ resolve, reject) => {
      if (this.crashed) throw new EngineError({ name: "WorkerCrashedError", message: this.crashed });
      const timeoutMs = milliseconds(handlers.timeoutMs, "timeoutMs");
      const text = frame(id, type, body);
      /** @type {PendingCall} */
      const call = { type, resolve, reject, chunk: fn(handlers.chunk), progress: fn(handlers.progress),
        accepted: false, timers: [], onFinal: handlers.onFinal };
      this.pending.set(id, call);
      try {
        this.worker.postMessage(text);
      } catch (err) {
        this.pending.delete(id);
        throw new EngineError({ name: "WorkerCrashedError",
          message: `could not reach the worker: ${/** @type {any} */ (err)?.message ?? err}` });
      }
      if (timeoutMs !== undefined) call.timers.push(setTimeout(() => this.expire(id, timeoutMs), timeoutMs));
      if (this.busyWith(id)) call.timers.push(setTimeout(() => this.reportQueued(id), QUEUED_AFTER_MS));
    });
  }

  /**
   * Post a message that gets no reply of its own (cancel, interrupt, unload after a timeout).
   * @template {MessageType} K
   * @param {K} type @param {MessageBody<K>} body @param {string} id
   */
  post(type, body, id) {
    try {
      this.worker.postMessage(frame(id, type, body));
    } catch {
      // the worker is gone: its calls have already been rejected
    }
  }

  /** End call `target` in the worker (its own promise settles from its reply). @param {string} target */
  cancel(target) {
    this.post("cancel", { request: { target } }, `${target}-cancel`);
  }

  /**
   * Answer a request of the worker (a tool's result); dropped when the worker is gone.
   * @param {ToolResultMessage} msg
   */
  answer(msg) {
    try {
      this.worker.postMessage(msg);
    } catch (err) {
      console.error("could not answer the worker:", err);
    }
  }

  /** @param {string|object} data a {@link WorkerReply} or {@link WorkerRequest}, or its JSON text */
  receive(data) {
    /** @type {WorkerReply|WorkerRequest} */
    let msg;
    try {
      msg = typeof data === "string" ? JSON.parse(data) : data;
    } catch {
      return; // not ours: every reply of the worker is JSON text
    }
    if (msg?.type === "fatal") { // the worker is gone: a skill closed it, or its Python failed fatally
      this.failAll(String(msg.error?.message ?? "the worker ended"));
      this.worker.terminate();
      return;
    }
    if (msg?.type === "tool_call" || msg?.type === "tool_cancel") {
      this.onRequest?.(msg);
      return;
    }
    const id = /** @type {string} */ (msg?.id);
    const p = this.pending.get(id);
    if (!p) {
      if (msg?.type === "result" || msg?.type === "error") this.ended(id);
      return;
    }
    if (msg.type === "accepted") p.accepted = true;
    else if (msg.type === "progress") {
      const progress = msg.progress;
      const skill = progress?.stage === "queued" && this.skillCalls.get(String(progress.waiting_for));
      this.report(p, skill ? { ...progress, skill } : progress);
    }
    else if (msg.type === "chunk") p.chunk?.(msg.chunk);
    else if (msg.type === "error") {
      const error = msg.error;
      this.settle(id, (q) => {
        q.onFinal?.();
        q.reject(new EngineError(error));
      });
    }
    else {
      const result = msg.result;
      this.settle(id, (q) => {
        q.onFinal?.();
        q.resolve(result);
      });
    }
  }

  /**
   * End call `id` (if still pending) and stop its timers; `how` resolves or rejects it.
   * @param {string} id @param {(p: PendingCall) => void} how
   */
  settle(id, how) {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    for (const t of p.timers) clearTimeout(t);
    how(p);
  }

  /**
   * The page stops waiting for call `id`; `onFinal` runs once the worker ends it (or is gone).
   * @param {string} id @param {() => void} onFinal
   */
  abandon(id, onFinal) {
    this.abandoned.set(id, onFinal);
  }

  /** The worker ended call `id`, which the page had given up on. @param {string} id */
  ended(id) {
    const onFinal = this.abandoned.get(id);
    this.abandoned.delete(id);
    onFinal?.();
  }

  /**
   * Reject every pending call with a `WorkerCrashedError`: the worker is gone (create a new engine).
   * @param {string} message
   */
  failAll(message) {
    const pending = [...this.pending.values()];
    this.pending.clear();
    this.crashed ??= message;
    for (const p of pending) {
      for (const t of p.timers) clearTimeout(t);
      p.onFinal?.();
      p.reject(new EngineError({ name: "WorkerCrashedError", message: this.crashed }));
    }
    for (const onFinal of this.abandoned.values()) onFinal();
    this.abandoned.clear();
  }

  /** Stop the worker now; pending calls reject with `WorkerCrashedError`. */
  terminate() {
    this.worker.terminate();
    this.failAll("the worker was terminated");
  }

  /**
   * Call `id` is past its `timeoutMs`: it rejects with a `TimeoutError`, its work is cancelled.
   * @param {string} id @param {number} ms
   */
  expire(id, ms) {
    const call = this.pending.get(id);
    if (call?.onFinal) this.abandon(id, call.onFinal);
    this.settle(id, (p) => p.reject(new EngineError({ name: "TimeoutError", param: "timeoutMs",
      message: `the ${p.type} call had no answer within ${ms} ms; it was cancelled` })));
    if (!call) return;
    // a load is cancelled by unloading (it would replace every model anyway)
    if (call.type === "load") this.post("unload", {}, `${id}-unload`);
    else this.cancel(id);
  }

  /** The skill call (id and name) that keeps the worker's Python busy, other than call `id`. @param {string} id */
  busyWith(id) {
    return [...this.skillCalls].find(([other]) => other !== id);
  }

  /**
   * The worker has not taken call `id` yet while a skill runs: its Python is busy with that skill.
   * @param {string} id
   */
  reportQueued(id) {
    const p = this.pending.get(id);
    const busy = this.busyWith(id);
    if (!p || p.accepted || !busy) return;
    this.report(p, { stage: "queued", file: null, loaded: 0, total: 1, model: null, waiting_for: busy[0], skill: busy[1] });
  }

  /** @param {PendingCall} p @param {Progress} progress */
  report(p, progress) {
    try {
      p.progress?.(progress);
    } catch (err) {
      console.error("a progress callback threw:", err); // the call goes on
    }
  }
}

/**
 * The JSON text of message `type` with `body`: the one place a message is framed.
 * @template {MessageType} K
 * @param {string} id @param {K} type @param {MessageBody<K>} body
 */
function frame(id, type, body) {
  return encodeMessage({ id, type, ...body }); // id first: the worker finds it even in a bad message
}
