// @ts-check
// Skills on the page client: Python functions decorated with pharia-skill's `@skill` or
// `@message_stream`, kept in IndexedDB across reloads. A skill call has a time limit; past it the page trips Python's interrupt
// (SIGINT through a shared buffer, so only when the page is cross-origin isolated) until the skill
// stops, and abandons the call if it does not.

import { EngineError } from "../engine_error.js";
import { cancelOnAbort, deadline, milliseconds } from "./calls.js";
import { ChunkStream } from "./chunk_stream.js";

/**
 * @typedef {import("./worker_client.js").WorkerClient} WorkerClient
 * @typedef {import("./calls.js").Deadline} Deadline
 * @typedef {Deadline & {timeLimitMs?: number, signal?: AbortSignal, namespace?: string}} SkillOptions
 *   `timeLimitMs`: how long the skill may run (default `skillTimeLimitMs` of the engine's config, 5 minutes);
 *   `signal`: aborting it cancels the call (the skill is interrupted: `SkillError`); `namespace`
 *   (runs only): its tools are the page's and those of the MCP servers connected there (`engine.tools.connect`)
 * @typedef {import("../../worker/wire_types.js").SkillEvent} SkillEvent
 *   What a `@message_stream` skill writes, as it writes it (`payload`: its end payload as JSON).
 * @typedef {"skills_register"|"skills_run"|"skills_stream"} SkillCallType
 */

/**
 * @template {SkillCallType|"skills_list"|"skills_metadata"|"skills_remove"} K
 * @typedef {import("./calls.js").ResultOf<K>} ResultOf
 */

/** How long a skill may run (or its module take to load) before it is interrupted. */
export const SKILL_TIME_LIMIT_MS = 300_000;
/** Past a skill's time limit (or after interruptGenerate), the page trips Python's interrupt this often. */
const TRIP_EVERY_MS = 200;
/** interruptGenerate() trips Python's interrupt for at most this long. */
const TRIP_INTERRUPT_FOR_MS = 10_000;
/** A skill still running this long past its time limit is abandoned: its call rejects. */
const ABANDON_AFTER_MS = 3_000;

/** Python's interrupt flag and the page's interrupt count, shared with the worker when the page is isolated. */
export class PythonInterrupts {
  /** @param {Worker} worker */
  constructor(worker) {
    /** @type {Uint8Array|null} Pyodide's interrupt flag */
    this.interruptBuffer = null;
    /** @type {Int32Array|null} how many times interruptGenerate() was called */
    this.pageInterrupts = null;
    if (globalThis.crossOriginIsolated && typeof SharedArrayBuffer === "function") {
      const shared = new SharedArrayBuffer(8);
      this.interruptBuffer = new Uint8Array(shared, 0, 1);
      this.pageInterrupts = new Int32Array(shared, 4, 1);
      worker.postMessage({ type: "interrupt_buffer", buffer: shared });
    }
  }

  /** Trip Python's interrupt: the skill whose code runs stops there if it is due. */
  trip() {
    if (this.interruptBuffer) Atomics.store(this.interruptBuffer, 0, 2); // SIGINT
  }

  /** No skill runs any more: nothing should be interrupted. */
  clear() {
    if (this.interruptBuffer) Atomics.store(this.interruptBuffer, 0, 0);
  }
}

/**
 * A skill call with a time limit: past it, Python is interrupted (KeyboardInterrupt in the skill),
 * which needs the page to be cross-origin isolated; elsewhere the limit cannot stop a skill.
 * @param {WorkerClient} client @param {PythonInterrupts} interrupts @param {number|undefined} defaultLimitMs
 * @template {SkillCallType} K
 * @param {K} type @param {any} body @param {SkillOptions} options
 * @param {{id?: string, chunk?: (c: any) => void}} [extra] the call's id, what receives streamed chunks
 * @returns {Promise<ResultOf<K>>}
 */
function skillCall(client, interrupts, defaultLimitMs, type, body, options, extra = {}) {
  const id = extra.id ?? client.newId();
  const limit = /** @type {number} */ (milliseconds(options?.timeLimitMs ?? defaultLimitMs ??
    SKILL_TIME_LIMIT_MS, "timeLimitMs"));
  const { timeoutMs, progress } = deadline(options);
  // the worker counts the limit from the skill's start; a timeout (from now) shortens it
  const time_limit_ms = Math.min(limit, milliseconds(timeoutMs, "timeoutMs") ?? limit);
  const name = typeof body?.name === "string" ? body.name : "";
  /** @type {ReturnType<typeof setTimeout>|undefined} */
  let timer;
  const started = performance.now();
  const trip = () => {
    const over = performance.now() - started - time_limit_ms;
    if (over > ABANDON_AFTER_MS && client.pending.has(id)) {
      // it waits on something that never ends, or catches its interruption: the call ends here
      client.abandon(id, done);
      client.settle(id, (p) => p.reject(new EngineError({ name: "SkillError", message: `skill ${name} ran past ` +
        `its time limit of ${time_limit_ms / 1000} s and did not stop within ${ABANDON_AFTER_MS / 1000} s: ` +
        "it was abandoned (the worker may still be busy with it)" })));
    }
    if (over > 20 * ABANDON_AFTER_MS) return; // it ignores every interrupt: stop asking
    interrupts.trip();
    timer = setTimeout(trip, TRIP_EVERY_MS);
  };
  const done = () => {
    clearTimeout(timer);
    client.skillCalls.delete(id);
    if (!client.skillCalls.size) interrupts.clear();
  };
  // `done` once the worker is done with it: Python's interrupt is tripped until then, even when
  // the page has stopped waiting (timeoutMs)
  const release = cancelOnAbort(options?.signal, () => client.cancel(id));
  const request = /** @type {import("../../worker/protocol.js").MessageBody<K>} */ ({ request: { ...body, time_limit_ms } });
  const call = client.send(type, request, { id, timeoutMs, progress, onFinal: done, chunk: extra.chunk }).finally(release);
  client.skillCalls.set(id, name);
  // a skill that keeps Python busy is stopped by Python's interrupt, which Python's handler aims
  // at the skill that is due (csi.skills.interrupts); it is tripped until the call settles
  timer = setTimeout(trip, time_limit_ms);
  if (!client.pending.has(id)) done(); // refused before it was sent
  return call;
}

/**
 * After interruptGenerate(): the skills running now stop, even before the worker reads its
 * `interrupt` message (Python's interrupt is tripped for them, for at most 10 s).
 * @param {WorkerClient} client @param {PythonInterrupts} interrupts
 */
export function interruptSkills(client, interrupts) {
  if (!client.skillCalls.size || !interrupts.pageInterrupts) return;
  Atomics.add(interrupts.pageInterrupts, 0, 1);
  const targets = [...client.skillCalls.keys()];
  const until = performance.now() + TRIP_INTERRUPT_FOR_MS;
  const trip = () => {
    if (!targets.some((t) => client.skillCalls.has(t)) || performance.now() > until) return;
    interrupts.trip();
    setTimeout(trip, TRIP_EVERY_MS);
  };
  trip();
}

/** @param {SkillOptions|undefined} options @returns {{namespace?: string}} */
function inNamespace(options) {
  return options?.namespace === undefined ? {} : { namespace: options.namespace };
}

/**
 * The `skills` namespace of an engine.
 * @param {WorkerClient} client @param {PythonInterrupts} interrupts
 * @param {() => number|undefined} defaultLimitMs the engine's `skillTimeLimitMs`, read at each call
 */
export function skillsApi(client, interrupts, defaultLimitMs) {
  /**
   * @template {"skills_register"|"skills_run"} K
   * @param {K} type @param {any} body @param {SkillOptions} options @returns {Promise<ResultOf<K>>}
   */
  const call = (type, body, options) => skillCall(client, interrupts, defaultLimitMs(), type, body, options);
  /**
   * @param {string} name @param {any} input @param {SkillOptions} options
   * @returns {AsyncIterable<SkillEvent>}
   */
  const stream = (name, input, options) => {
    const id = client.newId();
    /** @type {ChunkStream<SkillEvent>} */
    const events = new ChunkStream(() => client.cancel(id));
    try {
      skillCall(client, interrupts, defaultLimitMs(), "skills_stream", { name, input, ...inNamespace(options) }, options,
        { id, chunk: (c) => events.push(c) }).then(() => events.end(), (err) => events.end(err));
    } catch (err) { // arguments refused before anything was sent
      events.end(err instanceof Error ? err : new Error(String(err)));
    }
    return events;
  };
  return {
    /**
     * @param {{name: string, source: string}} skill @param {SkillOptions} [options]
     * @returns {Promise<ResultOf<"skills_register">>} `{name, description, input_schema, output_schema, kind}`
     */
    register: (skill, options = {}) => call("skills_register", { name: skill?.name, source: skill?.source }, options),
    /** @param {Deadline} [options] @returns {Promise<ResultOf<"skills_list">>} `[{name, description, kind, builtin, error}]` */
    list: (options = {}) => client.send("skills_list", {}, deadline(options)),
    /**
     * @param {string} name @param {Deadline} [options]
     * @returns {Promise<ResultOf<"skills_metadata">>} `{description, input_schema, output_schema, kind}`
     */
    metadata: (name, options = {}) => client.send("skills_metadata", { request: { name } }, deadline(options)),
    /**
     * @param {string} name @param {any} input a JSON value
     * @param {SkillOptions} [options] past `timeLimitMs` of running the skill is interrupted and
     *   the call rejects with a `SkillError`
     * @returns {Promise<ResultOf<"skills_run">>} the skill's output (a JSON value)
     */
    run: (name, input, options = {}) => call("skills_run", { name, input, ...inNamespace(options) }, options),
    /**
     * Run a `@message_stream` skill: `for await (const event of engine.skills.stream(name, input))`
     * yields its `message_begin` / `message_append` / `message_end` events as the skill writes them.
     * Errors (bad input, the skill raising, its time limit, a cancel) end the loop by throwing;
     * leaving the loop early cancels the skill.
     * @param {string} name @param {any} input a JSON value @param {SkillOptions} [options]
     * @returns {AsyncIterable<SkillEvent>}
     */
    stream: (name, input, options = {}) => stream(name, input, options),
    /** @param {string} name @param {Deadline} [options] @returns {Promise<null>} */
    remove: (name, options = {}) => client.send("skills_remove", { request: { name } }, deadline(options)),
  };
}
