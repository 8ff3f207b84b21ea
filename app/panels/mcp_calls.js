// A reply with MCP calls, drawn: its text in pieces (Markdown, as every reply) with each call
// between them where it happened, as a <details> block: the tool's name and arguments in its
// summary, with how it went; opened, the arguments in full and the server's result or error.
// What a server says is only ever set as text.

import { renderReply } from "./chat_body.js";
import { el } from "./dom.js";

/** @typedef {import("../conversations/tree.js").McpCall} McpCall */

const STATUS = /** @type {Record<string, string>} */ ({
  in_progress: "asked for…", calling: "calling…", completed: "done", failed: "failed", incomplete: "not made",
});

/** Arguments as shown: pretty JSON when they are JSON. @param {string} args */
function prettyArguments(args) {
  try {
    return JSON.stringify(JSON.parse(args), null, 2);
  } catch {
    return args;
  }
}

/** A labelled, focusable <pre> (it may scroll). @param {string} label @param {string} text @param {string} className */
function block(label, text, className) {
  const box = el("div", className);
  const pre = el("pre", "", text);
  pre.tabIndex = 0;
  pre.setAttribute("aria-label", label);
  box.append(el("span", "mcp-call-label", label), pre);
  return box;
}

/** Fill a call's block (again, as the call goes on). @param {HTMLDetailsElement} box @param {McpCall} call */
function fillCall(box, call) {
  box.dataset.status = call.status;
  box.dataset.name = call.name;
  const shortArgs = call.arguments.length > 80 ? `${call.arguments.slice(0, 79)}…` : call.arguments;
  const summary = el("summary");
  summary.append(el("span", "mcp-call-kind", "Tool call "), el("code", "mcp-call-name", call.name),
    el("code", "mcp-call-args-short", shortArgs ? ` ${shortArgs}` : ""),
    el("span", `mcp-call-status ${call.status}`, ` · ${STATUS[call.status] ?? call.status}`));
  const parts = [summary, el("p", "mcp-call-server", `on MCP server ${call.server_label}`),
    block(`Arguments of ${call.name}`, prettyArguments(call.arguments), "mcp-call-arguments")];
  if (typeof call.output === "string") parts.push(block(`Result of ${call.name}`, call.output, "mcp-call-result"));
  if (typeof call.error === "string") parts.push(block(`Error of ${call.name}`, call.error, "mcp-call-error"));
  box.replaceChildren(...parts);
}

/** @param {McpCall} call */
function callBlock(call) {
  const box = el("details", "mcp-call");
  fillCall(box, call);
  return box;
}

/**
 * The pieces of a reply in order: text, call, text… (empty text left out).
 * @param {string} content @param {McpCall[]} calls
 * @returns {Array<{text: string}|{call: McpCall}>}
 */
export function replySteps(content, calls) {
  /** @type {Array<{text: string}|{call: McpCall}>} */
  const out = [];
  let from = 0;
  for (const call of calls) {
    if (content.slice(from, call.at).trim()) out.push({ text: content.slice(from, call.at) });
    out.push({ call });
    from = Math.max(from, call.at);
  }
  if (content.slice(from).trim()) out.push({ text: content.slice(from) });
  return out;
}

/**
 * A view of a reply's steps in `container`, redrawn as the reply grows: text pieces and call
 * blocks already drawn are kept (a call block keeps its open state) and updated in place.
 * @param {HTMLElement} container
 */
export function stepsView(container) {
  /** @type {Array<{el: HTMLElement, key: string}>} */
  const shown = [];
  return {
    /** @param {string} content @param {McpCall[]} calls @param {boolean} streaming */
    update(content, calls, streaming) {
      const steps = replySteps(content, calls);
      steps.forEach((step, i) => {
        const key = "text" in step ? `text:${step.text}` : `call:${JSON.stringify(step.call)}`;
        const kind = "text" in step ? "text" : "call";
        let at = shown[i];
        if (at && at.key === key) return;
        if (!at || !at.key.startsWith(`${kind}:`)) {
          const node = "text" in step ? el("div", "reply-text") : callBlock(step.call);
          if (at) at.el.replaceWith(node);
          else container.append(node);
          at = shown[i] = { el: node, key: "" };
        }
        if ("text" in step) renderReply(at.el, step.text, { streaming });
        else fillCall(/** @type {HTMLDetailsElement} */ (at.el), step.call);
        at.key = key;
      });
      for (const gone of shown.splice(steps.length)) gone.el.remove();
    },
  };
}
