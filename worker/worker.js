// The module Web Worker: boots Pyodide from the site's own copy, installs the wheels listed in
// /wheels/wheels.json (pydantic, pydantic_core for Pyodide, their deps, our csi wheel; the packages
// skills import load later, when a skill needs them: packages.js), and hands
// every page message to the app of csi.worker.main. Python answers control messages (interrupt,
// cancel, boot_timings) at once, schedules the others on its event loop, and posts every reply
// itself (as JSON text). The message protocol is declared in protocol.js. The page's answers to
// tool calls (`tool_result`) are read here, in JS (page_tools.js), whatever Python is doing.

import { Bridge, SITE_MODELS_LISTED } from "./bridge/index.js";
import { Host } from "./host.js";
import { PackageLoader } from "./packages.js";
import { setLogitProcessorRegistry } from "./logit_processors.js";
import { PageTools } from "./page_tools.js";
import { bootPyodide } from "./pyodide_boot.js";
import { pycCache } from "./pyc_cache.js";
import { DEFAULTS } from "./protocol.js";

export { setLogitProcessorRegistry };

/**
 * @typedef {import("./protocol.js").PageMessage} PageMessage
 * @typedef {import("./protocol.js").WorkerReply} WorkerReply
 * @typedef {import("./protocol.js").BootTimings} BootTimings
 * @typedef {import("./protocol.js").MessageOf<"load">} LoadMessage
 * @typedef {import("./protocol.js").Requests["load"]} LoadRequest
 *
 * @typedef {object} App csi.worker.main's app, a Python object seen through its proxy
 * @property {(raw: string) => void} handle serve one page message (JSON text); synchronous: it
 *   answers control messages at once and queues the others as tasks, posting every reply itself
 * @property {(json: string) => void} set_boot_timings the {@link BootTimings} of this boot, as JSON
 */

const SITE = new URL("../", import.meta.url);

const bridge = new Bridge();
/** @type {Set<string|number>} load requests whose models the worker began loading while Python booted */
const preloadedFor = new Set();

/** @param {WorkerReply|string} message a reply, or one already in JSON text */
function post(message) {
  const text = typeof message === "string" ? message : JSON.stringify(message);
  if (preloadedFor.size) settlePreloads(typeof message === "string" ? JSON.parse(message) : message);
  self.postMessage(text);
}

/**
 * A page message as an object: its JSON text parsed (null when it is not JSON), or the object posted.
 * @param {unknown} data @returns {any}
 */
function messageOf(data) {
  try {
    return typeof data === "string" ? JSON.parse(data) : data;
  } catch {
    return null;
  }
}

/**
 * Begin loading the models of a load request that arrives while Python boots (the ONNX sessions are
 * made meanwhile; Python's load of the same model takes the work over). Absent fields take the
 * defaults of Python's models (protocol.js `DEFAULTS`).
 * @param {any} msg a page message, parsed (see {@link messageOf})
 */
function preloadFrom(msg) {
  if (msg?.type !== "load") return;
  // read as its type says, each field checked: Python checks the message itself, later
  const request = /** @type {Partial<LoadMessage>} */ (msg).request;
  const ids = request?.model_ids;
  const device = request?.device ?? DEFAULTS.LoadRequest.device;
  const id = idOf(msg);
  if (id === null || !Array.isArray(ids) || typeof device !== "string") return;
  preloadedFor.add(id);
  const serverOnly = remoteOnlyIds(request?.remotes);
  SITE_MODELS_LISTED.then(() => {
    for (const model of ids.slice(0, 4)) {
      if (typeof model === "string" && !serverOnly.has(model)) bridge.preload(model, device);
    }
  });
}

/**
 * The models a load's `remotes` has always served by their server: nothing of them to preload.
 * @param {LoadRequest["remotes"]} [remotes] @returns {Set<string>}
 */
function remoteOnlyIds(remotes) {
  const out = new Set();
  for (const server of Array.isArray(remotes) ? remotes : []) {
    for (const m of Array.isArray(server?.models) ? server.models : []) {
      if (typeof m === "string") out.add(m);
      else if (typeof m?.id === "string" && (m.policy ?? DEFAULTS.RemoteModelSpec.policy) === "remote") out.add(m.id);
    }
  }
  return out;
}

/**
 * Once the load request a preload was begun for has its answer, the preloads it did not take are
 * ended (a request Python refused, a model it did not load).
 * @param {WorkerReply} reply
 */
function settlePreloads(reply) {
  if (reply?.id == null || !preloadedFor.has(reply.id) || (reply.type !== "result" && reply.type !== "error")) return;
  preloadedFor.delete(reply.id);
  bridge.discardPreloads();
}

/** @param {string|null} id @param {string} stage @param {number} loaded @param {number} total */
function bootProgress(id, stage, loaded = 0, total = 1) {
  post({ id, type: "progress", progress: { stage, file: null, loaded, total, model: null } });
}

/** The page's tools: calls posted to the page, and its answers awaited (by Python). */
const pageTools = new PageTools(post);

/** @type {Uint8Array|null} Pyodide's interrupt flag, shared with the page (cross-origin isolated sites) */
let interruptBuffer = null;
/** @type {Int32Array|null} how many times the page called interruptGenerate(), shared with it */
let pageInterrupts = null;
/** @type {any} */
let pyodideInstance = null;
/** whether this worker has announced its end (it answers nothing after) */
let ended = false;

/**
 * Tell the page this worker is gone, so every call it has pending rejects with WorkerCrashedError
 * at once: a skill closed it, or Pyodide failed fatally (a wasm trap, out of memory).
 * @param {string} why
 */
function announceEnd(why) {
  if (ended) return;
  ended = true;
  post({ id: null, type: "fatal", error: { name: "WorkerCrashedError", message: why, param: null } });
}

const closeWorker = self.close.bind(self);
/** A worker that closes itself (e.g. a skill calling `js.close()`) says so first. */
function close() {
  announceEnd("the worker closed itself (a skill called close())");
  closeWorker();
}
self.close = close;
Object.defineProperty(Object.getPrototypeOf(self), "close", { value: close, configurable: true, writable: true });

/** @type {App|null} */
let app = null;
/** @type {Promise<App>|null} */
let booting = null;

/**
 * @param {string|null} id the request that triggered the boot (its progress goes there)
 * @returns {Promise<App>}
 */
async function boot(id) {
  const t0 = performance.now();
  bootProgress(id, "pyodide", 0);
  const { pyodide, snapshot } = await bootPyodide(new URL("vendor/pyodide/", SITE).href);
  pyodideInstance = pyodide;
  pyodide._api.on_fatal = (/** @type {any} */ err) => {
    announceEnd(`the worker's Python failed fatally: ${err?.message ?? err}`);
    setTimeout(closeWorker); // after the announcement is posted
  };
  const t1 = performance.now();
  bootProgress(id, "wheels", 0);
  const wheels = await (await fetch(new URL("wheels/wheels.json", SITE))).json();
  const bytecodeCache = pycCache(pyodide, SITE, wheels); // read while the wheels install
  await pyodide.loadPackage(
    wheels.map((/** @type {string} */ w) => new URL(`wheels/${w}`, SITE).href),
    { messageCallback: () => {}, errorCallback: (/** @type {string} */ e) => console.error(e) },
  );
  const pyc = await bytecodeCache;
  const bytecode = await pyc.restore();
  const t2 = performance.now();
  await SITE_MODELS_LISTED;
  const mod = pyodide.pyimport("csi.worker.main");
  /** @type {App} */
  const created = mod.create_app(bridge, new Host(new PackageLoader(pyodide)), post,
    () => (pageInterrupts ? Atomics.load(pageInterrupts, 0) : 0), pageTools);
  mod.destroy();
  // only now: Python's handler aims each interrupt at the skill it is for (csi.skills.interrupts)
  if (interruptBuffer) pyodide.setInterruptBuffer(interruptBuffer);
  const t3 = performance.now();
  pyc.keep();
  bootProgress(id, "python-ready", 1);
  /** @type {BootTimings} */
  const timings = { pyodide_s: (t1 - t0) / 1000, wheels_s: (t2 - t1) / 1000, imports_s: (t3 - t2) / 1000,
                    pyodide_snapshot: snapshot, bytecode };
  created.set_boot_timings(JSON.stringify(timings));
  return created;
}

/**
 * A message's id, for the replies the worker sends before Python reads the message.
 * @param {any} msg the message, parsed (see {@link messageOf})
 */
function idOf(msg) {
  const id = msg?.id;
  return typeof id === "string" || Number.isSafeInteger(id) ? id : null;
}

/** @param {MessageEvent} event a message from the page */
async function onMessage(event) {
  const data = event.data;
  if (data?.type === "interrupt_buffer") {
    // byte 0: Pyodide's interrupt flag, which the page trips to stop a skill that keeps Python busy;
    // bytes 4-7: the page's interruptGenerate() count
    if (data.buffer instanceof SharedArrayBuffer && data.buffer.byteLength >= 8) {
      interruptBuffer = new Uint8Array(data.buffer, 0, 1);
      pageInterrupts = new Int32Array(data.buffer, 4, 1);
      if (app) pyodideInstance?.setInterruptBuffer(interruptBuffer);
    }
    return;
  }
  if (data?.type === "tool_result") { // the page's answer to a tool call (an object, not JSON text)
    pageTools.settle(data);
    return;
  }
  if (ended) return;
  /** @type {any} the message, once read here (only while Python boots: Python reads every message) */
  let msg;
  const id = () => idOf(msg === undefined ? messageOf(data) : msg);
  try {
    if (!app) {
      msg = messageOf(data);
      preloadFrom(msg);
      booting ??= boot(idOf(msg));
      app = await booting;
    }
    // Python reads every message as hostile input (csi.worker.message); an object (from code that
    // posts to the worker itself) goes there as JSON text too
    let text;
    try {
      text = typeof data === "string" ? data : JSON.stringify(data) ?? "null";
    } catch (/** @type {any} */ err) {
      post({ id: id(), type: "error", error: { name: "InvalidInputError", message: `the message is not JSON: ${err?.message ?? err}`, param: "message" } });
      return;
    }
    app.handle(text);
  } catch (/** @type {any} */ err) {
    if (err?.pyodide_fatal_error) {
      announceEnd(`the worker's Python failed fatally: ${err?.message ?? err}`);
      return;
    }
    post({
      id: id(),
      type: "error",
      error: { name: err?.name === "PythonError" ? "InternalError" : "WorkerError", message: String(err?.message ?? err), param: null },
    });
  }
}

self.onmessage = onMessage;

/**
 * WebLLM's worker-side handler, for worker scripts written for WebLLM:
 *
 *   import { WebWorkerMLCEngineHandler } from "/worker/worker.js";
 *   const handler = new WebWorkerMLCEngineHandler();
 *   handler.setLogitProcessorRegistry(new Map([["tiny-chat", myProcessor]]));
 *   self.onmessage = (msg) => handler.onmessage(msg);
 *
 * Importing this module already serves the page; the handler is there for such scripts.
 */
export class WebWorkerMLCEngineHandler {
  /** @param {Map<string, import("./logit_processors.js").LogitProcessor>} registry */
  setLogitProcessorRegistry(registry) {
    setLogitProcessorRegistry(registry);
  }

  /** @param {MessageEvent} event */
  onmessage(event) {
    return onMessage(event);
  }
}
