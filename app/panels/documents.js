// The documents panel: add texts (files or pasted) to one collection of the document index, list
// and delete them, search them, and ask them a question (the `search-answer` skill, answered by
// the chat model loaded last). One action runs at a time; its errors show in the panel. An ingest
// can be cancelled: what was committed before stays, whole, and the panel says how much went in.

import { counted, find } from "./dom.js";
import { documentItem, nameFromText, sourceItem } from "./documents_view.js";

/**
 * @typedef {import("csi-web").WebWorkerEngine} WebWorkerEngine
 * @typedef {import("./documents_view.js").ListedDocument} ListedDocument
 * @typedef {import("./documents_view.js").SearchHit} SearchHit
 * @typedef {import("./documents_view.js").AnswerSource} AnswerSource
 */

/** One collection of the document index, with one hybrid (semantic + BM25) index on the built-in embedder. */
const COLLECTION = { namespace: "playground", collection: "documents" };
const INDEX = { ...COLLECTION, index: "default" };

/**
 * Mount the panel on its root (`#docs`).
 * @param {HTMLElement} root @param {{maxTokens: number}} options `maxTokens` of an answer
 */
export function mountDocuments(root, options) {
  const ui = {
    count: find(root, "#doc-count", HTMLElement),
    files: find(root, "#doc-files", HTMLInputElement),
    pasteForm: find(root, "#doc-paste-form", HTMLFormElement),
    name: find(root, "#doc-name", HTMLInputElement),
    text: find(root, "#doc-text", HTMLTextAreaElement),
    add: find(root, "#doc-add", HTMLButtonElement),
    ingest: find(root, "#doc-ingest", HTMLElement),
    progress: find(root, "#doc-progress", HTMLProgressElement),
    ingestText: find(root, "#doc-ingest-text", HTMLElement),
    cancel: find(root, "#doc-cancel", HTMLButtonElement),
    list: find(root, "#doc-list", HTMLElement),
    searchForm: find(root, "#doc-search-form", HTMLFormElement),
    query: find(root, "#doc-query", HTMLInputElement),
    search: find(root, "#doc-search", HTMLButtonElement),
    ask: find(root, "#doc-ask", HTMLButtonElement),
    status: find(root, "#doc-status", HTMLElement),
    results: find(root, "#doc-results", HTMLElement),
    answer: find(root, "#doc-answer", HTMLElement),
  };
  /** @type {WebWorkerEngine|null} */
  let engine = null;
  /** The chat model loaded last ("" when none), and whether a load is under way. */
  let model = "";
  let loading = false;
  /** @type {Promise<unknown>|null} */
  let indexReady = null;
  let busy = false;
  let listed = false;
  let count = 0;
  /** @type {AbortController|null} the ingest under way */
  let ingesting = null;

  function updateControls() {
    const off = !engine || loading || busy;
    for (const control of [ui.add, ui.files, ui.query, ui.search, ui.ask]) control.disabled = off;
    for (const button of ui.list.querySelectorAll("button")) button.disabled = off;
    root.dataset.busy = String(busy);
  }

  /** The index is created the first time a document is added (a no-op when it exists). @param {WebWorkerEngine} engine */
  function ensureIndex(engine) {
    indexReady ??= engine.index.createIndex({ ...INDEX, hybrid: true }).catch((/** @type {unknown} */ err) => {
      indexReady = null;
      throw err;
    });
    return indexReady;
  }

  /**
   * Run one action at a time: controls disabled meanwhile, errors shown in the panel.
   * @param {string} label shown while it runs @param {(engine: WebWorkerEngine) => Promise<void>} action
   */
  async function run(label, action) {
    if (busy || !engine) return;
    busy = true;
    updateControls();
    ui.status.classList.remove("error");
    ui.status.textContent = label;
    try {
      await action(engine);
    } catch (/** @type {any} */ err) {
      ui.status.classList.add("error");
      // a skill's error carries its traceback after the first line
      ui.status.textContent = `${err.name}: ${String(err.message).split("\n")[0]}`;
    } finally {
      busy = false;
      updateControls();
    }
  }

  /** @param {WebWorkerEngine} engine */
  async function refresh(engine) {
    /** @type {ListedDocument[]} */
    let docs = [];
    try {
      docs = (await engine.index.list(COLLECTION)).documents ?? [];
    } catch (/** @type {any} */ err) {
      if (err.name !== "NotFoundError") throw err; // nothing added yet
    }
    listed = true;
    count = docs.length;
    ui.count.textContent = docs.length ? `(${docs.length})` : "";
    ui.list.replaceChildren(...docs.map((d) => documentItem(d, INDEX.index, () => run(`Deleting ${d.name}…`, async (engine) => {
      await engine.index.delete([{ ...COLLECTION, name: d.name }]);
      await refresh(engine);
      ui.status.textContent = `Deleted ${d.name}.`;
    }))));
  }

  /** @param {WebWorkerEngine} engine @param {{name: string, text: string, source: string}[]} docs */
  async function addDocuments(engine, docs) {
    ui.ingest.hidden = false;
    ui.progress.value = 0;
    const controller = new AbortController();
    ingesting = controller;
    ui.cancel.disabled = false;
    ui.ingestText.textContent = `Preparing the index…`;
    try {
      await ensureIndex(engine);
      const total = docs.length;
      ui.ingestText.textContent = `Indexing 0 / ${total} documents…`;
      const documents = docs.map((d) => ({
        path: { ...COLLECTION, name: d.name },
        contents: [{ text: d.text }],
        metadata: { source: d.source, added: new Date().toISOString() },
      }));
      const out = await engine.index.put(documents, {
        signal: controller.signal,
        progress: (/** @type {any} */ p) => {
          if (p.stage !== "index") return; // e.g. "queued" while the embedding model is busy
          ui.progress.value = p.total ? p.loaded / p.total : 1;
          ui.ingestText.textContent = `Indexing ${p.loaded} / ${p.total} documents (${p.chunks} chunks)…`;
        },
      });
      await refresh(engine);
      ui.status.textContent = `Added ${counted(out.documents, "document")} (${out.chunks} chunks).`;
    } catch (/** @type {any} */ err) {
      if (err?.name !== "AbortError") throw err;
      /** @type {import("csi-web").Committed} */
      const done = err.committed ?? { documents: [], chunks: 0 };
      await refresh(engine);
      ui.status.textContent = `Cancelled: ${done.documents.length} of ${counted(docs.length, "document")} went in `
        + `(${done.chunks} chunks); the others were not added.`;
    } finally {
      ingesting = null;
      ui.ingest.hidden = true;
    }
  }

  /** @param {string} query */
  function search(query) {
    return run("Searching…", async (engine) => {
      ui.answer.hidden = true;
      ui.results.replaceChildren();
      if (!count) {
        ui.status.textContent = "Add documents first.";
        return;
      }
      await ensureIndex(engine); // the collection may predate the index
      /** @type {SearchHit[][]} */
      const [hits] = await engine.csi.search([{ index_path: INDEX, query, max_results: 5 }]);
      ui.results.replaceChildren(...hits.map((h) => sourceItem(h.document_path.name, h.score, h.content)));
      ui.status.textContent = hits.length ? `${counted(hits.length, "section")} found.` : "Nothing found.";
    });
  }

  /** @param {string} question */
  function ask(question) {
    return run("Asking…", async (engine) => {
      ui.answer.hidden = true;
      ui.results.replaceChildren();
      if (!count || !model) {
        ui.status.textContent = count ? "Load a chat model first." : "Add documents first.";
        return;
      }
      await ensureIndex(engine);
      const out = /** @type {{answer: string, sources: AnswerSource[]}} */ (await engine.skills.run("search-answer", {
        question, ...INDEX, model, max_tokens: options.maxTokens,
      }));
      find(ui.answer, ".answer", HTMLElement).textContent = out.answer;
      find(ui.answer, ".sources", HTMLElement).replaceChildren(
        ...out.sources.map((s) => sourceItem(s.name, s.score, s.content)));
      ui.answer.hidden = false;
      const n = out.sources.length;
      ui.status.textContent = n ? `Answered from ${counted(n, "section")}.` : "Nothing found.";
    });
  }

  ui.files.addEventListener("change", () => {
    const files = [...(ui.files.files ?? [])];
    ui.files.value = "";
    if (!files.length) return;
    run(`Reading ${counted(files.length, "file")}…`, async (engine) => {
      const docs = [];
      const skipped = [];
      for (const file of files) {
        const text = await file.text();
        if (text.includes("\0") || !text.trim()) skipped.push(file.name);
        else docs.push({ name: file.name, text, source: "file" });
      }
      if (docs.length) await addDocuments(engine, docs);
      if (skipped.length) {
        ui.status.textContent += `${docs.length ? " " : ""}Skipped (empty or not text): ${skipped.join(", ")}.`;
      }
    });
  });
  ui.pasteForm.addEventListener("submit", (e) => {
    e.preventDefault();
    const text = ui.text.value;
    const name = ui.name.value.trim() || nameFromText(text);
    if (!text.trim()) {
      ui.status.textContent = "Paste some text first.";
      return;
    }
    run("Adding…", async (engine) => {
      await addDocuments(engine, [{ name, text, source: "paste" }]);
      ui.name.value = "";
      ui.text.value = "";
    });
  });
  ui.cancel.addEventListener("click", () => {
    ui.cancel.disabled = true;
    ui.ingestText.textContent = "Cancelling…";
    ingesting?.abort();
  });
  ui.searchForm.addEventListener("submit", (e) => {
    e.preventDefault();
    const query = ui.query.value.trim();
    if (query) search(query);
  });
  ui.ask.addEventListener("click", () => {
    const question = ui.query.value.trim();
    if (question) ask(question);
  });

  return {
    /** The engine whose index the panel uses (`null` until the first load made one). @param {WebWorkerEngine|null} e */
    setEngine(e) {
      engine = e;
      updateControls();
    },
    /** The chat model that answers questions ("" when none is loaded). @param {string} m */
    setModel(m) {
      model = m;
    },
    /** A model load starts (the panel waits) or ends (the first time, the panel lists the documents). @param {boolean} on */
    setLoading(on) {
      loading = on;
      updateControls();
      if (!on && engine && !listed) run("", refresh);
    },
  };
}
