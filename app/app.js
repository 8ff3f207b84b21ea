// The chat playground, wired: the engine is created by the first model load, and each panel (in
// app/panels/) owns its elements and state; this file only connects them. Generation settings,
// the model and the device can be set in the URL: ?temperature=0&max_tokens=512&ignore_eos=1&model=…&device=…&hub=<mirror URL>

import { trustedScriptURL, WebWorkerEngine, workerUrl } from "csi-web";
import { Library } from "./conversations/library.js";
import { DEFAULT_SETTINGS } from "./conversations/knobs.js";
import { mountChat } from "./panels/chat.js";
import { find } from "./panels/dom.js";
import { mountDocuments } from "./panels/documents.js";
import { mountEndpoint } from "./panels/endpoint.js";
import { mountInsides } from "./panels/insides.js";
import { mountModelLoader } from "./panels/model_loader.js";
import { mountReplyFormat } from "./panels/reply_format.js";
import { mountSettings } from "./panels/settings.js";
import { mountShell } from "./panels/shell.js";
import { mountSidebar } from "./panels/sidebar.js";
import { mountSkillStudio } from "./panels/skill_studio.js";
import { PAGE_TOOLS } from "./demo_tools.js";
import { mountText } from "./panels/text.js";
import { mountToolServers } from "./panels/tool_servers.js";
import { serveV1 } from "csi-web/v1";

/** The chat model a person meets first. */
const DEFAULT_MODEL = "smollm2-135m-instruct";

const params = new URLSearchParams(location.search);
/** The URL's settings, over every conversation's own. @type {import("./conversations/knobs.js").Settings} */
const overrides = {
  ...Object.fromEntries(["temperature", "top_p", "max_tokens"].filter((k) => params.has(k)).map((k) => [k, Number(params.get(k))])),
  ...(params.get("ignore_eos") === "1" ? { ignore_eos: true } : {}),
};

/**
 * The engine, on a new worker, with `modelId` loaded (and the load's result: where each model
 * runs); this tab's engine also answers the site's /v1/ endpoint (the openai client, other tabs).
 * @param {string} modelId @param {import("csi-web").EngineConfig} config
 */
async function createEngine(modelId, config) {
  const worker = new Worker(trustedScriptURL(workerUrl()), { type: "module" });
  const engine = new WebWorkerEngine(worker, config);
  /** @type {import("csi-web").LoadResult} */
  const load = await engine.reload(modelId);
  serveV1(engine).catch((err) => console.warn(`v1/ is not served from this tab: ${err.message}`));
  return { engine, load };
}

const shell = mountShell(document);
const library = await Library.open();
const replyFormat = mountReplyFormat(find(document, "#structure", HTMLElement), { onChange: (f) => chat.setFormat(f) });
const settingsPanel = mountSettings(find(document, "#chat-settings", HTMLElement), {
  userPresets: () => library.presets,
  savePreset: (name, values) => library.setPreset(name, values),
  onChange: (s, system) => chat.setSettings(s, system),
});
const insides = mountInsides(find(document, "#insides", HTMLElement));
const studio = mountSkillStudio(find(document, "#panel-skills", HTMLElement), {
  onBusy: (busy) => shell.setEngineState(busy ? "generating" : "ready"),
});
const toolServers = mountToolServers(find(document, "#mcp-tools", HTMLElement), { onChange: (servers) => chat.setServers(servers) });
const documents = mountDocuments(find(document, "#docs", HTMLElement), { maxTokens: overrides.max_tokens ?? 256 });
const chat = mountChat(document.body, {
  library, overrides, defaults: DEFAULT_SETTINGS, settings: settingsPanel, replyFormat,
  onBusy: (busy) => {
    loader.setChatBusy(busy);
    shell.setEngineState(busy ? "generating" : "ready");
  },
  onChange: () => sidebar.refresh(),
});
const sidebar = mountSidebar(find(document, "#sidebar", HTMLElement), {
  library, shell, openId: () => chat.openId(),
  open: (id) => chat.open(id),
  newChat: () => chat.newChat(),
  renamed: (c) => chat.changed(c, false),
  deleted: (c) => chat.changed(c, true),
});
chat.open(library.openId);
const loader = mountModelLoader(document.body, {
  createEngine,
  onProgress(text) {
    shell.setEngineState("loading", text);
  },
  onLoading(loading, engine) {
    if (loading) shell.setEngineState("loading");
    chat.setEngine(engine);
    chat.setLoading(loading);
    documents.setEngine(engine);
    studio.setEngine(engine);
    toolServers.setEngine(loading ? null : engine);
    documents.setLoading(loading);
    text.setEngine(loading ? null : engine);
  },
  onLoaded(engine, model) {
    documents.setModel(model);
    endpoint.setModel(model);
    insides.setEngine(model ? engine : null);
    skillsEngine = model && engine ? { engine, model } : null;
    if (location.hash === "#skills") prepareSkills();
    shell.setEngineState(model ? "ready" : "error", model ? `ready: ${model}` : "no model");
    if (model) document.body.dataset.ready = "true";
  },
});
/** Pharia Kernel's model names, served in the skill studio by the loaded chat model. */
const KERNEL_MODELS = ["llama-3.1-8b-instruct", "llama-3.3-70b-instruct"];
/** @type {{engine: import("csi-web").WebWorkerEngine, model: string, ready?: Promise<void>}|null} */
let skillsEngine = null;
/** The skill studio's set-up, once per engine and when first shown (it fetches the tools' schema
 * checker): the demo tools as page tools, and Kernel model names as aliases of the chat model. */
function prepareSkills() {
  const s = skillsEngine;
  if (!s || s.ready) return;
  s.ready = (async () => {
    await s.engine.setModelAliases(Object.fromEntries(KERNEL_MODELS.map((name) => [name, s.model])));
    for (const { spec, fn } of PAGE_TOOLS) await s.engine.tools.register(spec, fn);
  })().catch((err) => console.warn(`the skill studio's tools and aliases: ${err.message}`));
}
shell.onPanel("skills", (shown) => {
  if (!shown) return;
  studio.show();
  prepareSkills();
});
if (location.hash === "#skills") studio.show();

const text = mountText(find(document, "#panel-text", HTMLElement));
const endpoint = mountEndpoint(find(document, "#panel-endpoint", HTMLElement));
shell.onPanel("endpoint", (shown) => shown && endpoint.refresh());

shell.addShortcuts([
  { keys: "Escape", label: "Stop the reply being written", run: () => find(document, "#stop", HTMLButtonElement).click(),
    when: () => !find(document, "#stop", HTMLButtonElement).disabled },
  { keys: "/", label: "Write a message", run: () => { shell.show("chat"); find(document, "#prompt", HTMLTextAreaElement).focus(); } },
]);

loader.start(params.get("model") ?? DEFAULT_MODEL, params.get("device") ?? "wasm");

// Offline use: the service worker keeps the app shell and the runtime, and says when a new version took over.
import("csi-web/offline")
  .then(({ startOffline }) => startOffline(document.body))
  .catch((err) => console.warn(`csi-web cannot work offline here: ${err.message}`));
