// How a reply's text is drawn into its `.body`: the one place to switch to Markdown rendering
// (web/render/markdown.js, sanitized) when it is there. Until then: text, never parsed.

/** @param {HTMLElement} target @param {string} text @param {{streaming: boolean}} _options */
export function renderReply(target, text, _options) {
  target.textContent = text;
}
