// What the documents panel draws: a listed document with its Delete button, a search hit or an
// answer's source, and the name pasted text gets. Document text is only ever set as text.

import { counted, el } from "./dom.js";

/**
 * @typedef {{name: string, chunks: Record<string, number>}} ListedDocument
 * @typedef {{document_path: {namespace: string, collection: string, name: string}, content: string,
 *            score: number, start: {item: number, position: number}, end: {item: number, position: number}}} SearchHit
 * @typedef {{name: string, content: string, score: number, start: {item: number, position: number},
 *            end: {item: number, position: number}}} AnswerSource
 */

const EXCERPT_CHARS = 240;

/** `text` on one line, cut to `max` characters. @param {string} text @param {number} max */
export function excerpt(text, max = EXCERPT_CHARS) {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** A name for pasted text: its first line, shortened. @param {string} text */
export function nameFromText(text) {
  const line = text.trim().split("\n")[0].replace(/[\x00-\x1f\x7f]/g, " ").trim();
  return line.length > 60 ? `${line.slice(0, 59)}…` : line;
}

/**
 * A listed document: its name, its chunks in `index`, and a Delete button.
 * @param {ListedDocument} doc @param {string} index @param {() => void} onDelete
 */
export function documentItem(doc, index, onDelete) {
  const n = doc.chunks[index] ?? 0;
  const li = el("li");
  li.dataset.name = doc.name;
  const remove = el("button", "delete", "Delete");
  remove.type = "button";
  remove.setAttribute("aria-label", `Delete ${doc.name}`);
  remove.addEventListener("click", onDelete);
  li.append(el("span", "name", doc.name), el("span", "chunks", counted(n, "chunk")), remove);
  return li;
}

/**
 * A search hit or an answer's source: name, score, excerpt.
 * @param {string} name @param {number} score @param {string} content
 */
export function sourceItem(name, score, content) {
  const li = el("li");
  li.dataset.name = name;
  li.append(el("span", "name", name), el("span", "score", score.toFixed(3)), el("span", "excerpt", excerpt(content)));
  return li;
}
