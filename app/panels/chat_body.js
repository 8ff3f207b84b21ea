// How a reply's text is drawn into its `.body`: Markdown, sanitized (web/render/markdown.js), except
// a reply that is one JSON value (a JSON reply format's), which is shown as it is.

import { renderMarkdown, renderRaw } from "../render/markdown.js";

/** Is `text` one JSON object or array? @param {string} text */
function isJson(text) {
  const t = text.trim();
  if (!/^[[{]/.test(t)) return false;
  try {
    JSON.parse(t);
    return true;
  } catch {
    return false;
  }
}

/** @param {HTMLElement} target @param {string} text @param {{streaming: boolean}} options */
export function renderReply(target, text, options) {
  if (isJson(text)) renderRaw(target, text);
  else renderMarkdown(target, text, options);
}
