// @ts-check
// Tools the page provides: JS functions registered under a name, description and input schema,
// which skills see through pharia-skill's `csi.list_tools()` / `csi.invoke_tool(name, **args)`.
// The worker keeps the specs (it checks each call's arguments against the schema); the functions
// stay here, and the worker asks for each call (`tool_call`), answered with `tool_result`.
// MCP servers (`connect`) serve their tools to the skills run in a namespace; the worker calls them.

import { EngineError } from "../engine_error.js";
import { cancelOnAbort, deadline } from "./calls.js";

/**
 * @typedef {import("./worker_client.js").WorkerClient} WorkerClient
 * @typedef {import("./calls.js").Deadline} Deadline
 * @typedef {import("../../worker/protocol.js").ToolSpec} ToolSpec
 * @typedef {import("../../worker/protocol.js").ToolCallMessage} ToolCallMessage
 * @typedef {import("../../worker/protocol.js").ToolResultMessage} ToolResultMessage
 * @typedef {{name: string, description?: string, input_schema: Record<string, unknown>}} ToolSpecInput
 *   `name`: 1-64 letters, digits, '_' or '-'; `input_schema`: the JSON Schema (an object) of the
 *   arguments; `description` (default ""): what the tool does, for the model that picks tools.
 * @typedef {(args: Record<string, any>, context: {signal: AbortSignal}) => unknown} ToolFunction
 *   Runs the tool on its arguments (already checked against the schema); sync or async. Its result:
 *   a string (one content item), an array of strings (the items), undefined/null (no item), or any
 *   other JSON value (one item: its JSON text). What it throws reaches the skill as a
 *   `pharia_skill.ToolError` with its message. `signal` aborts when the skill's call is cancelled.
 * @typedef {import("../../worker/wire_types.js").ToolServer} ToolServer
 *   An MCP server connected in a namespace: `{namespace, url, label, tools: [{name, description, input_schema}]}`.
 * @typedef {{namespace: string, url: string, headers?: Record<string, string>, label?: string,
 *   timeoutMs?: number}} ToolServerInput
 *   `namespace`: the skills run with `{namespace}` see the server's tools; `url`: its MCP endpoint
 *   (Streamable HTTP); `headers`: sent with every request; `label`: how errors name it (default: the
 *   namespace); `timeoutMs`: how long one request to it may take (default 60 s).
 */

/**
 * The body of `tools_connect` (fields it does not know go along: the worker refuses them by name).
 * @param {any} server
 */
function connectBody(server) {
  if (server === null || typeof server !== "object" || Array.isArray(server)) return server;
  const { timeoutMs, ...rest } = server;
  return timeoutMs === undefined ? rest : { ...rest, timeout_s: timeoutMs / 1000 };
}

/**
 * The JSON value `value` stands for (undefined: null), or a TypeError when it is none.
 * @param {unknown} value
 */
function jsonValue(value) {
  if (value === undefined) return null;
  const text = JSON.stringify(value); // throws on BigInt and cycles
  if (text === undefined) throw new TypeError(`the tool returned a ${typeof value}, not a JSON value`);
  return JSON.parse(text);
}

/** @param {any} err */
function messageOf(err) {
  const message = err instanceof Error ? err.message || err.name : String(err);
  return message || "the tool failed";
}

/**
 * The `tools` namespace of an engine.
 * @param {WorkerClient} client
 */
export function toolsApi(client) {
  /** @type {Map<string, ToolFunction>} name -> function, for the tools the worker has accepted */
  const functions = new Map();
  /** @type {Map<number, AbortController>} calls under way */
  const running = new Map();

  /** @param {ToolCallMessage} msg */
  async function run(msg) {
    const fn = functions.get(msg.name);
    const controller = new AbortController();
    running.set(msg.call, controller);
    /** @type {ToolResultMessage} */
    let reply;
    try {
      if (!fn) throw new Error(`this page has no tool named ${JSON.stringify(msg.name)}`);
      reply = { type: "tool_result", call: msg.call, result: jsonValue(await fn(msg.arguments, { signal: controller.signal })) };
    } catch (err) {
      reply = { type: "tool_result", call: msg.call, error: { message: messageOf(err) } };
    } finally {
      running.delete(msg.call);
    }
    if (!controller.signal.aborted) client.answer(reply);
  }

  client.onRequest = (msg) => {
    if (msg.type === "tool_call") void run(msg);
    else running.get(msg.call)?.abort(new DOMException("the skill's call of the tool was cancelled", "AbortError"));
  };

  return {
    /**
     * Register (or replace) a tool; resolves to its spec once the worker has it.
     * @param {ToolSpecInput} spec @param {ToolFunction} fn @param {Deadline} [options]
     * @returns {Promise<ToolSpec>}
     */
    register: async (spec, fn, options = {}) => {
      if (typeof fn !== "function") {
        throw new EngineError({ name: "TypeError", param: "fn", message: "`fn` must be a function: it runs the tool" });
      }
      if (spec === null || typeof spec !== "object" || Array.isArray(spec)) {
        throw new EngineError({ name: "InvalidInputError", param: "spec",
          message: "a tool spec is an object: {name, description, input_schema}" });
      }
      /** @type {ToolSpec} */
      const registered = await client.send("tools_register", { request: spec }, deadline(options));
      functions.set(registered.name, fn);
      return registered;
    },
    /** @param {Deadline} [options] @returns {Promise<ToolSpec[]>} every tool, by name */
    list: (options = {}) => client.send("tools_list", {}, deadline(options)),
    /** @param {string} name @param {Deadline} [options] @returns {Promise<void>} */
    remove: async (name, options = {}) => {
      await client.send("tools_remove", { request: { name } }, deadline(options));
      functions.delete(name);
    },
    /**
     * Connect an MCP server (Streamable HTTP) for the skills run in `namespace`: resolves once its
     * session has started and its tools are listed; a server that cannot be reached or fails
     * rejects with a typed error naming it (`ServerUnavailableError`, `ServerError`, ...).
     * @param {ToolServerInput} server @param {Deadline & {signal?: AbortSignal}} [options]
     * @returns {Promise<ToolServer>}
     */
    connect: (server, options = {}) => {
      const id = client.newId();
      const release = cancelOnAbort(options?.signal, () => client.cancel(id));
      return client.send("tools_connect", { request: connectBody(server) }, { id, ...deadline(options) })
        .finally(release);
    },
    /**
     * Disconnect the MCP server at `url` in `namespace` (without `url`: every server there).
     * @param {{namespace: string, url?: string}} which @param {Deadline} [options]
     * @returns {Promise<ToolServer[]>} the servers disconnected
     */
    disconnect: (which, options = {}) => client.send("tools_disconnect", { request: which }, deadline(options)),
    /** @param {Deadline} [options] @returns {Promise<ToolServer[]>} the MCP servers connected, by namespace */
    servers: (options = {}) => client.send("tools_servers", {}, deadline(options)),
  };
}
