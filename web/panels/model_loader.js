// The model loader: the header's model picker and Load button, the progress bar while a model
// loads, and the footer's status line. It owns the engine's life: the first load creates the
// engine (with the `createEngine` it is given), later loads reload the same engine.

import { find } from "./dom.js";

/**
 * @typedef {import("../engine.js").WebWorkerEngine} WebWorkerEngine
 * @typedef {import("../engine.js").EngineConfig} EngineConfig
 * @typedef {import("../engine.js").InitProgressReport} InitProgressReport
 * @typedef {object} LoaderEvents
 * @property {(modelId: string, config: EngineConfig) => Promise<WebWorkerEngine>} createEngine
 *   makes the engine on the first load
 * @property {(loading: boolean, engine: WebWorkerEngine|null) => void} onLoading
 *   a load starts or ends; `engine` once there is one (a failed reload keeps it)
 * @property {(engine: WebWorkerEngine|null, model: string) => void} onLoaded
 *   a load ended: the model now ready, or "" when it failed (no model is loaded then)
 */

/**
 * Mount the loader on a root that holds the load form, the progress bar and the status line.
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
  let loading = false;
  let chatBusy = false;

  const updateControls = () => {
    ui.load.disabled = loading || chatBusy;
  };

  /** Fill the model picker with the chat models the site serves (built in and imported), with their sizes. */
  async function listSiteModels() {
    try {
      const r = await fetch("models/models.json");
      if (!r.ok) return;
      /** @type {{id: string, kind: string, bytes: number, source: string}[]} */
      const models = (await r.json()).models;
      const hub = [...ui.modelList.options].filter((o) => o.value.includes("/"));
      ui.modelList.replaceChildren(...models.filter((m) => m.kind === "chat").map((m) => {
        const option = document.createElement("option");
        option.value = m.id;
        option.label = `${m.source}, ${(m.bytes / 1e6).toFixed(0)} MB`;
        return option;
      }), ...hub);
    } catch {
      // the static list in index.html stays
    }
  }

  /** @param {string} modelId @param {string} device */
  async function load(modelId, device) {
    ui.loading.hidden = false;
    ui.progress.value = 0;
    ui.status.textContent = `Loading ${modelId}…`;
    loading = true;
    updateControls();
    events.onLoading(true, engine);
    /** @param {InitProgressReport} r */
    const onProgress = (r) => {
      ui.progress.value = r.progress;
      ui.progressText.textContent = r.text;
    };
    const deviceName = /** @type {EngineConfig["device"]} */ (device);
    try {
      if (!engine) {
        engine = await events.createEngine(modelId, { initProgressCallback: onProgress, device: deviceName });
      } else {
        engine.config.initProgressCallback = onProgress;
        engine.config.device = deviceName;
        await engine.reload(modelId);
      }
      ui.status.textContent = `${modelId} is ready (${device}).`;
      events.onLoaded(engine, modelId);
    } catch (/** @type {any} */ err) {
      ui.status.textContent = `Could not load ${modelId}: ${err.message}`;
      events.onLoaded(engine, "");
    } finally {
      ui.loading.hidden = true;
      loading = false;
      updateControls();
      events.onLoading(false, engine);
    }
  }

  ui.form.addEventListener("submit", (e) => {
    e.preventDefault();
    load(ui.modelId.value.trim(), ui.device.value);
  });

  return {
    /** Show `model` and `device` in the form, list the site's models, and load the model. @param {string} model @param {string} device */
    start(model, device) {
      ui.modelId.value = model;
      listSiteModels();
      ui.device.value = device;
      load(ui.modelId.value, ui.device.value);
    },
    /** The chat is generating (no load meanwhile) or done. @param {boolean} busy */
    setChatBusy(busy) {
      chatBusy = busy;
      updateControls();
    },
  };
}
