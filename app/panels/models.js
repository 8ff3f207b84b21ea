// The Models panel: what the engine is doing (loading with stage and bytes, ready, generating)
// with its own Cancel; a picker of the site's models (built-in and imported from a GGUF) and of any
// Hugging Face id; before a download, its size and whether it fits the storage quota (a warning,
// never a block); the device, with the WebGPU adapter; the servers of remote models, whose models
// the picker lists too ("server" and its URL); and the models stored in this browser.

import { ggufFileModelId, hasModelInCache } from "csi-web";
import { el, find } from "./dom.js";
import { describeAdapter } from "./models_device.js";
import { formatBytes, hubMirror, hubSize, storageFit } from "./models_sizes.js";
import { mountServers, POLICY_TEXT } from "./models_servers.js";
import { mountStoredModels } from "./models_stored.js";

/**
 * @typedef {import("./model_loader.js").ModelLoader} ModelLoader
 * @typedef {import("./model_loader.js").LoaderState} LoaderState
 * @typedef {import("./model_loader.js").Device} Device
 * @typedef {import("./models_sizes.js").SiteModel} SiteModel
 * @typedef {import("./servers_store.js").SavedServer} SavedServer
 * @typedef {{baseURL: string, policy: "remote"|"prefer-local"}} RemoteChoice
 */

const HUB_ID = /^[\w.-]+\/[\w.-]+$/;
const GGUF = /\.gguf$/i;

/**
 * Mount the Models panel, driving `loader`'s loads.
 * @param {HTMLElement} root the #panel-models section @param {ModelLoader} loader
 */
export function mountModels(root, loader) {
  const ui = {
    state: find(root, "#models-state", HTMLElement),
    progress: find(root, "#models-progress", HTMLProgressElement),
    form: find(root, "#models-form", HTMLFormElement),
    site: find(root, "#models-site", HTMLUListElement),
    remote: find(root, "#models-remote", HTMLUListElement),
    hubChoice: find(root, "#models-hub-choice", HTMLInputElement),
    hubId: find(root, "#models-hub-id", HTMLInputElement),
    ggufChoice: find(root, "#models-gguf-choice", HTMLInputElement),
    ggufUrl: find(root, "#models-gguf-url", HTMLInputElement),
    ggufFile: find(root, "#models-gguf-file", HTMLInputElement),
    adapter: find(root, "#models-adapter", HTMLElement),
    plan: find(root, "#models-plan", HTMLElement),
    load: find(root, "#models-load", HTMLButtonElement),
    cancel: find(root, "#models-cancel", HTMLButtonElement),
  };
  const devices = [...root.querySelectorAll("input[name=models-device]")].map((d) => /** @type {HTMLInputElement} */ (d));
  /** @type {LoaderState|null} */
  let last = null;
  /** @type {Map<string, SiteModel>} */
  const site = new Map();
  /** @type {Map<string, RemoteChoice>} the servers' models, by id */
  const remote = new Map();
  let webgpu = false;
  let planSeq = 0;
  const stored = mountStoredModels(root, () => last?.loaded ?? "");

  /** @type {{id: string, file: File}|null} the GGUF file picked last, with its model id */
  let picked = null;

  /** The model chosen: a site model's id, the Hub id typed in, or a GGUF's (URL or file picked). */
  function chosen() {
    const radio = root.querySelector("input[name=models-choice]:checked");
    if (!(radio instanceof HTMLInputElement)) return "";
    if (radio === ui.ggufChoice) return ui.ggufUrl.value.trim() || picked?.id || "";
    return radio === ui.hubChoice ? ui.hubId.value.trim() : radio.value;
  }

  /** @param {SiteModel} m */
  function choice(m) {
    const radio = el("input");
    radio.type = "radio";
    radio.name = "models-choice";
    radio.value = m.id;
    const size = el("span", "size", formatBytes(m.bytes));
    size.dataset.bytes = String(m.bytes);
    const label = el("label");
    label.append(radio, " ", el("span", "id", m.id), " ", el("span", "source", m.source), " ", size);
    const li = el("li");
    li.dataset.model = m.id;
    li.append(label);
    return li;
  }

  /** A server's model in the picker. @param {string} id @param {RemoteChoice} r */
  function remoteChoice(id, r) {
    const radio = el("input");
    radio.type = "radio";
    radio.name = "models-choice";
    radio.value = id;
    const label = el("label");
    const where = r.policy === "remote" ? "" : ` (${POLICY_TEXT[r.policy]})`;
    label.append(radio, " ", el("span", "id", id), " ", el("span", "source", "server"), " ",
      el("span", "url", r.baseURL), el("span", "source", where));
    const li = el("li");
    li.dataset.model = id;
    li.dataset.policy = r.policy;
    li.append(label);
    return li;
  }

  /** List the servers' models, keeping the choice. @param {SavedServer[]} servers */
  function listRemote(servers) {
    const was = chosen();
    remote.clear();
    for (const s of servers) for (const m of s.models) remote.set(m.id, { baseURL: s.baseURL, policy: m.policy });
    ui.remote.replaceChildren(...[...remote].map(([id, r]) => remoteChoice(id, r)));
    ui.remote.hidden = remote.size === 0;
    const again = [...ui.remote.querySelectorAll("input")].find((r) => r.value === was);
    if (again && !root.querySelector("input[name=models-choice]:checked")) again.checked = true;
    showPlan();
  }

  /** Say what the chosen model weighs and whether it fits the storage left. */
  async function showPlan() {
    const mine = ++planSeq;
    const id = chosen();
    const device = last?.device === "auto" ? (webgpu ? "webgpu" : "wasm") : last?.device ?? "wasm";
    /** @param {string} text @param {string} kind @param {number|null} [bytes] the download's size, when known */
    const say = (text, kind = "", bytes = null) => {
      if (mine !== planSeq) return;
      ui.plan.textContent = text;
      ui.plan.className = kind;
      if (bytes === null) delete ui.plan.dataset.bytes;
      else ui.plan.dataset.bytes = String(bytes);
    };
    if (!id) return say("Choose a model.");
    if (picked && id === picked.id) {
      return say(`${picked.file.name}: ${formatBytes(picked.file.size)} on your disk, opened in this page (nothing is uploaded).`,
        "", 0);
    }
    if (GGUF.test(id.split(/[?#]/)[0])) return say(`${id}: a GGUF file, downloaded once and kept in this browser.`);
    const server = remote.get(id);
    if (server?.policy === "remote") return say(`${id} runs on ${server.baseURL}: nothing to download.`, "", 0);
    const orServer = server ? ` If it cannot load here, ${server.baseURL} serves it.` : "";
    if (!site.has(id) && !HUB_ID.test(id)) return say(`${id} is neither a site model nor a Hugging Face id (org/name).`, "error");
    say(`${id}: working out its size…`);
    try {
      if (await hasModelInCache(id)) return say(`${id} is stored in this browser: it loads without a download.${orServer}`);
      const known = site.get(id);
      const size = known ? { bytes: known.bytes, note: `${known.source}, from this site` }
        : await hubSize(id, hubMirror(), device);
      const what = (size.bytes === null ? `size unknown (${size.note})` : `${formatBytes(size.bytes)} to download`) + orServer;
      const fit = await storageFit(size.bytes);
      if (!fit) return say(`${id}: ${what}. This browser gives no storage estimate.`, "", size.bytes);
      const free = `${formatBytes(Math.max(0, fit.quota - fit.usage))} free of ${formatBytes(fit.quota)}`;
      if (fit.fits === false) {
        return say(`${id}: ${what}, but only ${free}: the browser may refuse to keep it. You can still load it.`, "warning",
          size.bytes);
      }
      say(`${id}: ${what}; storage: ${free}${fit.fits ? ", it fits" : ""}.`, "", size.bytes);
    } catch (/** @type {any} */ err) {
      say(`${id}: size unknown (${err.message}).${orServer}`);
    }
  }

  /** @param {LoaderState} s */
  function render(s) {
    const ended = last && (last.phase === "loading" || last.phase === "cancelling") && s.phase !== last.phase
      && s.phase !== "loading";
    const deviceChanged = last?.device !== s.device;
    last = s;
    const text = s.phase === "ready" && s.generating ? `${s.loaded}: generating a reply…` : s.text;
    ui.state.textContent = text;
    ui.state.dataset.state = s.generating && s.phase === "ready" ? "generating" : s.phase;
    if (s.phase === "ready" && s.remote) ui.state.dataset.remote = s.remote;
    else delete ui.state.dataset.remote;
    ui.progress.hidden = s.phase !== "loading" && s.phase !== "cancelling";
    ui.progress.value = s.report?.progress ?? 0;
    if (s.report?.bytesTotal) ui.progress.dataset.bytesLoaded = String(s.report.bytesLoaded);
    else delete ui.progress.dataset.bytesLoaded;
    ui.cancel.disabled = s.phase !== "loading";
    ui.load.disabled = !loader.canLoad();
    for (const d of devices) d.checked = d.value === s.device;
    if (ended) stored.refresh();
    if (ended || deviceChanged) showPlan();
  }

  ui.form.addEventListener("submit", (e) => {
    e.preventDefault();
    const id = chosen();
    if (id && loader.canLoad()) loader.load(id);
  });
  ui.cancel.addEventListener("click", () => loader.cancel());
  ui.site.addEventListener("change", showPlan);
  ui.remote.addEventListener("change", showPlan);
  ui.hubChoice.addEventListener("change", showPlan);
  ui.ggufChoice.addEventListener("change", showPlan);
  ui.ggufUrl.addEventListener("input", () => {
    ui.ggufChoice.checked = true;
    showPlan();
  });
  ui.ggufFile.addEventListener("change", () => {
    const file = ui.ggufFile.files?.[0];
    if (!file) return;
    picked = { id: ggufFileModelId(file), file };
    ui.ggufUrl.value = "";
    ui.ggufChoice.checked = true;
    showPlan();
  });
  /** @type {ReturnType<typeof setTimeout>|undefined} */
  let typing;
  ui.hubId.addEventListener("input", () => {
    ui.hubChoice.checked = true;
    clearTimeout(typing);
    typing = setTimeout(showPlan, 400);
  });
  for (const d of devices) d.addEventListener("change", () => loader.setDevice(/** @type {Device} */ (d.value)));
  // the cached list may change while the panel is away (another tab, the chat's loads): list it when shown
  new MutationObserver(() => { if (!root.hidden) stored.refresh(); }).observe(root, { attributes: true, attributeFilter: ["hidden"] });

  describeAdapter().then((a) => {
    webgpu = a.available;
    ui.adapter.textContent = a.text;
    ui.adapter.dataset.webgpu = String(a.available);
  });
  loader.siteModels().then((models) => {
    for (const m of models) site.set(m.id, m);
    ui.site.replaceChildren(...models.map(choice));
    const first = ui.site.querySelector("input");
    if (first instanceof HTMLInputElement) first.checked = true;
    showPlan();
  });
  loader.subscribe(render);
  mountServers(root, { apply: (remotes) => loader.setRemotes(remotes), onChange: listRemote });
}
