// The text panel: a text cut into chunks with the CSI chunker (`engine.csi.chunkWithOffsets`,
// the model's tokens, `max_tokens`, `overlap`) and its language picked among candidates
// (`engine.csi.selectLanguage`). The chunks show highlighted in the original text. The text is
// the user's: it is only ever set as text.

import { counted, el, find } from "./dom.js";
import { highlighted, placeChunks } from "./text_view.js";

/** @typedef {import("csi-web").WebWorkerEngine} WebWorkerEngine */

/** Built-in models whose tokenizer can count a chunk's tokens. */
const MODELS = ["all-minilm-l6-v2", "tiny-chat", "smollm2-135m-instruct"];
const SAMPLE = "Die Stadt liegt an einem großen Fluss. Im Sommer fahren viele Boote über das Wasser, "
  + "und am Ufer sitzen Menschen in der Sonne.\n\nIm Winter ist es still. Der Fluss friert selten zu, "
  + "aber der Nebel bleibt oft bis zum Mittag.";

/**
 * A labelled control. @param {string} label @param {HTMLElement} control @param {string} [hint]
 */
function field(label, control, hint = "") {
  const wrap = el("label", "field", label);
  if (hint) wrap.title = hint;
  wrap.append(control);
  return wrap;
}

/**
 * Mount the panel on its root (`#panel-text`), building its elements.
 * @param {HTMLElement} root
 */
export function mountText(root) {
  const form = el("form");
  form.id = "text-form";
  const input = el("textarea");
  input.id = "text-input";
  input.rows = 8;
  input.spellcheck = false;
  input.value = SAMPLE;
  const model = el("select");
  model.id = "text-model";
  model.append(...MODELS.map((m) => Object.assign(el("option", "", m), { value: m })));
  const maxTokens = Object.assign(el("input"), { id: "text-max-tokens", type: "number", min: "1", value: "16" });
  const overlap = Object.assign(el("input"), { id: "text-overlap", type: "number", min: "0", value: "0" });
  const languages = Object.assign(el("input"), { id: "text-languages", value: "eng, deu, fra, spa, ita",
    autocomplete: "off", spellcheck: false });
  const submit = Object.assign(el("button", "primary", "Chunk and detect"), { id: "text-run", type: "submit",
    disabled: true });
  const settings = el("div", "text-settings");
  settings.append(field("Tokens of", model), field("Max tokens", maxTokens, "the most tokens one chunk holds"),
    field("Overlap", overlap, "tokens a chunk shares with the one before"),
    field("Languages", languages, "ISO 639-3 codes of the candidate languages, separated by commas"), submit);
  form.append(field("Text", input), settings);
  const status = el("p");
  status.id = "text-status";
  status.setAttribute("aria-live", "polite");
  const summary = el("p", "text-summary");
  const count = el("span");
  count.id = "text-chunk-count";
  const language = el("span");
  language.id = "text-language";
  summary.append(count, language);
  const view = el("div", "chunked");
  view.id = "text-chunks";
  view.setAttribute("aria-label", "The text with its chunks highlighted");
  view.setAttribute("role", "region");
  root.replaceChildren(el("h2", "", "Text"), form, status, summary, view);

  /** @type {WebWorkerEngine|null} */
  let engine = null;
  let busy = false;
  const update = () => {
    submit.disabled = !engine || busy;
    root.dataset.busy = String(busy);
  };

  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    if (!engine || busy) return;
    const text = input.value;
    const codes = languages.value.split(/[\s,]+/).map((c) => c.trim().toLowerCase()).filter(Boolean);
    const params = { model: model.value, max_tokens: Number(maxTokens.value), overlap: Number(overlap.value) };
    busy = true;
    update();
    status.classList.remove("error");
    status.textContent = "Chunking…";
    try {
      const [[chunks], [picked]] = await Promise.all([
        engine.csi.chunkWithOffsets([{ text, params, character_offsets: true }]),
        codes.length ? engine.csi.selectLanguage([{ text, languages: codes }]) : Promise.resolve([null]),
      ]);
      const placed = placeChunks(text, chunks);
      view.replaceChildren(...highlighted(text, placed));
      view.dataset.chunks = String(chunks.length);
      count.textContent = `${counted(chunks.length, "chunk")}.`;
      language.dataset.code = picked ?? "";
      language.textContent = codes.length ? ` Language: ${picked ?? "not clear"}.` : "";
      status.textContent = "";
    } catch (/** @type {any} */ err) {
      status.classList.add("error");
      status.textContent = `${err.name}: ${err.message}${err.param ? ` (${err.param})` : ""}`;
    } finally {
      busy = false;
      update();
    }
  });

  return {
    /** The engine that chunks and detects (`null` while none is loaded). @param {WebWorkerEngine|null} e */
    setEngine(e) {
      engine = e;
      update();
    },
  };
}
