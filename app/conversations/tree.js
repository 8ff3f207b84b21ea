// A conversation and its message tree. Every message names its parent (null for the first turn);
// the children of one parent are alternatives (an edited question, a regenerated reply, the n
// choices of one request). `active` remembers which child each parent shows, so the shown path
// — what the next request sends — runs from the root down through the chosen children.

/**
 * @typedef {import("./knobs.js").Settings} Settings
 * @typedef {import("csi-web").ChatCompletionMessageToolCall} ToolCall
 * @typedef {import("csi-web").ChatCompletionMessageParam} MessageParam
 * @typedef {{token: string, logprob: number, bytes: number[], top_logprobs: Array<{token: string, logprob: number, bytes: number[]}>}} TokenLogprob
 * @typedef {{prompt_tokens: number, completion_tokens: number, cached_tokens: number,
 *   ttft_s: number, e2e_s: number, tokens_per_s: number, served_by?: "local"|"remote", server?: string,
 *   draft_tokens?: number, accepted_draft_tokens?: number, prompt_cache_tokens?: number}} Stats
 *   `served_by` who wrote the reply: this browser, or the server at `server` (a base URL);
 *   `draft_tokens`, `accepted_draft_tokens`: speculative decoding's drafts, and those kept;
 *   `prompt_cache_tokens`: the cached prompt tokens that came from a cache kept beyond the page
 * @typedef {{name: string, message: string, param: string|null}} ErrorInfo
 * @typedef {{server_label: string, name: string, arguments: string, status: string, at: number,
 *   output?: string, error?: string}} McpCall a call the engine made on an MCP server during a reply:
 *   `at` is the length of the reply's text before it; `status` the Responses API's (`completed`, `failed`, …)
 * @typedef {object} Node one message
 * @property {string} id
 * @property {string|null} parent
 * @property {"user"|"assistant"|"tool"} role
 * @property {string|null} content
 * @property {number} created
 * @property {ToolCall[]} [tool_calls] the calls an assistant made
 * @property {McpCall[]} [mcp_calls] the MCP calls made during a reply, in order
 * @property {string} [tool_call_id] the call a tool message answers
 * @property {string} [tool_name]
 * @property {string|null} [finish] why a reply ended ("stop", "length", "abort" when stopped, "tool_calls")
 * @property {Stats} [stats]
 * @property {TokenLogprob[]} [logprobs] choice.logprobs.content, when the token view was on
 * @property {ErrorInfo} [error] the request failed: this node shows why and is never sent
 * @typedef {{format: string, schema: string, grammar: string, pattern: string, tools: boolean, toolChoice: string,
 *   mcp?: string}} FormatState `mcp`: the connected MCP servers' tools are offered ("auto", the default),
 *   a first reply must call one ("required"), or they are not offered ("off")
 * @typedef {object} Conversation
 * @property {string} id
 * @property {string} title
 * @property {boolean} titleEdited the user named it (the first question no longer does)
 * @property {number} created
 * @property {number} updated
 * @property {string} system the system prompt ("" for none)
 * @property {Settings} settings
 * @property {FormatState} format
 * @property {Record<string, string>} active parent id ("" for the root) → the child shown
 * @property {Node[]} messages every message, parents before children
 */

export const ROOT = "";

export const newId = () => crypto.randomUUID();

/**
 * An empty conversation.
 * @param {Settings} settings @param {FormatState} format
 * @returns {Conversation}
 */
export function newConversation(settings, format) {
  const now = Date.now();
  return { id: newId(), title: "New chat", titleEdited: false, created: now, updated: now, system: "",
    settings: { ...settings }, format: { ...format }, active: {}, messages: [] };
}

/** The children of `parent` (ROOT for first turns), oldest first. @param {Conversation} c @param {string} parent */
export function children(c, parent) {
  return c.messages.filter((m) => (m.parent ?? ROOT) === parent);
}

/** The shown path: the root's chosen child, its chosen child, and so on (the newest where none was chosen). @param {Conversation} c */
export function shownPath(c) {
  /** @type {Node[]} */
  const path = [];
  let at = ROOT;
  for (;;) {
    const kids = children(c, at);
    if (!kids.length) return path;
    const next = kids.find((k) => k.id === c.active[at]) ?? kids[kids.length - 1];
    path.push(next);
    at = next.id;
  }
}

/** Add a message under its parent and show it. @param {Conversation} c @param {Omit<Node, "id"|"created">} fields */
export function addNode(c, fields) {
  /** @type {Node} */
  const node = { id: newId(), created: Date.now(), ...fields };
  c.messages.push(node);
  c.active[node.parent ?? ROOT] = node.id;
  if (!c.titleEdited && node.role === "user" && node.parent === null) c.title = titleFrom(node.content ?? "");
  c.updated = node.created;
  return node;
}

/** Show `node` among its alternatives. @param {Conversation} c @param {Node} node */
export function choose(c, node) {
  c.active[node.parent ?? ROOT] = node.id;
}

/** A title from the first question: its first line, shortened. @param {string} text */
export function titleFrom(text) {
  const line = text.trim().split("\n")[0].trim();
  return line.length > 60 ? `${line.slice(0, 57)}…` : line || "New chat";
}

/**
 * The messages a request sends for the path up to and including `last` (the whole shown path when
 * null): the system prompt first, failed turns left out.
 * @param {Conversation} c @param {Node|null} [last]
 * @returns {MessageParam[]}
 */
export function requestMessages(c, last = null) {
  let path = shownPath(c);
  if (last) path = path.slice(0, path.indexOf(last) + 1);
  /** @type {MessageParam[]} */
  const out = c.system.trim() ? [{ role: "system", content: c.system }] : [];
  for (const m of path) {
    if (m.error) continue;
    if (m.role === "user") out.push({ role: "user", content: m.content ?? "" });
    else if (m.role === "tool") out.push({ role: "tool", tool_call_id: m.tool_call_id ?? "", content: m.content ?? "" });
    else out.push({ role: "assistant", content: m.content, ...(m.tool_calls?.length ? { tool_calls: m.tool_calls } : {}) });
  }
  return out;
}

/** Does the conversation's title or any message contain `query` (case-insensitive)? @param {Conversation} c @param {string} query */
export function matchesQuery(c, query) {
  const q = query.trim().toLowerCase();
  if (!q) return true;
  return c.title.toLowerCase().includes(q) || c.messages.some((m) => (m.content ?? "").toLowerCase().includes(q));
}
