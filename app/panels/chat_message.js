// One message of the shown path, drawn: its text (always set as text), the "‹ 2/3 ›" switch among
// its alternatives, its stats, and its actions (edit a question, regenerate a reply).

import { mountRawToggle } from "../render/markdown.js";
import { renderTokenView } from "../render/token_view.js";
import { renderReply } from "./chat_body.js";
import { el } from "./dom.js";
import { stepsView } from "./mcp_calls.js";

/**
 * @typedef {import("../conversations/tree.js").Node} Node
 * @typedef {object} MessageActions
 * @property {(node: Node) => void} choose show this alternative
 * @property {(node: Node) => void} regenerate ask for another reply in place of this one
 * @property {(node: Node, text: string) => void} edit send an edited question as an alternative
 */

/** Who wrote a reply: "served in this browser", "served by http://…/v1". @param {Node} node */
export function servedText(node) {
  const by = node.stats?.served_by;
  if (by === "remote") return `served by ${node.stats?.server ?? "a server"}`;
  return by === "local" ? "served in this browser" : "";
}

/** "12 tokens · 34.5 tokens/s · first token 80 ms · prompt 40 (32 cached) · stop" @param {Node} node */
export function metaText(node) {
  const s = node.stats;
  const parts = s ? [
    `${s.completion_tokens} tokens`,
    `${s.tokens_per_s.toFixed(1)} tokens/s`,
    `first token ${(s.ttft_s * 1000).toFixed(0)} ms`,
    ...(s.draft_tokens ? [`drafts ${s.accepted_draft_tokens ?? 0}/${s.draft_tokens} accepted`] : []),
    `total ${(s.e2e_s).toFixed(2)} s`,
    // llama-cpp-python's streams carry no usage: 0 prompt tokens from a server means "not said"
    s.served_by === "remote" && !s.prompt_tokens ? "prompt size not reported"
      : `prompt ${s.prompt_tokens} (${s.cached_tokens} cached${s.prompt_cache_tokens ? ", kept from an earlier visit" : ""})`,
  ] : [];
  if (node.finish) parts.push(node.finish === "abort" ? "stopped" : node.finish);
  return parts.join(" · ");
}

/** The "‹ 2/3 ›" switch. @param {Node} node @param {Node[]} siblings @param {MessageActions} actions */
function branchSwitch(node, siblings, actions) {
  const at = siblings.indexOf(node);
  const box = el("div", "branch");
  box.setAttribute("role", "group");
  box.setAttribute("aria-label", "Alternatives");
  const prev = el("button", "branch-prev", "‹");
  prev.type = "button";
  prev.setAttribute("aria-label", "Previous alternative");
  prev.disabled = at === 0;
  prev.addEventListener("click", () => actions.choose(siblings[at - 1]));
  const next = el("button", "branch-next", "›");
  next.type = "button";
  next.setAttribute("aria-label", "Next alternative");
  next.disabled = at === siblings.length - 1;
  next.addEventListener("click", () => actions.choose(siblings[at + 1]));
  box.append(prev, el("span", "branch-pos", `${at + 1}/${siblings.length}`), next);
  return box;
}

/** @param {string} label @param {string} className @param {() => void} run */
function action(label, className, run) {
  const b = el("button", className, label);
  b.type = "button";
  b.addEventListener("click", run);
  return b;
}

/** Swap a question's text for an editor. @param {HTMLElement} div @param {Node} node @param {MessageActions} actions */
function openEditor(div, node, actions) {
  const form = el("form", "edit-form");
  const area = el("textarea", "edit-text");
  area.value = node.content ?? "";
  area.rows = 3;
  area.setAttribute("aria-label", "Edit the message");
  const send = el("button", "edit-send", "Send");
  send.type = "submit";
  const cancel = action("Cancel", "edit-cancel", () => { form.remove(); div.classList.remove("editing"); });
  form.append(area, send, cancel);
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    if (area.value.trim()) actions.edit(node, area.value.trim());
  });
  area.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); form.requestSubmit(); }
    if (e.key === "Escape") { e.stopPropagation(); cancel.click(); }
  });
  div.classList.add("editing");
  div.append(form);
  area.focus();
}

/**
 * A message element for `node`.
 * @param {Node} node @param {Node[]} siblings its alternatives, itself included
 * @param {{tokenView: boolean, actions: MessageActions}} ctx
 */
export function renderMessage(node, siblings, { tokenView, actions }) {
  const div = el("div", `message ${node.role}`);
  div.dataset.id = node.id;
  if (node.role === "tool") {
    div.append(el("span", "body", `${node.tool_name ?? "tool"} → ${node.content ?? ""}`));
    return div;
  }
  if (siblings.length > 1) div.append(branchSwitch(node, siblings, actions));
  const body = node.role === "user" ? el("span", "body", node.content ?? "") : el("div", "body");
  const steps = node.role === "assistant" && !node.error && node.mcp_calls?.length ? node.mcp_calls : null;
  if (steps) stepsView(body).update(node.content ?? "", steps, false);
  else if (node.role === "assistant" && !node.error) renderReply(body, node.content ?? "", { streaming: false });
  div.append(body);
  if (node.role === "user") {
    const actionsBox = el("div", "actions");
    actionsBox.append(action("Edit", "edit", () => openEditor(div, node, actions)));
    div.append(actionsBox);
    return div;
  }
  div.dataset.done = "true";
  div.dataset.finish = node.finish ?? "";
  if (node.error) {
    div.classList.add("error");
    body.textContent = `${node.error.name}: ${node.error.message}`;
    if (node.error.param) div.dataset.param = node.error.param;
  }
  if (node.tool_calls?.length) {
    div.append(el("span", "calls", node.tool_calls.map((c) => `→ ${c.function.name}(${c.function.arguments})`).join("\n")));
  }
  if (tokenView && node.logprobs?.length) {
    if (steps) body.classList.add("calls-only"); // the tokens stand for the text; the calls stay
    else body.hidden = true;
    const tokens = el("div", "tokens");
    renderTokenView(tokens, node.logprobs);
    div.append(tokens);
  }
  if (node.stats) {
    for (const [k, v] of Object.entries(node.stats)) div.dataset[k.replace(/_(\w)/g, (_, c) => c.toUpperCase())] = String(v);
  }
  const meta = metaText(node);
  if (meta || node.error?.param) div.append(el("span", "meta", node.error?.param ? `field: ${node.error.param}` : meta));
  const served = servedText(node);
  if (served) div.append(el("span", "served", served));
  const actionsBox = el("div", "actions");
  actionsBox.append(action("Regenerate", "regenerate", () => actions.regenerate(node)));
  if (!node.error && node.content && !body.hidden && !steps) mountRawToggle(actionsBox, body, () => node.content ?? "");
  div.append(actionsBox);
  return div;
}

/** The element a reply streams into before it is a node. */
export function liveMessage() {
  const div = el("div", "message assistant live");
  const body = el("div", "body");
  const calls = el("span", "calls");
  div.append(body, calls);
  /** @type {ReturnType<typeof stepsView>|null} */
  let steps = null;
  return {
    div,
    /** A reply of the Responses API: its text with its MCP calls. @param {import("./chat_responses.js").Reply} reply */
    showSteps(reply) {
      (steps ??= stepsView(body)).update(reply.content, reply.mcp_calls, true);
      calls.textContent = reply.tool_calls.map((c) => `→ ${c.function.name}(${c.function.arguments})`).join("\n");
    },
    /** @param {import("./chat_reply.js").ChoiceResult} choice */
    show(choice) {
      renderReply(body, choice.content, { streaming: true });
      calls.textContent = choice.tool_calls.map((c) => `→ ${c.function.name}(${c.function.arguments})`).join("\n");
    },
  };
}
