// The model loader: the top bar's quick model picker and Load button, the progress bar while a
// model loads, and the footer's status line. It owns the engine's life: the first load creates the
// engine (with the `createEngine` it is given), later loads reload the same engine; a cancel unloads
// it. It also mounts the Models panel, which drives the same loads, and keeps the servers of remote
// models (the Models panel's Servers part) in the engine's config.

import { find } from "./dom.js";
import { mountModels } from "./models.js";
import { formatBytes, hubMirror, siteModels } from "./models_sizes.js";

/** How a model id reads: a picked GGUF file's (a blob: URL) by its file name. @param {string} id */
const shown = (id) => (id.startsWith("blob:") && id.includes("#") ? decodeURIComponent(id.split("#")[1]) : id);

/**
 * @typedef {import("csi-web").WebWorkerEngine} WebWorkerEngine
 * @typedef {import("csi-web").EngineConfig} EngineConfig
 * @typedef {import("csi-web").InitProgressReport} InitProgressReport
 * @typedef {import("csi-web").RemoteServer} RemoteServer
 * @typedef {import("csi-web").LoadResult} LoadResult
 * @typedef {"wasm"|"webgpu"|"auto"} Device
 * @typedef {object} LoaderEvents
 * @property {(modelId: string, config: EngineConfig) => Promise<{engine: WebWorkerEngine, load: LoadResult}>} createEngine
 *   makes the engine on the first load, loading `modelId`: the engine and its load's result
 * @property {(loading: boolean, engine: WebWorkerEngine|null) => void} onLoading
 *   a load starts or ends; `engine` once there is one (a failed reload keeps it)
 * @property {(engine: WebWorkerEngine|null, model: string) => void} onLoaded
 *   a load ended: the model now ready, or "" when it failed or was cancelled (no model is loaded then)
 * @property {(text: string, report: InitProgressReport) => void} [onProgress]
 *   a load moved on: `text` says how far ("loading 45% of 120.3 MB"), for the top bar's state
 * @typedef {{phase: "idle"|"loading"|"cancelling"|"ready"|"failed"|"cancelled", model: string,
 *            loaded: string, device: Device, report: InitProgressReport|null, generating: boolean,
 *            text: string, remote: string|null, fallback: string|null}} LoaderState
 *   `model` the model of the last load asked for, `loaded` the model ready now ("" for none);
 *   `remote` the base URL of the server serving it (null: this browser), `fallback` why a
 *   prefer-local model is on the server (the local load's error)
 */

/** "loading 45% of 120.3 MB", or the stage while sizes are unknown. @param {InitProgressReport} r */
export function progressText(r) {
  if (r.bytesTotal) return `loading ${Math.floor(r.progress * 100)}% of ${formatBytes(r.bytesTotal)}`;
  return `loading: ${r.stage}${r.file ? ` ${r.file}` : ""}`;
}

/**
 * Where the model now runs: "in this browser", or "on <server>" (and why, for a fallback).
 * @param {string} modelId @param {Device} device @param {LoadResult|undefined} load
 */
export function readyText(modelId, device, load) {
  const info = load?.models?.find((m) => m.model_id === modelId);
  const remote = typeof info?.remote === "string" ? info.remote : null;
  const fallback = typeof info?.fallback === "string" ? info.fallback : null;
  if (!remote) return { remote, fallback, text: `${shown(modelId)} is ready in this browser (${device}).` };
  if (fallback) return { remote, fallback, text: `${shown(modelId)} is ready on ${remote}: it could not load in this browser (${fallback}).` };
  return { remote, fallback, text: `${shown(modelId)} is ready on ${remote} (nothing downloaded).` };
}

/**
 * Mount the loader on a root that holds the load form, the progress bar, the status line and the
 * Models panel.
 * @param {ParentNode} root @param {LoaderEvents} events
 */
export function mountModelLoader(root, events) {
  const ui = {
    form: find(root, "#load-form", HTMLFormElement),
    modelId: find(root, "#model-id", HTMLInputElement),
    modelList: find(root, "#model-list", HTMLDataListElement),
    device: find(root, "#device", HTMLSelectElement),
    load: find(root, "#load", HTMLButtonElement),
    loading: find(root, "#loading", HTMLElement),
    progress: find(root, "#progress", HTMLProgressElement),
    progressText: find(root, "#progress-text", HTMLElement),
    status: find(root, "#status", HTMLElement),
  };
  /** @type {WebWorkerEngine|null} */
  let engine = null;
  /** @type {Promise<WebWorkerEngine>|null} the first load, making the engine */
  let creating = null;
  /** the device the engine's worker was made for: a WASM worker's ONNX runtime has no WebGPU */
  let engineDevice = "wasm";
  /** the latest load: only it may change what the page shows */
  let seq = 0;
  let cancelled = false;
  let chatBusy = false;
  /** @type {RemoteServer[]} the servers of remote models, for the engine's config */
  let remotes = [];
  /** @type {LoaderState} */
  const state = { phase: "idle", model: "", loaded: "", device: "wasm", report: null, generating: false,
    text: "No model loaded yet.", remote: null, fallback: null };
  /** @type {Array<(s: LoaderState) => void>} */
  const listeners = [];
  const loading = () => state.phase === "loading" || state.phase === "cancelling";

  /** @param {Partial<LoaderState>} change */
  function update(change) {
    Object.assign(state, change);
    ui.load.disabled = state.phase === "loading" || chatBusy;
    ui.device.value = state.device;
    for (const f of listeners) f({ ...state });
  }

  /** Fill the quick picker with the chat models the site serves (built in and imported), with their sizes. */
  const listed = siteModels().then((models) => {
    const hub = [...ui.modelList.options].filter((o) => o.value.includes("/"));
    ui.modelList.replaceChildren(...models.map((m) => {
      const option = document.createElement("option");
      option.value = m.id;
      option.label = `${m.source}, ${formatBytes(m.bytes)}`;
      return option;
    }), ...hub);
    return models;
  }).catch((/** @type {any} */ err) => {
    console.warn(`models/models.json: ${err.message}`); // the static list in index.html stays
    return [];
  });

  /** The quick picker's remote models follow the servers. */
  function listRemotes() {
    for (const o of ui.modelList.querySelectorAll("option.remote")) o.remove();
    for (const server of remotes) {
      for (const m of server.models) {
        const option = document.createElement("option");
        option.className = "remote";
        option.value = typeof m === "string" ? m : m.id;
        option.label = `server, ${server.baseURL}`;
        ui.modelList.append(option);
      }
    }
  }

  /** @param {string} modelId @param {Device} device */
  async function load(modelId, device) {
    const mine = ++seq;
    cancelled = false;
    ui.loading.hidden = false;
    ui.progress.value = 0;
    ui.status.textContent = `Loading ${modelId}…`;
    update({ phase: "loading", model: modelId, device, report: null, text: `Loading ${modelId}…`, remote: null, fallback: null });
    events.onLoading(true, engine);
    /** @param {InitProgressReport} r */
    const onProgress = (r) => {
      if (mine !== seq || cancelled) return;
      ui.progress.value = r.progress;
      ui.progressText.textContent = r.text;
      const text = progressText(r);
      update({ report: r, text: `${modelId}: ${text}` });
      events.onProgress?.(text, r);
    };
    try {
      if (!engine && creating) await creating.catch(() => {}); // one worker, even when a load follows a cancel at once
      if (engine && device !== "wasm" && engineDevice === "wasm") {
        // the worker runs ORT's WASM-only build (faster on the CPU): WebGPU takes a worker of its own
        engine.terminate();
        engine = null;
      }
      /** @type {LoadResult|undefined} */
      let result;
      if (!engine) {
        engineDevice = device;
        creating = events.createEngine(modelId, { initProgressCallback: onProgress, device, hubMirror: hubMirror(), remotes })
          .then((made) => { result = made.load; return made.engine; });
        const made = await creating.finally(() => { creating = null; });
        engine = made;
        if (cancelled) { // the first load cannot be stopped before the engine exists: undo it now
          await made.unload();
          throw new Error("cancelled");
        }
      } else {
        engine.config.initProgressCallback = onProgress;
        engine.config.device = device;
        engine.config.hubMirror = hubMirror();
        engine.config.remotes = remotes;
        result = await engine.reload(modelId);
      }
      if (mine !== seq) return;
      const ready = readyText(modelId, device, result);
      ui.status.textContent = ready.text;
      update({ phase: "ready", loaded: modelId, ...ready });
      events.onLoaded(engine, modelId);
    } catch (/** @type {any} */ err) {
      if (mine !== seq) return;
      const text = cancelled ? `Cancelled loading ${shown(modelId)}: no model is loaded.` : `Could not load ${shown(modelId)}: ${err.message}`;
      ui.status.textContent = text;
      update({ phase: cancelled ? "cancelled" : "failed", loaded: "", text });
      events.onLoaded(engine, "");
    } finally {
      if (mine === seq) {
        ui.loading.hidden = true;
        update({});
        events.onLoading(false, engine);
      }
    }
  }

  /** Stop the load under way: unloading stops its downloads, and what it brought goes away. */
  async function cancel() {
    if (!loading() || cancelled) return;
    cancelled = true;
    const text = `Cancelling the load of ${state.model}…`;
    ui.status.textContent = text;
    update({ phase: "cancelling", text });
    await engine?.unload().catch(() => {}); // the pending load rejects on its own
  }

  ui.form.addEventListener("submit", (e) => {
    e.preventDefault();
    load(ui.modelId.value.trim(), /** @type {Device} */ (ui.device.value));
  });
  ui.device.addEventListener("change", () => update({ device: /** @type {Device} */ (ui.device.value) }));

  const loader = {
    /** Show `model` and `device` in the form, list the site's models, and load the model. @param {string} model @param {string} device */
    start(model, device) {
      ui.modelId.value = model;
      load(model, /** @type {Device} */ (["wasm", "webgpu", "auto"].includes(device) ? device : "wasm"));
    },
    /** The chat is generating (no load meanwhile) or done. @param {boolean} busy */
    setChatBusy(busy) {
      chatBusy = busy;
      update({ generating: busy });
    },
    /** Load `modelId` on `device` (the current device when left out). @param {string} modelId @param {Device} [device] */
    load(modelId, device = state.device) {
      ui.modelId.value = modelId;
      return load(modelId, device);
    },
    cancel,
    /** The device the next load uses. @param {Device} device */
    setDevice(device) {
      update({ device });
    },
    /** Call `f` with the loader's state now and after every change. @param {(s: LoaderState) => void} f */
    subscribe(f) {
      listeners.push(f);
      f({ ...state });
    },
    /** The chat models the site serves (an empty list when models.json is missing). */
    siteModels: () => listed,
    /** Whether the Load buttons may start a load now. */
    canLoad: () => state.phase !== "loading" && !chatBusy,
    /**
     * Serve models from these servers: the engine, if there is one, checks and takes them at once
     * (rejecting with its typed error, the servers before staying); the next engine gets them.
     * @param {RemoteServer[]} servers
     */
    async setRemotes(servers) {
      if (engine) await engine.setRemotes(servers);
      remotes = servers;
      listRemotes();
    },
  };
  const panel = root.querySelector("#panel-models");
  if (panel instanceof HTMLElement) mountModels(panel, loader);
  return loader;
}

/** @typedef {ReturnType<typeof mountModelLoader>} ModelLoader */
