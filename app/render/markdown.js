// Model output as GitHub-flavored Markdown: parsed by marked, sanitized by DOMPurify, code
// highlighted by highlight.js, a Copy button per code block. Model output is hostile: raw HTML in
// it is shown as text, images are never loaded (their alt text and address are shown instead),
// links may only be http(s), mailto or in-page, and the sanitizer is the last word on every tag
// (under the page's Trusted Types, through csi-web's one policy).
// While a reply streams, only the blocks that changed are rebuilt, once per animation frame, so the
// finished part of a reply never flickers.

import { Marked } from "marked";
import DOMPurify from "dompurify";
import hljs from "highlight.js";
import { withSanitizerPolicy } from "csi-web";

/** @typedef {import("marked").Token} Token */

const ALLOWED_TAGS = ["p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "s", "code",
  "pre", "blockquote", "ul", "ol", "li", "table", "thead", "tbody", "tr", "th", "td", "a", "span", "div", "sup",
  "sub", "kbd"];
const ALLOWED_ATTR = ["href", "title", "class", "start", "align"];
const SAFE_URL = /^(?:(?:https?|mailto):|#)/i;

const purify = DOMPurify(window);
purify.addHook("uponSanitizeAttribute", (node, data) => {
  // a table column's alignment (DOMPurify drops the obsolete attribute otherwise)
  if (data.attrName === "align" && /^(?:TH|TD)$/.test(node.tagName) && /^(?:left|center|right)$/.test(data.attrValue)) {
    data.forceKeepAttr = true;
  }
});
purify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A" && node.hasAttribute("href")) {
    node.setAttribute("rel", "noopener noreferrer nofollow");
    if (!node.getAttribute("href")?.startsWith("#")) node.setAttribute("target", "_blank");
  }
});

/** @param {string} s */
const escape = (s) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** Whether a fenced code block's closing fence has come (a streaming reply may still be inside it). @param {Token} t */
function closed(t) {
  if (t.type !== "code" || !("raw" in t)) return true;
  const fence = /^ {0,3}(`{3,}|~{3,})/.exec(t.raw);
  if (!fence) return true; // an indented block
  const lines = t.raw.trimEnd().split("\n");
  return lines.length > 1 && lines[lines.length - 1].trim().startsWith(fence[1]);
}

const marked = new Marked({ gfm: true, breaks: false });
marked.use({
  renderer: {
    html: ({ text }) => escape(text), // raw HTML in a reply is text, never markup
    image: ({ href, text }) => `<span class="md-image">[image: ${escape(text)}${href ? ` (${escape(href)})` : ""}]</span>`,
    checkbox: ({ checked }) => `<span class="md-task" role="img" aria-label="${checked ? "done" : "to do"}">${checked ? "☑" : "☐"}</span> `,
    code: ({ text, lang }) => {
      const language = (lang ?? "").trim().split(/\s+/)[0].toLowerCase();
      const known = language && hljs.getLanguage(language);
      const body = known ? hljs.highlight(text, { language, ignoreIllegals: true }).value : escape(text);
      return `<pre class="md-code"><code class="hljs${known ? ` language-${escape(language)}` : ""}">${body}</code></pre>`;
    },
  },
});

/**
 * One top-level block as sanitized nodes.
 * @param {Token} token @param {Record<string, any>} links the reply's link reference definitions
 * @param {boolean} highlight whether a code block may be highlighted (it is complete)
 */
function renderBlock(token, links, highlight) {
  const tokens = Object.assign([token.type === "code" && !highlight ? { ...token, lang: "" } : token], { links });
  const html = /** @type {string} */ (marked.parser(/** @type {any} */ (tokens)));
  const block = document.createElement("div");
  block.className = "md-block";
  // DOMPurify parses the string into an inert document with csi-web's Trusted Types policy and
  // hands back nodes: no markup reaches a live sink
  block.append(withSanitizerPolicy((policy) => purify.sanitize(html, {
    ALLOWED_TAGS, ALLOWED_ATTR, ALLOWED_URI_REGEXP: SAFE_URL, RETURN_DOM_FRAGMENT: true, TRUSTED_TYPES_POLICY: policy,
  })));
  for (const pre of block.querySelectorAll("pre.md-code")) addCopyButton(/** @type {HTMLElement} */ (pre));
  return block;
}

/** @param {HTMLElement} pre */
function addCopyButton(pre) {
  const button = document.createElement("button");
  button.type = "button";
  button.className = "md-copy";
  button.textContent = "Copy";
  button.setAttribute("aria-label", "Copy the code");
  button.addEventListener("click", async () => {
    const code = pre.querySelector("code")?.textContent ?? "";
    try {
      await navigator.clipboard.writeText(code);
      button.textContent = "Copied";
    } catch {
      button.textContent = "Copy failed";
    }
    setTimeout(() => { button.textContent = "Copy"; }, 1500);
  });
  pre.prepend(button);
}

/**
 * @typedef {{raws: string[], links: string, pending: string|null, frame: number}} RenderState
 * @type {WeakMap<HTMLElement, RenderState>}
 */
const states = new WeakMap();

/** Render `markdown` into `target` now, rebuilding only the blocks that changed. @param {HTMLElement} target @param {string} markdown @param {boolean} final */
function update(target, markdown, final) {
  let state = states.get(target);
  if (!state || !target.classList.contains("markdown")) {
    target.replaceChildren();
    target.classList.add("markdown");
    state = { raws: [], links: "", pending: null, frame: 0 };
    states.set(target, state);
  }
  const tokens = marked.lexer(markdown);
  const links = JSON.stringify(tokens.links);
  let keep = 0;
  if (links === state.links) {
    while (keep < tokens.length && keep < state.raws.length && state.raws[keep] === key(tokens[keep], final)) keep++;
  }
  const children = [...target.children];
  for (const stale of children.slice(keep)) stale.remove();
  for (const token of tokens.slice(keep)) target.append(renderBlock(token, tokens.links, final || closed(token)));
  state.raws = tokens.map((t) => key(t, final));
  state.links = links;
}

/** What identifies a rendered block: its source, and whether its code could be highlighted. @param {Token} t @param {boolean} final */
function key(t, final) {
  return `${final || closed(t) ? "+" : "-"}${"raw" in t ? t.raw : ""}`;
}

/**
 * Render Markdown into `target` (its children are replaced). With `streaming`, the render waits
 * for the next animation frame and takes the latest text given by then; without, it is done now.
 * @param {HTMLElement} target @param {string} markdown @param {{streaming?: boolean}} [options]
 */
export function renderMarkdown(target, markdown, options = {}) {
  const state = states.get(target);
  if (!options.streaming) {
    if (state?.frame) cancelAnimationFrame(state.frame);
    if (state) Object.assign(state, { pending: null, frame: 0 });
    update(target, markdown, true);
    return;
  }
  if (!state || !target.classList.contains("markdown")) update(target, "", false);
  const s = /** @type {RenderState} */ (states.get(target));
  s.pending = markdown;
  if (!s.frame) {
    s.frame = requestAnimationFrame(() => {
      s.frame = 0;
      if (s.pending !== null) update(target, s.pending, false);
      s.pending = null;
    });
  }
}

/** Show `text` as it is, with no Markdown. @param {HTMLElement} target @param {string} text */
export function renderRaw(target, text) {
  const state = states.get(target);
  if (state?.frame) cancelAnimationFrame(state.frame);
  states.delete(target);
  target.classList.remove("markdown");
  target.textContent = text;
}

/**
 * A "Raw" toggle button for a rendered message: pressed, `body` shows the text as it is.
 * @param {HTMLElement} container where the button goes @param {HTMLElement} body
 * @param {() => string} getText the message's current text
 * @returns {HTMLButtonElement}
 */
export function mountRawToggle(container, body, getText) {
  const button = document.createElement("button");
  button.type = "button";
  button.className = "md-raw-toggle";
  button.textContent = "Raw";
  button.setAttribute("aria-pressed", "false");
  button.addEventListener("click", () => {
    const raw = button.getAttribute("aria-pressed") !== "true";
    button.setAttribute("aria-pressed", String(raw));
    if (raw) renderRaw(body, getText());
    else renderMarkdown(body, getText());
  });
  container.append(button);
  return button;
}
