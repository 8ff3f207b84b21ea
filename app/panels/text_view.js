// What the text panel draws: the original text with its chunks highlighted. Where chunks overlap a
// piece of text belongs to each of them (`data-chunks` lists them all). Text only ever set as text.

import { el } from "./dom.js";

/** @typedef {{text: string, start: number}} PlacedChunk a chunk and its start, a UTF-16 index into the text */

/**
 * Where each chunk starts in `text`, as a UTF-16 index: from its code-point offset when the
 * result has one, else found in order after the previous chunk's start.
 * @param {string} text @param {{text: string, character_offset?: number|null}[]} chunks
 * @returns {PlacedChunk[]}
 */
export function placeChunks(text, chunks) {
  /** @type {number[]} code point -> UTF-16 index (one past the end included) */
  const utf16 = [];
  let at = 0;
  for (const ch of text) {
    utf16.push(at);
    at += ch.length;
  }
  utf16.push(at);
  let from = 0;
  return chunks.map((c) => {
    const offset = c.character_offset;
    let start = typeof offset === "number" ? utf16[offset] ?? -1 : text.indexOf(c.text, from);
    if (start < 0 || text.slice(start, start + c.text.length) !== c.text) start = text.indexOf(c.text, from);
    if (start >= 0) from = start;
    return { text: c.text, start };
  });
}

/**
 * `text` as nodes: plain text outside the chunks, one tinted `<mark>` per piece inside them
 * (alternating tints by the first chunk it belongs to).
 * @param {string} text @param {PlacedChunk[]} chunks
 * @returns {Node[]}
 */
export function highlighted(text, chunks) {
  const placed = chunks.map((c, i) => ({ i, start: c.start, end: c.start + c.text.length })).filter((c) => c.start >= 0);
  const cuts = [...new Set([0, text.length, ...placed.flatMap((c) => [c.start, c.end])])].sort((a, b) => a - b);
  /** @type {Node[]} */
  const nodes = [];
  for (let k = 0; k + 1 < cuts.length; k++) {
    const [a, b] = [cuts[k], cuts[k + 1]];
    const piece = text.slice(a, b);
    const owners = placed.filter((c) => c.start <= a && c.end >= b).map((c) => c.i);
    if (!owners.length) {
      nodes.push(document.createTextNode(piece));
      continue;
    }
    const mark = el("mark", `chunk ${owners[0] % 2 ? "odd" : "even"}${owners.length > 1 ? " overlap" : ""}`, piece);
    mark.dataset.chunks = owners.join(" ");
    mark.title = owners.length > 1 ? `chunks ${owners.map((i) => i + 1).join(" and ")}` : `chunk ${owners[0] + 1}`;
    nodes.push(mark);
  }
  return nodes;
}
