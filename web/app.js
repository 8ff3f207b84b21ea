// The chat playground: load a model with a progress bar, stream replies, stop them, show speed;
// and a documents panel: add texts to a collection of the document index, search it, ask it
// (the `search-answer` skill). Model output and document text are only ever inserted as text
// (textContent), never parsed as HTML.

import { TOOLS, runTool } from "./demo_tools.js";
import { CreateWebWorkerEngine } from "./engine.js";
import { setupInsides } from "./insides.js";
import { serveV1 } from "./v1_host.js";

const $ = (id) => /** @type {any} */ (document.getElementById(id));
const ui = {
  loadForm: $("load-form"), modelId: $("model-id"), device: $("device"), load: $("load"),
  loading: $("loading"), progress: $("progress"), progressText: $("progress-text"),
  messages: $("messages"), chatForm: $("chat-form"), prompt: $("prompt"), send: $("send"),
  stop: $("stop"), clear: $("clear"), status: $("status"), stats: $("stats"),
  docs: $("docs"), docCount: $("doc-count"), docFiles: $("doc-files"), docPasteForm: $("doc-paste-form"),
  docName: $("doc-name"), docText: $("doc-text"), docAdd: $("doc-add"), docIngest: $("doc-ingest"),
  docProgress: $("doc-progress"), docIngestText: $("doc-ingest-text"), docList: $("doc-list"),
  docSearchForm: $("doc-search-form"), docQuery: $("doc-query"), docSearch: $("doc-search"), docAsk: $("doc-ask"),
  docStatus: $("doc-status"), docResults: $("doc-results"), docAnswer: $("doc-answer"),
  format: $("format"), schema: $("schema"), toolsOn: $("tools-on"), toolChoice: $("tool-choice"),
  toolsHint: $("tools-hint"),
};

const insides = setupInsides({
  form: $("insides-form"), prompt: $("insides-prompt"), fft: $("insides-fft"), keep: $("insides-keep"),
  topK: $("insides-top-k"), show: $("insides-show"), status: $("insides-status"), charts: $("insides-charts"),
});

/** @type {import("./engine.js").WebWorkerEngine|null} */
let engine = null;
/** @type {import("./engine.js").ChatCompletionMessageParam[]} */
let history = [];
let generating = false;
/** The chat model loaded last (the documents panel asks it), and whether a load is under way. */
let loadedModel = "";
let loadingModel = false;

/** Fill the model picker with the chat models the site serves (built in and imported), with their sizes. */
async function listSiteModels() {
  try {
    const r = await fetch("models/models.json");
    if (!r.ok) return;
    /** @type {{id: string, kind: string, bytes: number, source: string}[]} */
    const models = (await r.json()).models;
    const list = $("model-list");
    const hub = [...list.options].filter((o) => o.value.includes("/"));
    list.replaceChildren(...models.filter((m) => m.kind === "chat").map((m) => {
      const option = document.createElement("option");
      option.value = m.id;
      option.label = `${m.source}, ${(m.bytes / 1e6).toFixed(0)} MB`;
      return option;
    }), ...hub);
  } catch {
    // the static list in index.html stays
  }
}

function setBusy(busy) {
  generating = busy;
  ui.send.disabled = busy || !engine;
  ui.prompt.disabled = !engine;
  ui.stop.disabled = !busy;
  ui.load.disabled = busy;
  updateDocControls();
}

/** @param {string} role @param {string} text */
function addMessage(role, text) {
  const div = document.createElement("div");
  div.className = `message ${role}`;
  const body = document.createElement("span");
  body.className = "body";
  body.textContent = text;
  div.append(body);
  ui.messages.append(div);
  ui.messages.scrollTop = ui.messages.scrollHeight;
  return div;
}

async function load(modelId, device) {
  ui.loading.hidden = false;
  ui.progress.value = 0;
  ui.status.textContent = `Loading ${modelId}…`;
  loadingModel = true;
  setBusy(true);
  const onProgress = (r) => {
    ui.progress.value = r.progress;
    ui.progressText.textContent = r.text;
  };
  try {
    if (!engine) {
      const worker = new Worker(new URL("../worker/worker.js", import.meta.url), { type: "module" });
      engine = await CreateWebWorkerEngine(worker, modelId, { initProgressCallback: onProgress, device });
      // this tab's engine also answers the site's /v1/ endpoint (the openai client, other tabs)
      serveV1(engine).catch((err) => console.warn(`/v1/ is not served from this tab: ${err.message}`));
    } else {
      engine.config.initProgressCallback = onProgress;
      engine.config.device = device;
      await engine.reload(modelId);
    }
    ui.status.textContent = `${modelId} is ready (${device}).`;
    loadedModel = modelId;
    insides.setEngine(engine);
    document.body.dataset.ready = "true";
  } catch (err) {
    ui.status.textContent = `Could not load ${modelId}: ${err.message}`;
    loadedModel = ""; // a failed reload leaves no model loaded
    insides.setEngine(null);
  } finally {
    ui.loading.hidden = true;
    loadingModel = false;
    setBusy(false);
  }
  if (engine && !docsListed) runDocs("", refreshDocs);
}

/**
 * What the "Output format and tools" panel asks of a request (the schema box must hold JSON).
 * @returns {Partial<import("./engine.js").ChatCompletionRequest>}
 */
function structure() {
  /** @type {Partial<import("./engine.js").ChatCompletionRequest>} */
  const out = {};
  if (ui.format.value === "json") out.response_format = { type: "json_object" };
  if (ui.format.value === "schema") {
    out.response_format = { type: "json_schema", json_schema: { name: "reply", schema: JSON.parse(ui.schema.value) } };
  }
  if (ui.toolsOn.checked) {
    out.tools = TOOLS;
    out.tool_choice = ui.toolChoice.value;
  }
  return out;
}

const MAX_TOOL_ROUNDS = 3;

async function send(text) {
  history.push({ role: "user", content: text });
  addMessage("user", text);
  setBusy(true);
  ui.stats.textContent = "";
  const before = history.length;
  try {
    let request = structure();
    for (let round = 0; round < MAX_TOOL_ROUNDS; round++) {
      const reply = await streamReply(request);
      if (!reply) break;
      history.push(reply.message);
      if (reply.finish !== "tool_calls") break;
      for (const call of reply.message.tool_calls ?? []) {
        const result = runTool(call.function.name, call.function.arguments);
        history.push({ role: "tool", tool_call_id: call.id, content: result });
        addMessage("tool", `${call.function.name} → ${result}`);
      }
      // the results go back to the model, which now answers in words
      request = { ...request, tool_choice: "none" };
    }
  } catch (err) {
    if (!err.shown) {
      const div = addMessage("assistant", "");
      div.classList.add("error");
      div.querySelector(".body").textContent = `${err.name}: ${err.message}`;
      div.dataset.done = "true";
    }
    history.length = before - 1; // the turn failed: forget it, the question included
  } finally {
    setBusy(false);
    ui.prompt.focus();
  }
}

/**
 * Stream one assistant turn into a new message; its content and tool calls as they arrive.
 * Returns the message for the history and why it ended (`null` if the engine refused the request).
 * @param {Partial<import("./engine.js").ChatCompletionRequest>} extra
 */
async function streamReply(extra) {
  const div = addMessage("assistant", "");
  const body = div.querySelector(".body");
  const callsView = document.createElement("span");
  callsView.className = "calls";
  div.append(callsView);
  let reply = "";
  /** @type {import("./engine.js").ChatCompletionMessageToolCall[]} */
  const calls = [];
  let finish = null;
  try {
    // `stream: true`: the reply comes as chunks
    const stream = /** @type {AsyncIterable<import("./engine.js").ChatCompletionChunk>} */ (
      await engine.chat.completions.create({
        messages: history,
        stream: true,
        stream_options: { include_usage: true },
        ...settings,
        ...extra,
      }));
    for await (const chunk of stream) {
      for (const choice of chunk.choices) {
        reply += choice.delta.content ?? "";
        body.textContent = reply;
        for (const d of choice.delta.tool_calls ?? []) {
          calls[d.index] ??= { id: d.id ?? "", type: "function", function: { name: d.function.name ?? "", arguments: "" } };
          calls[d.index].function.arguments += d.function.arguments ?? "";
        }
        if (calls.length) {
          callsView.textContent = calls.map((c) => `→ ${c.function.name}(${c.function.arguments})`).join("\n");
        }
        finish = choice.finish_reason ?? finish;
      }
      if (chunk.usage) {
        const x = chunk.usage.extra;
        const meta = document.createElement("span");
        meta.className = "meta";
        meta.textContent =
          `${chunk.usage.completion_tokens} tokens · ${x.decode_tokens_per_s.toFixed(1)} tokens/s · ` +
          `first token ${(x.time_to_first_token_s * 1000).toFixed(0)} ms · ${finish}`;
        div.append(meta);
        ui.stats.textContent = `${x.decode_tokens_per_s.toFixed(1)} tokens/s`;
      }
      ui.messages.scrollTop = ui.messages.scrollHeight;
    }
    div.dataset.finish = finish ?? "";
    /** @type {import("./engine.js").ChatCompletionMessageParam} */
    const message = { role: "assistant", content: calls.length && !reply.trim() ? null : reply };
    if (calls.length) message.tool_calls = calls;
    return { message, finish };
  } catch (err) {
    div.classList.add("error");
    body.textContent = `${err.name}: ${err.message}`;
    throw Object.assign(err, { shown: true });
  } finally {
    div.dataset.done = "true";
  }
}

ui.loadForm.addEventListener("submit", (e) => {
  e.preventDefault();
  load(ui.modelId.value.trim(), ui.device.value);
});
ui.chatForm.addEventListener("submit", (e) => {
  e.preventDefault();
  const text = ui.prompt.value.trim();
  if (!text || generating || !engine) return;
  ui.prompt.value = "";
  send(text);
});
ui.prompt.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey) {
    e.preventDefault();
    ui.chatForm.requestSubmit();
  }
});
ui.stop.addEventListener("click", () => engine?.interruptGenerate());
ui.format.addEventListener("change", () => {
  ui.schema.hidden = ui.format.value !== "schema";
});
ui.toolsOn.addEventListener("change", () => {
  ui.toolChoice.disabled = !ui.toolsOn.checked;
  ui.toolsHint.hidden = !ui.toolsOn.checked;
});
ui.clear.addEventListener("click", () => {
  history = [];
  ui.messages.replaceChildren();
  engine?.resetChat();
});

// ---- the documents panel ---------------------------------------------------------------------

/**
 * @typedef {{name: string, chunks: Record<string, number>}} ListedDocument
 * @typedef {{document_path: {namespace: string, collection: string, name: string}, content: string,
 *            score: number, start: {item: number, position: number}, end: {item: number, position: number}}} SearchHit
 * @typedef {{name: string, content: string, score: number, start: {item: number, position: number},
 *            end: {item: number, position: number}}} AnswerSource
 */

/** One collection of the document index, with one hybrid (semantic + BM25) index on the built-in embedder. */
const COLLECTION = { namespace: "playground", collection: "documents" };
const INDEX = { ...COLLECTION, index: "default" };
const EXCERPT_CHARS = 240;
/** @type {Promise<unknown>|null} */
let indexReady = null;
let docsBusy = false;
let docsListed = false;
let docCount = 0;

function updateDocControls() {
  const off = !engine || loadingModel || docsBusy;
  for (const control of [ui.docAdd, ui.docFiles, ui.docQuery, ui.docSearch, ui.docAsk]) control.disabled = off;
  for (const button of ui.docList.querySelectorAll("button")) button.disabled = off;
  ui.docs.dataset.busy = String(docsBusy);
}

/**
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag @param {string} [className] @param {string} [text]
 * @returns {HTMLElementTagNameMap[K]}
 */
function el(tag, className = "", text = "") {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text) node.textContent = text;
  return node;
}

/** @param {string} text @param {number} max */
function excerpt(text, max = EXCERPT_CHARS) {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** The index is created the first time a document is added (a no-op when it exists). */
function ensureIndex() {
  indexReady ??= engine.index.createIndex({ ...INDEX, hybrid: true }).catch((err) => {
    indexReady = null;
    throw err;
  });
  return indexReady;
}

/**
 * Run one documents action at a time: controls disabled meanwhile, errors shown in the panel.
 * @param {string} label shown while it runs @param {() => Promise<void>} action
 */
async function runDocs(label, action) {
  if (docsBusy || !engine) return;
  docsBusy = true;
  updateDocControls();
  ui.docStatus.classList.remove("error");
  ui.docStatus.textContent = label;
  try {
    await action();
  } catch (err) {
    ui.docStatus.classList.add("error");
    // a skill's error carries its traceback after the first line
    ui.docStatus.textContent = `${err.name}: ${String(err.message).split("\n")[0]}`;
  } finally {
    docsBusy = false;
    updateDocControls();
  }
}

async function refreshDocs() {
  /** @type {ListedDocument[]} */
  let docs = [];
  try {
    docs = (await engine.index.list(COLLECTION)).documents ?? [];
  } catch (err) {
    if (err.name !== "NotFoundError") throw err; // nothing added yet
  }
  docsListed = true;
  docCount = docs.length;
  ui.docCount.textContent = docs.length ? `(${docs.length})` : "";
  ui.docList.replaceChildren(...docs.map((d) => {
    const n = d.chunks[INDEX.index] ?? 0;
    const li = el("li");
    li.dataset.name = d.name;
    const remove = el("button", "delete", "Delete");
    remove.type = "button";
    remove.setAttribute("aria-label", `Delete ${d.name}`);
    remove.addEventListener("click", () => runDocs(`Deleting ${d.name}…`, async () => {
      await engine.index.delete([{ ...COLLECTION, name: d.name }]);
      await refreshDocs();
      ui.docStatus.textContent = `Deleted ${d.name}.`;
    }));
    li.append(el("span", "name", d.name), el("span", "chunks", `${n} ${n === 1 ? "chunk" : "chunks"}`), remove);
    return li;
  }));
}

/** @param {{name: string, text: string, source: string}[]} docs */
async function addDocuments(docs) {
  ui.docIngest.hidden = false;
  ui.docProgress.value = 0;
  ui.docIngestText.textContent = `Preparing the index…`;
  try {
    await ensureIndex();
    const total = docs.length;
    ui.docIngestText.textContent = `Indexing 0 / ${total} documents…`;
    const documents = docs.map((d) => ({
      path: { ...COLLECTION, name: d.name },
      contents: [{ text: d.text }],
      metadata: { source: d.source, added: new Date().toISOString() },
    }));
    const out = await engine.index.put(documents, {
      progress: (p) => {
        if (p.stage !== "index") return; // e.g. "queued" while the embedding model is busy
        ui.docProgress.value = p.total ? p.loaded / p.total : 1;
        ui.docIngestText.textContent = `Indexing ${p.loaded} / ${p.total} documents (${p.chunks} chunks)…`;
      },
    });
    await refreshDocs();
    ui.docStatus.textContent = `Added ${out.documents} ${out.documents === 1 ? "document" : "documents"} ` +
      `(${out.chunks} chunks).`;
  } finally {
    ui.docIngest.hidden = true;
  }
}

/** A name for pasted text: its first line, shortened. @param {string} text */
function nameFromText(text) {
  const line = text.trim().split("\n")[0].replace(/[\x00-\x1f\x7f]/g, " ").trim();
  return line.length > 60 ? `${line.slice(0, 59)}…` : line;
}

/** @param {string} query */
function search(query) {
  return runDocs("Searching…", async () => {
    ui.docAnswer.hidden = true;
    ui.docResults.replaceChildren();
    if (!docCount) {
      ui.docStatus.textContent = "Add documents first.";
      return;
    }
    await ensureIndex(); // the collection may predate the index
    /** @type {SearchHit[][]} */
    const [hits] = await engine.csi.search([{ index_path: INDEX, query, max_results: 5 }]);
    ui.docResults.replaceChildren(...hits.map((h) => source(h.document_path.name, h.score, h.content)));
    ui.docStatus.textContent = hits.length ? `${hits.length} ${hits.length === 1 ? "section" : "sections"} found.`
      : "Nothing found.";
  });
}

/** @param {string} question */
function ask(question) {
  return runDocs("Asking…", async () => {
    ui.docAnswer.hidden = true;
    ui.docResults.replaceChildren();
    if (!docCount || !loadedModel) {
      ui.docStatus.textContent = docCount ? "Load a chat model first." : "Add documents first.";
      return;
    }
    await ensureIndex();
    /** @type {{answer: string, sources: AnswerSource[]}} */
    const out = await engine.skills.run("search-answer", {
      question, ...INDEX, model: loadedModel, max_tokens: settings.max_tokens,
    });
    ui.docAnswer.querySelector(".answer").textContent = out.answer;
    ui.docAnswer.querySelector(".sources").replaceChildren(
      ...out.sources.map((s) => source(s.name, s.score, s.content)));
    ui.docAnswer.hidden = false;
    const n = out.sources.length;
    ui.docStatus.textContent = n ? `Answered from ${n} ${n === 1 ? "section" : "sections"}.` : "Nothing found.";
  });
}

/**
 * A search hit or an answer's source: name, score, excerpt.
 * @param {string} name @param {number} score @param {string} content
 */
function source(name, score, content) {
  const li = el("li");
  li.dataset.name = name;
  li.append(el("span", "name", name), el("span", "score", score.toFixed(3)), el("span", "excerpt", excerpt(content)));
  return li;
}

ui.docFiles.addEventListener("change", () => {
  const files = [...ui.docFiles.files];
  ui.docFiles.value = "";
  if (!files.length) return;
  runDocs(`Reading ${files.length} ${files.length === 1 ? "file" : "files"}…`, async () => {
    const docs = [];
    const skipped = [];
    for (const file of files) {
      const text = await file.text();
      if (text.includes("\0") || !text.trim()) skipped.push(file.name);
      else docs.push({ name: file.name, text, source: "file" });
    }
    if (docs.length) await addDocuments(docs);
    if (skipped.length) {
      ui.docStatus.textContent += `${docs.length ? " " : ""}Skipped (empty or not text): ${skipped.join(", ")}.`;
    }
  });
});
ui.docPasteForm.addEventListener("submit", (e) => {
  e.preventDefault();
  const text = ui.docText.value;
  const name = ui.docName.value.trim() || nameFromText(text);
  if (!text.trim()) {
    ui.docStatus.textContent = "Paste some text first.";
    return;
  }
  runDocs("Adding…", async () => {
    await addDocuments([{ name, text, source: "paste" }]);
    ui.docName.value = "";
    ui.docText.value = "";
  });
});
ui.docSearchForm.addEventListener("submit", (e) => {
  e.preventDefault();
  const query = ui.docQuery.value.trim();
  if (query) search(query);
});
ui.docAsk.addEventListener("click", () => {
  const question = ui.docQuery.value.trim();
  if (question) ask(question);
});

const params = new URLSearchParams(location.search);
// Generation settings can be set in the URL: ?temperature=0&max_tokens=512&ignore_eos=1
const settings = {
  temperature: Number(params.get("temperature") ?? 0.7),
  top_p: Number(params.get("top_p") ?? 0.95),
  max_tokens: Number(params.get("max_tokens") ?? 256),
  ...(params.get("ignore_eos") === "1" ? { ignore_eos: true } : {}),
};
/** The chat model a person meets first. */
const DEFAULT_MODEL = "smollm2-135m-instruct";
ui.modelId.value = params.get("model") ?? DEFAULT_MODEL;
listSiteModels();
ui.device.value = params.get("device") ?? "wasm";
load(ui.modelId.value, ui.device.value);
