// The module Web Worker: boots Pyodide from the site's own copy, installs the wheels listed in
// /wheels/wheels.json (pydantic, pydantic_core for Pyodide, their deps, our csi wheel), and hands
// every page message to csi.worker_app.WorkerApp. Replies are posted by Python as JSON strings.

import { loadPyodide } from "../vendor/pyodide/pyodide.mjs";
import { Bridge } from "./bridge.js";
import { Host } from "./host.js";

const SITE = new URL("../", import.meta.url);

/** @param {any} message */
function post(message) {
  self.postMessage(typeof message === "string" ? message : JSON.stringify(message));
}

/** @param {string|null} id @param {string} stage @param {number} loaded @param {number} total */
function bootProgress(id, stage, loaded = 0, total = 1) {
  post({ id, type: "progress", progress: { stage, file: null, loaded, total, model: null } });
}

let app = null;
let booting = null;

/** @param {string|null} id the request that triggered the boot (its progress goes there) */
async function boot(id) {
  const t0 = performance.now();
  bootProgress(id, "pyodide", 0);
  const pyodide = await loadPyodide({ indexURL: new URL("vendor/pyodide/", SITE).href });
  const t1 = performance.now();
  bootProgress(id, "wheels", 0);
  const wheels = await (await fetch(new URL("wheels/wheels.json", SITE))).json();
  await pyodide.loadPackage(
    wheels.map((w) => new URL(`wheels/${w}`, SITE).href),
    { messageCallback: () => {}, errorCallback: (e) => console.error(e) },
  );
  const mod = pyodide.pyimport("csi.pyodide_backend");
  const created = mod.create_app(new Bridge(), new Host(), post);
  mod.destroy();
  const t2 = performance.now();
  bootProgress(id, "python-ready", 1);
  self.bootTimings = { pyodide_s: (t1 - t0) / 1000, wheels_s: (t2 - t1) / 1000 };
  return created;
}

self.onmessage = async (event) => {
  const msg = typeof event.data === "string" ? JSON.parse(event.data) : event.data;
  const id = msg?.id ?? null;
  try {
    if (!app) {
      booting ??= boot(id);
      app = await booting;
    }
    // Control messages act at once, between two tokens of whatever is running.
    if (msg?.type === "interrupt") {
      app.interrupt();
      post({ id, type: "result", result: null });
      return;
    }
    if (msg?.type === "cancel") {
      app.cancel(String(msg.target));
      post({ id, type: "result", result: null });
      return;
    }
    if (msg?.type === "boot_timings") {
      post({ id, type: "result", result: self.bootTimings });
      return;
    }
    await app.handle(JSON.stringify(msg));
  } catch (err) {
    post({
      id,
      type: "error",
      error: { name: err?.name === "PythonError" ? "InternalError" : "WorkerError", message: String(err?.message ?? err), param: null },
    });
  }
};
