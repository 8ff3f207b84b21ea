// A chat turn through the Responses API, for when MCP servers are connected: the conversation's
// shown path becomes input items, each server an `mcp` tool (the engine lists its tools, and calls
// them between the model's replies), and the streamed events become one reply: its text, and its
// MCP calls where they happened in it (`at`: the length of the text before the call).

import { TOOLS } from "../demo_tools.js";
import { shownPath } from "../conversations/tree.js";

/**
 * @typedef {import("csi-web").WebWorkerEngine} WebWorkerEngine
 * @typedef {Parameters<WebWorkerEngine["responses"]["create"]>[0]} ResponseCreateRequest
 * @typedef {Extract<Awaited<ReturnType<WebWorkerEngine["responses"]["create"]>>, AsyncIterable<any>>} EventStream
 * @typedef {EventStream extends AsyncIterable<infer E> ? E : never} ResponseStreamEvent
 * @typedef {import("../conversations/tree.js").Conversation} Conversation
 * @typedef {import("../conversations/tree.js").Node} Node
 * @typedef {import("../conversations/tree.js").McpCall} McpCall
 * @typedef {import("../conversations/tree.js").ToolCall} ToolCall
 * @typedef {import("../conversations/tree.js").TokenLogprob} TokenLogprob
 * @typedef {import("../conversations/tree.js").Stats} Stats
 * @typedef {import("../conversations/knobs.js").Settings} Settings
 * @typedef {{url: string, label: string, headers?: Record<string, string>, tools: string[]}} OfferedServer
 * @typedef {{content: string, mcp_calls: McpCall[], tool_calls: ToolCall[], finish: string|null,
 *   logprobs: TokenLogprob[]}} Reply
 */

/** MCP calls per reply at most (then the model is asked for its answer in words). */
export const MAX_CALLS = 4;

/** The settings the Responses API has no field for, named as the settings drawer names them. */
const NOT_SENT = /** @type {const} */ ([["top_k", "Top k", 0], ["frequency_penalty", "Frequency penalty", 0],
  ["presence_penalty", "Presence penalty", 0], ["repetition_penalty", "Repetition penalty", 1], ["n", "Replies (n)", 1]]);

/** The conversation's settings a turn with server tools cannot honor (their labels). @param {Settings} s */
export function settingsNotSent(s) {
  /** @type {string[]} */
  const out = NOT_SENT.filter(([key, , off]) => s[key] !== undefined && s[key] !== off).map(([, label]) => label);
  if (s.ignore_eos) out.push("Ignore EOS");
  return out;
}

/** A `server_label` for each server (letters, digits, `_`, `-`; unique). @param {string[]} urls */
export function serverLabels(urls) {
  const seen = new Set();
  return urls.map((url) => {
    let base = "server";
    try {
      const u = new URL(url);
      base = `${u.hostname}${u.port ? `_${u.port}` : ""}${u.pathname}`.replace(/[^a-zA-Z0-9_-]+/g, "_").replace(/_+$/, "");
    } catch { /* a label of its own below */ }
    base = base.slice(0, 60) || "server";
    let label = base;
    for (let i = 2; seen.has(label); i++) label = `${base}-${i}`;
    seen.add(label);
    return label;
  });
}

/** The text of a failed call's `error` (a tool's error content, or the protocol's message). @param {unknown} error */
export function errorText(error) {
  const e = /** @type {{content?: Array<{type?: string, text?: string}>, message?: string}|null} */ (error);
  const texts = (e?.content ?? []).filter((p) => p.type === "text").map((p) => String(p.text ?? ""));
  if (texts.length) return texts.join("\n");
  return typeof e?.message === "string" ? e.message : JSON.stringify(error);
}

/**
 * The input items of the shown path up to `at`: the earlier replies' MCP calls as function calls
 * and their results (the model reads what it was told), failed turns left out.
 * @param {Conversation} c @param {Node} at
 */
export function inputItems(c, at) {
  const path = shownPath(c);
  /** @type {NonNullable<Exclude<ResponseCreateRequest["input"], string>>} */
  const out = [];
  /** @param {string} text */
  const said = (text) => { if (text.trim()) out.push({ role: "assistant", content: text }); };
  for (const m of path.slice(0, path.indexOf(at) + 1)) {
    if (m.error) continue;
    if (m.role === "user") out.push({ role: "user", content: m.content ?? "" });
    else if (m.role === "tool") out.push({ type: "function_call_output", call_id: m.tool_call_id || "call", output: m.content ?? "" });
    else {
      const text = m.content ?? "";
      let from = 0;
      for (const [i, call] of (m.mcp_calls ?? []).entries()) {
        said(text.slice(from, call.at));
        from = call.at;
        if (call.status !== "completed" && call.status !== "failed") continue;
        const id = `mcp_${m.id}_${i}`;
        out.push({ type: "function_call", call_id: id, name: call.name, arguments: call.arguments },
          { type: "function_call_output", call_id: id, output: call.output ?? call.error ?? "" });
      }
      said(text.slice(from));
      for (const t of m.tool_calls ?? []) {
        out.push({ type: "function_call", call_id: t.id || "call", name: t.function.name, arguments: t.function.arguments });
      }
    }
  }
  return out;
}

/**
 * The request of a turn answering the path up to `at`.
 * @param {Conversation} c @param {Node} at @param {OfferedServer[]} servers
 * @param {{choice: string, demoTools: boolean, demoChoice: string, format: import("./reply_format.js").RequestExtras["response_format"]}} how
 * @returns {ResponseCreateRequest & {stream: true}}
 */
export function responseRequest(c, at, servers, how) {
  const s = c.settings;
  const labels = serverLabels(servers.map((x) => x.url));
  /** @type {NonNullable<ResponseCreateRequest["tools"]>} */
  const tools = servers.map((x, i) => ({ type: "mcp", server_label: labels[i], server_url: x.url,
    ...(x.headers ? { headers: x.headers } : {}), require_approval: "never" }));
  if (how.demoTools) {
    for (const { function: f } of TOOLS) tools.push({ type: "function", name: f.name, description: f.description, parameters: f.parameters });
  }
  // after a demo tool's result the model answers in words (as the chat completions turns do)
  const choice = at.role === "tool" ? "none" : how.choice === "required" ? "required" : how.demoTools ? how.demoChoice : "auto";
  const fmt = how.format;
  return {
    input: inputItems(c, at), tools, tool_choice: /** @type {"auto"|"required"|"none"} */ (choice), store: false, stream: true,
    // "required": one call, then the answer; otherwise a few calls at most before it
    ...(how.choice === "required" ? { max_tool_calls: 1, parallel_tool_calls: false } : { max_tool_calls: MAX_CALLS }),
    ...(c.system.trim() ? { instructions: c.system } : {}),
    ...(s.temperature !== undefined ? { temperature: s.temperature } : {}),
    ...(s.top_p !== undefined ? { top_p: s.top_p } : {}),
    ...(s.seed !== undefined ? { seed: s.seed } : {}),
    ...(s.max_tokens !== undefined ? { max_output_tokens: s.max_tokens } : {}),
    ...(s.token_view ? { include: ["message.output_text.logprobs"], top_logprobs: 5 } : {}),
    ...(fmt?.type === "json_object" ? { text: { format: { type: "json_object" } } } : {}),
    ...(fmt?.type === "json_schema" && fmt.json_schema ? { text: { format: { type: "json_schema",
      name: fmt.json_schema.name, schema: /** @type {Record<string, unknown>} */ (fmt.json_schema.schema) } } } : {}),
  };
}

/**
 * Stream a response into one reply; `onUpdate` sees it after each event. A stop sequence found in
 * the text ends the response there (the Responses API has no `stop`): the text is cut before it.
 * @param {WebWorkerEngine} engine @param {ResponseCreateRequest & {stream: true}} request
 * @param {{signal: AbortSignal, stop: string[], onUpdate: (reply: Reply) => void}} options
 * @returns {Promise<{reply: Reply, stats: Stats|null}>}
 */
export async function streamResponse(engine, request, { signal, stop, onUpdate }) {
  const start = performance.now();
  let first = 0;
  let calling = 0;
  let callTime = 0;
  let stopped = false;
  const cut = new AbortController();
  const both = AbortSignal.any([signal, cut.signal]);
  /** @type {Reply} */
  const reply = { content: "", mcp_calls: [], tool_calls: [], finish: null, logprobs: [] };
  /** @type {Map<string, McpCall>} */
  const calls = new Map();
  /** @type {Stats|null} */
  let stats = null;
  const stream = /** @type {AsyncIterable<ResponseStreamEvent>} */ (await engine.responses.create(request, { signal: both }));
  for await (const ev of stream) {
    const item = ev.item;
    if (ev.type === "response.output_text.delta" && !stopped) {
      first ||= performance.now();
      reply.content += ev.delta ?? "";
      reply.logprobs.push(.../** @type {TokenLogprob[]} */ (ev.logprobs ?? []));
      const at = Math.min(...stop.map((s) => reply.content.indexOf(s)).filter((i) => i >= 0));
      if (Number.isFinite(at)) {
        reply.content = reply.content.slice(0, at);
        stopped = true;
        cut.abort();
      }
    } else if (ev.type === "response.output_item.added" && item?.type === "mcp_call") {
      first ||= performance.now();
      const call = { server_label: item.server_label, name: item.name, arguments: item.arguments, status: "in_progress", at: reply.content.length };
      calls.set(item.id, call);
      reply.mcp_calls.push(call);
    } else if (ev.type === "response.mcp_call_arguments.delta") {
      const call = calls.get(ev.item_id ?? "");
      if (call) call.arguments += ev.delta ?? "";
    } else if (ev.type === "response.mcp_call.in_progress") {
      calling = performance.now();
      const call = calls.get(ev.item_id ?? "");
      if (call) call.status = "calling";
    } else if (ev.type === "response.output_item.done" && item?.type === "mcp_call") {
      if (calling) callTime += performance.now() - calling;
      calling = 0;
      const call = calls.get(item.id);
      if (call) {
        Object.assign(call, { arguments: item.arguments, status: item.status });
        if (typeof item.output === "string") call.output = item.output;
        if (item.error) call.error = errorText(item.error);
      }
    } else if (ev.type === "response.output_item.done" && item?.type === "function_call") {
      reply.tool_calls.push({ id: item.call_id, type: "function", function: { name: item.name, arguments: item.arguments } });
    } else if ((ev.type === "response.completed" || ev.type === "response.incomplete") && ev.response) {
      const r = ev.response;
      reply.finish = stopped ? "stop" : r.status === "cancelled" ? "abort"
        : r.status === "incomplete" ? "length" : reply.tool_calls.length ? "tool_calls" : "stop";
      const e2e = (performance.now() - start) / 1000;
      const ttft = first ? (first - start) / 1000 : e2e;
      const u = r.usage;
      if (u) {
        const decoding = Math.max(e2e - ttft - callTime / 1000, 1e-3);
        stats = { prompt_tokens: u.input_tokens, completion_tokens: u.output_tokens,
          cached_tokens: u.input_tokens_details.cached_tokens ?? 0, ttft_s: ttft, e2e_s: e2e,
          tokens_per_s: u.output_tokens / decoding };
      }
    }
    onUpdate(reply);
  }
  reply.finish ??= stopped ? "stop" : "abort";
  return { reply, stats };
}
