// The Models panel's storage part: the models kept in this browser's Cache API with their sizes and
// a Delete button each, the storage estimate (used / quota) and the "keep storage persistent" button.

import { deleteModelAllInfoInCache, listCachedModels } from "csi-web";
import { counted, el, find } from "./dom.js";
import { formatBytes } from "./models_sizes.js";

/**
 * Mount the storage part on the panel.
 * @param {ParentNode} root
 * @param {() => string} loadedModel the model loaded now ("" for none)
 */
export function mountStoredModels(root, loadedModel) {
  const ui = {
    storage: find(root, "#models-storage", HTMLElement),
    persist: find(root, "#models-persist", HTMLButtonElement),
    persisted: find(root, "#models-persisted", HTMLElement),
    rows: find(root, "#models-cached tbody", HTMLTableSectionElement),
    status: find(root, "#models-cache-status", HTMLElement),
  };
  let refreshing = Promise.resolve();

  async function showEstimate() {
    if (!navigator.storage?.estimate) {
      ui.storage.textContent = "Storage: this browser gives no estimate.";
      return;
    }
    const { usage = 0, quota = 0 } = await navigator.storage.estimate();
    ui.storage.textContent = `Storage: ${formatBytes(usage)} used of ${formatBytes(quota)}.`;
    ui.storage.dataset.usage = String(usage);
    ui.storage.dataset.quota = String(quota);
  }

  async function showPersisted() {
    if (!navigator.storage?.persisted) {
      ui.persist.disabled = true;
      ui.persisted.textContent = "This browser cannot keep storage persistent.";
      return;
    }
    const on = await navigator.storage.persisted();
    ui.persist.disabled = on;
    ui.persisted.textContent = on ? "Storage is persistent: the browser will not evict these models on its own."
      : "The browser may evict these models when space runs low.";
  }

  /** One cached model's row. @param {{model: string, files: string[], bytes: number}} m */
  function row(m) {
    const tr = el("tr");
    tr.dataset.model = m.model;
    const name = el("td", "model", m.model);
    if (m.model === loadedModel()) name.append(el("span", "models-loaded", " (loaded)"));
    const files = el("td", "files", counted(m.files.length, "file"));
    files.title = m.files.join("\n");
    const size = el("td", "size", formatBytes(m.bytes));
    size.dataset.bytes = String(m.bytes);
    const del = el("button", "delete", "Delete");
    del.type = "button";
    del.setAttribute("aria-label", `Delete ${m.model} from this browser`);
    del.addEventListener("click", () => remove(m.model, m.bytes));
    const cell = el("td");
    cell.append(del);
    tr.append(name, files, size, cell);
    return tr;
  }

  /** @param {string} model @param {number} bytes */
  async function remove(model, bytes) {
    const wasLoaded = model === loadedModel();
    try {
      await deleteModelAllInfoInCache(model, undefined);
      ui.status.className = wasLoaded ? "warning" : "";
      ui.status.textContent = `Deleted ${model} (${formatBytes(bytes)}) from this browser.` + (wasLoaded
        ? " It is still loaded and keeps working until another model loads; loading it again downloads it again."
        : "");
    } catch (/** @type {any} */ err) {
      ui.status.className = "error";
      ui.status.textContent = `Could not delete ${model}: ${err.message}`;
    }
    await refresh();
  }

  /** List the cached models and the storage estimate again (one refresh at a time). */
  function refresh() {
    refreshing = refreshing.then(async () => {
      try {
        const models = await listCachedModels();
        ui.rows.replaceChildren(...models.map(row));
        if (!models.length) {
          const td = el("td", "hint", "No model is stored in this browser yet.");
          td.colSpan = 4;
          const tr = el("tr", "empty");
          tr.append(td);
          ui.rows.append(tr);
        }
        ui.rows.closest("table")?.setAttribute("data-count", String(models.length));
        await showEstimate();
      } catch (/** @type {any} */ err) {
        ui.status.className = "error";
        ui.status.textContent = `Could not read the browser's storage: ${err.message}`;
      }
    });
    return refreshing;
  }

  ui.persist.addEventListener("click", async () => {
    const granted = await navigator.storage.persist();
    await showPersisted();
    if (!granted) ui.persisted.textContent = "The browser declined for now (it decides by itself, e.g. for sites you use often or bookmark).";
  });
  showPersisted();
  refresh();
  return { refresh };
}
