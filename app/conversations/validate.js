// An export file read back: hostile until checked. Every field is checked against what the
// playground writes (no unknown key, no wrong type, parents before children, every id once), and
// the first problem is reported by its path, e.g. `conversations[0].messages[2].role`.

import { knobProblem } from "./knobs.js";
import { ROOT } from "./tree.js";

/** @typedef {import("./tree.js").Conversation} Conversation */

export const EXPORT_FORMAT = Object.freeze({ format: "csi-playground/conversations", version: 1 });

const LIMITS = { conversations: 10_000, messages: 100_000, text: 1_000_000, logprobs: 100_000 };
const ROLES = ["user", "assistant", "tool"];
const FINISHES = ["stop", "length", "abort", "tool_calls", null];
const FORMATS = ["off", "json", "schema", "grammar", "regex"];
const TOOL_CHOICES = ["auto", "required", "none"];
const MCP_STATUSES = ["in_progress", "calling", "completed", "failed", "incomplete"];
const MCP_CHOICES = ["auto", "required", "off"];

export class ImportError extends Error {
  /** @param {string} path @param {string} problem */
  constructor(path, problem) {
    super(`${path} ${problem}`);
    this.name = "ImportError";
    this.path = path;
  }
}

/** @param {boolean} ok @param {string} path @param {string} problem */
function need(ok, path, problem) {
  if (!ok) throw new ImportError(path, problem);
}

/** A plain object with exactly the keys `required` and some of `optional`. @param {unknown} v @param {string} path @param {string[]} required @param {string[]} [optional] */
function record(v, path, required, optional = []) {
  need(typeof v === "object" && v !== null && !Array.isArray(v), path, "must be an object");
  const o = /** @type {Record<string, unknown>} */ (v);
  for (const k of Object.keys(o)) need(required.includes(k) || optional.includes(k), `${path}.${k}`, "is not a known field");
  for (const k of required) need(k in o, `${path}.${k}`, "is missing");
  return o;
}

/** @param {unknown} v @param {string} path @param {number} [max] */
function text(v, path, max = LIMITS.text) {
  need(typeof v === "string" && v.length <= max, path, `must be a string of at most ${max} characters`);
  return /** @type {string} */ (v);
}

/** @param {unknown} v @param {string} path @param {number} [min] */
function number(v, path, min = -Infinity) {
  need(typeof v === "number" && Number.isFinite(v) && v >= min, path, `must be a finite number${min > -Infinity ? ` ≥ ${min}` : ""}`);
}

/** @param {unknown} v @param {string} path @param {number} max */
function list(v, path, max) {
  need(Array.isArray(v) && v.length <= max, path, `must be a list of at most ${max} items`);
  return /** @type {unknown[]} */ (v);
}

/** @param {unknown} v @param {string} path */
function bytes(v, path) {
  for (const [i, b] of list(v, path, 64).entries()) need(Number.isInteger(b) && Number(b) >= 0 && Number(b) <= 255, `${path}[${i}]`, "must be a byte");
}

/** @param {unknown} v @param {string} path */
function tokenLogprob(v, path, top = true) {
  const o = record(v, path, ["token", "logprob", "bytes", ...(top ? ["top_logprobs"] : [])]);
  text(o.token, `${path}.token`, 1000);
  need(typeof o.logprob === "number" && !Number.isNaN(o.logprob) && o.logprob <= 0, `${path}.logprob`, "must be a number ≤ 0");
  bytes(o.bytes, `${path}.bytes`);
  if (top) for (const [i, t] of list(o.top_logprobs, `${path}.top_logprobs`, 20).entries()) tokenLogprob(t, `${path}.top_logprobs[${i}]`, false);
}

/** @param {unknown} v @param {string} path */
function message(v, path) {
  const o = record(v, path, ["id", "parent", "role", "content", "created"],
    ["tool_calls", "mcp_calls", "tool_call_id", "tool_name", "finish", "stats", "logprobs", "error"]);
  text(o.id, `${path}.id`, 100);
  need(o.id !== ROOT, `${path}.id`, "must not be empty");
  need(o.parent === null || typeof o.parent === "string", `${path}.parent`, "must be a message id or null");
  need(ROLES.includes(/** @type {string} */ (o.role)), `${path}.role`, `must be one of ${ROLES.join(", ")}`);
  if (o.content !== null) text(o.content, `${path}.content`);
  number(o.created, `${path}.created`, 0);
  if ("tool_calls" in o) {
    for (const [i, c] of list(o.tool_calls, `${path}.tool_calls`, 64).entries()) {
      const call = record(c, `${path}.tool_calls[${i}]`, ["id", "type", "function"]);
      text(call.id, `${path}.tool_calls[${i}].id`, 200);
      need(call.type === "function", `${path}.tool_calls[${i}].type`, "must be \"function\"");
      const fn = record(call.function, `${path}.tool_calls[${i}].function`, ["name", "arguments"]);
      text(fn.name, `${path}.tool_calls[${i}].function.name`, 64);
      text(fn.arguments, `${path}.tool_calls[${i}].function.arguments`);
    }
  }
  if ("mcp_calls" in o) {
    for (const [i, c] of list(o.mcp_calls, `${path}.mcp_calls`, 256).entries()) {
      const at = `${path}.mcp_calls[${i}]`;
      const call = record(c, at, ["server_label", "name", "arguments", "status", "at"], ["output", "error"]);
      text(call.server_label, `${at}.server_label`, 64);
      text(call.name, `${at}.name`, 200);
      text(call.arguments, `${at}.arguments`);
      need(MCP_STATUSES.includes(/** @type {string} */ (call.status)), `${at}.status`, `must be one of ${MCP_STATUSES.join(", ")}`);
      need(Number.isInteger(call.at) && Number(call.at) >= 0 && Number(call.at) <= String(o.content ?? "").length, `${at}.at`,
        "must be a position in the content");
      for (const k of ["output", "error"]) if (k in call) text(call[k], `${at}.${k}`);
    }
  }
  if ("tool_call_id" in o) text(o.tool_call_id, `${path}.tool_call_id`, 200);
  if ("tool_name" in o) text(o.tool_name, `${path}.tool_name`, 64);
  if ("finish" in o) need(FINISHES.includes(/** @type {any} */ (o.finish)), `${path}.finish`, "must be stop, length, abort, tool_calls or null");
  if ("stats" in o) {
    const keys = ["prompt_tokens", "completion_tokens", "cached_tokens", "ttft_s", "e2e_s", "tokens_per_s"];
    const s = record(o.stats, `${path}.stats`, keys, ["served_by", "server", "draft_tokens", "accepted_draft_tokens",
      "prompt_cache_tokens"]);
    for (const k of keys) number(s[k], `${path}.stats.${k}`, 0);
    for (const k of ["draft_tokens", "accepted_draft_tokens", "prompt_cache_tokens"]) if (k in s) number(s[k], `${path}.stats.${k}`, 0);
    if ("served_by" in s) need(s.served_by === "local" || s.served_by === "remote", `${path}.stats.served_by`, "must be local or remote");
    if ("server" in s) text(s.server, `${path}.stats.server`, 2000);
  }
  if ("logprobs" in o) for (const [i, t] of list(o.logprobs, `${path}.logprobs`, LIMITS.logprobs).entries()) tokenLogprob(t, `${path}.logprobs[${i}]`);
  if ("error" in o) {
    const e = record(o.error, `${path}.error`, ["name", "message", "param"]);
    text(e.name, `${path}.error.name`, 200);
    text(e.message, `${path}.error.message`, 10_000);
    if (e.param !== null) text(e.param, `${path}.error.param`, 200);
  }
}

/** @param {unknown} v @param {string} path */
function conversation(v, path) {
  const o = record(v, path, ["id", "title", "titleEdited", "created", "updated", "system", "settings", "format", "active", "messages"]);
  text(o.id, `${path}.id`, 100);
  need(o.id !== "", `${path}.id`, "must not be empty");
  text(o.title, `${path}.title`, 500);
  need(typeof o.titleEdited === "boolean", `${path}.titleEdited`, "must be true or false");
  number(o.created, `${path}.created`, 0);
  number(o.updated, `${path}.updated`, 0);
  text(o.system, `${path}.system`);
  const settings = record(o.settings, `${path}.settings`, [], [
    "temperature", "top_p", "top_k", "max_tokens", "frequency_penalty", "presence_penalty", "repetition_penalty",
    "seed", "n", "stop", "ignore_eos", "token_view"]);
  for (const [k, val] of Object.entries(settings)) {
    const problem = knobProblem(k, val);
    need(!problem, `${path}.settings.${k}`, problem);
  }
  const f = record(o.format, `${path}.format`, ["format", "schema", "grammar", "pattern", "tools", "toolChoice"], ["mcp"]);
  need(FORMATS.includes(/** @type {string} */ (f.format)), `${path}.format.format`, `must be one of ${FORMATS.join(", ")}`);
  for (const k of ["schema", "grammar", "pattern"]) text(f[k], `${path}.format.${k}`, 100_000);
  need(typeof f.tools === "boolean", `${path}.format.tools`, "must be true or false");
  need(TOOL_CHOICES.includes(/** @type {string} */ (f.toolChoice)), `${path}.format.toolChoice`, `must be one of ${TOOL_CHOICES.join(", ")}`);
  if ("mcp" in f) need(MCP_CHOICES.includes(/** @type {string} */ (f.mcp)), `${path}.format.mcp`, `must be one of ${MCP_CHOICES.join(", ")}`);
  /** @type {Set<string>} */
  const ids = new Set();
  for (const [i, m] of list(o.messages, `${path}.messages`, LIMITS.messages).entries()) {
    const at = `${path}.messages[${i}]`;
    message(m, at);
    const node = /** @type {{id: string, parent: string|null}} */ (m);
    need(!ids.has(node.id), `${at}.id`, "is used twice");
    need(node.parent === null || ids.has(node.parent), `${at}.parent`, "must name a message before it");
    ids.add(node.id);
  }
  need(typeof o.active === "object" && o.active !== null && !Array.isArray(o.active), `${path}.active`, "must be an object");
  const active = /** @type {Record<string, unknown>} */ (o.active);
  const parents = new Map(/** @type {Array<{id: string, parent: string|null}>} */ (o.messages).map((m) => [m.id, m.parent ?? ROOT]));
  for (const [k, child] of Object.entries(active)) {
    need(typeof child === "string" && parents.get(child) === k, `${path}.active.${k || "(root)"}`, "must name a child of that message");
  }
}

/**
 * The conversations of an export file, checked; throws an `ImportError` (or the `SyntaxError` of
 * text that is no JSON) otherwise.
 * @param {string} json
 * @returns {Conversation[]}
 */
export function parseExport(json) {
  let doc;
  try {
    doc = JSON.parse(json);
  } catch (err) {
    throw new ImportError("the file", `is not JSON (${/** @type {Error} */ (err).message})`);
  }
  const o = record(doc, "the file", ["format", "version", "conversations"]);
  need(o.format === EXPORT_FORMAT.format, "format", `must be "${EXPORT_FORMAT.format}"`);
  need(o.version === EXPORT_FORMAT.version, "version", `must be ${EXPORT_FORMAT.version}`);
  const seen = new Set();
  for (const [i, c] of list(o.conversations, "conversations", LIMITS.conversations).entries()) {
    conversation(c, `conversations[${i}]`);
    const id = /** @type {{id: string}} */ (c).id;
    need(!seen.has(id), `conversations[${i}].id`, "is used twice");
    seen.add(id);
  }
  return /** @type {Conversation[]} */ (o.conversations);
}
