// @ts-check
// Tools in the Prompt API facade (prompt_api.js): `create({tools})` checked, the model's arguments
// checked against each tool's `inputSchema`, and the loop a prompt runs: the engine's chat
// completions (with `tools`) let the model call them, the facade runs each call's `execute` and
// sends its result back as a `tool` message, until the model answers in text.

import { abortable, readReply } from "./prompt_api_calls.js";

/**
 * @typedef {import("./prompt_api_input.js").TextMessage} TextMessage
 * @typedef {import("./prompt_api_input.js").Call} Call
 * @typedef {import("./engine.js").WebWorkerEngine} WebWorkerEngine
 * @typedef {{name: string, description: string, inputSchema: Record<string, any>,
 *            execute: (args: any, options: {signal: AbortSignal}) => unknown}} Tool
 * @typedef {{type: "function", function: {name: string, description: string, parameters: Record<string, any>}}}
 *   Declaration a tool as chat completions take it
 * @typedef {{tools: Tool[], declarations: Declaration[], choice: "auto"|"required"}} ToolSet
 */

/** Rounds of calls in one prompt; after them the model must answer in text (it sees no tools). */
export const MAX_TOOL_ROUNDS = 4;
const NAME = /^[a-zA-Z0-9_-]{1,64}$/; // what the engine's chat completions take as a function name

/**
 * `create()`'s `tools` (and csi-web's `toolChoice`) checked: null when there are none.
 * @param {unknown} tools @param {unknown} choice
 * @returns {ToolSet|null}
 */
export function toolSet(tools, choice) {
  if (choice !== undefined && choice !== "auto" && choice !== "required") {
    throw new TypeError('toolChoice must be "auto" or "required"');
  }
  if (tools === undefined || tools === null) return null;
  if (!Array.isArray(tools)) throw new TypeError("tools must be a list");
  const seen = new Set();
  const checked = tools.map((t, i) => {
    if (!t || typeof t !== "object") throw new TypeError(`tools[${i}] must be an object`);
    if (typeof t.name !== "string" || !NAME.test(t.name)) {
      throw new TypeError(`tools[${i}].name must be 1 to 64 letters, digits, _ or -`);
    }
    if (seen.has(t.name)) throw new TypeError(`two tools are named ${t.name}`);
    seen.add(t.name);
    if (typeof t.description !== "string") throw new TypeError(`tools[${i}].description must be a string`);
    if (!t.inputSchema || typeof t.inputSchema !== "object" || Array.isArray(t.inputSchema)
        || t.inputSchema.type !== "object") {
      throw new TypeError(`tools[${i}].inputSchema must be a JSON Schema of type "object"`);
    }
    if (typeof t.execute !== "function") throw new TypeError(`tools[${i}].execute must be a function`);
    let schema;
    try {
      schema = JSON.parse(JSON.stringify(t.inputSchema));
    } catch {
      throw new TypeError(`tools[${i}].inputSchema must be JSON-serializable`);
    }
    return { name: t.name, description: t.description, inputSchema: schema, execute: t.execute };
  });
  if (!checked.length) return null;
  return {
    tools: checked, choice: choice ?? "auto",
    declarations: checked.map((t) => ({ type: /** @type {const} */ ("function"),
      function: { name: t.name, description: t.description, parameters: t.inputSchema } })),
  };
}

/**
 * What is wrong with `value` under a JSON Schema (null: nothing). The keywords of the grammar
 * the engine enforces (types, properties, items, enum/const, the combinators, local `$ref`s,
 * bounds, lengths, patterns); other keywords are not checked.
 * @param {any} schema @param {unknown} value @param {any} [root] @param {string} [at]
 * @returns {string|null}
 */
export function schemaError(schema, value, root = schema, at = "arguments") {
  if (schema === false) return `${at} is not allowed`;
  if (!schema || typeof schema !== "object") return null;
  /** @type {(s: any, v: unknown, where?: string) => string|null} */
  const sub = (s, v, where = at) => schemaError(s, v, root, where);
  if (typeof schema.$ref === "string") {
    const target = schema.$ref.startsWith("#") ? pointer(root, schema.$ref.slice(1)) : undefined;
    if (target === undefined) return `${at}: cannot resolve ${schema.$ref}`;
    const wrong = sub(target, value);
    if (wrong) return wrong;
  }
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (!types.some((/** @type {string} */ t) => isType(value, t))) {
      return `${at} must be of type ${types.join(" or ")}`;
    }
  }
  if ("const" in schema && !same(value, schema.const)) return `${at} must be ${JSON.stringify(schema.const)}`;
  if (Array.isArray(schema.enum) && !schema.enum.some((/** @type {unknown} */ v) => same(value, v))) {
    return `${at} must be one of ${JSON.stringify(schema.enum)}`;
  }
  for (const s of schema.allOf ?? []) {
    const wrong = sub(s, value);
    if (wrong) return wrong;
  }
  if (Array.isArray(schema.anyOf) && !schema.anyOf.some((/** @type {any} */ s) => !sub(s, value))) {
    return `${at} matches none of anyOf`;
  }
  if (Array.isArray(schema.oneOf) && schema.oneOf.filter((/** @type {any} */ s) => !sub(s, value)).length !== 1) {
    return `${at} must match exactly one of oneOf`;
  }
  if (typeof value === "number") {
    const { minimum: lo, maximum: hi, exclusiveMinimum: xlo, exclusiveMaximum: xhi } = schema;
    if ((typeof lo === "number" && value < lo) || (typeof xlo === "number" && value <= xlo)
        || (typeof hi === "number" && value > hi) || (typeof xhi === "number" && value >= xhi)) {
      return `${at} is out of range`;
    }
  }
  if (typeof value === "string") {
    const length = [...value].length;
    if (length < (schema.minLength ?? 0) || length > (schema.maxLength ?? Infinity)) {
      return `${at} has the wrong length`;
    }
    if (typeof schema.pattern === "string" && !matches(schema.pattern, value)) {
      return `${at} must match /${schema.pattern}/`;
    }
  }
  if (Array.isArray(value)) {
    if (value.length < (schema.minItems ?? 0) || value.length > (schema.maxItems ?? Infinity)) {
      return `${at} has the wrong number of items`;
    }
    const prefix = Array.isArray(schema.prefixItems) ? schema.prefixItems : [];
    for (const [i, item] of value.entries()) {
      const wrong = sub(i < prefix.length ? prefix[i] : schema.items, item, `${at}[${i}]`);
      if (wrong) return wrong;
    }
  }
  if (isType(value, "object")) return objectError(schema, /** @type {Record<string, unknown>} */ (value), sub, at);
  return null;
}

/**
 * @param {any} schema @param {Record<string, unknown>} value
 * @param {(s: any, v: unknown, where?: string) => string|null} sub @param {string} at
 */
function objectError(schema, value, sub, at) {
  const keys = Object.keys(value);
  for (const name of schema.required ?? []) if (!Object.hasOwn(value, name)) return `${at}.${name} is missing`;
  if (keys.length < (schema.minProperties ?? 0) || keys.length > (schema.maxProperties ?? Infinity)) {
    return `${at} has the wrong number of properties`;
  }
  const patterns = Object.entries(schema.patternProperties ?? {});
  for (const key of keys) {
    const where = `${at}.${key}`;
    const named = schema.properties && Object.hasOwn(schema.properties, key);
    const matching = patterns.filter(([p]) => matches(p, key));
    for (const s of [...(named ? [schema.properties[key]] : []), ...matching.map(([, s]) => s)]) {
      const wrong = sub(s, value[key], where);
      if (wrong) return wrong;
    }
    if (!named && !matching.length && schema.additionalProperties !== undefined) {
      const wrong = sub(schema.additionalProperties, value[key], where);
      if (wrong) return wrong;
    }
    const wrong = schema.propertyNames === undefined ? null : sub(schema.propertyNames, key, `${where} (its name)`);
    if (wrong) return wrong;
  }
  return null;
}

/**
 * Whether `text` matches `pattern` (one JavaScript cannot read is left unchecked).
 * @param {string} pattern @param {string} text
 */
function matches(pattern, text) {
  try {
    return new RegExp(pattern, "u").test(text);
  } catch {
    return true;
  }
}

/** @param {unknown} value @param {string} type */
function isType(value, type) {
  switch (type) {
    case "object": return typeof value === "object" && value !== null && !Array.isArray(value);
    case "array": return Array.isArray(value);
    case "integer": return Number.isInteger(value);
    case "number": return typeof value === "number" && Number.isFinite(value);
    case "null": return value === null;
    default: return typeof value === type;
  }
}

/** @param {unknown} a @param {unknown} b @returns {boolean} */
function same(a, b) {
  if (a === b) return true;
  if (!a || !b || typeof a !== "object" || typeof b !== "object" || Array.isArray(a) !== Array.isArray(b)) return false;
  const [x, y] = /** @type {Record<string, unknown>[]} */ ([a, b]);
  const keys = Object.keys(x);
  return keys.length === Object.keys(y).length && keys.every((k) => Object.hasOwn(y, k) && same(x[k], y[k]));
}

/** @param {any} root @param {string} path a JSON Pointer */
function pointer(root, path) {
  let node = root;
  for (const part of path.split("/").slice(1)) {
    node = node?.[decodeURIComponent(part).replace(/~1/g, "/").replace(/~0/g, "~")];
  }
  return node;
}

/**
 * A conversation as chat completions take it (tool calls and results in OpenAI's shapes).
 * @param {TextMessage[]} turns
 * @returns {any[]}
 */
function chatMessages(turns) {
  return turns.map((m) => m.calls ? { role: "assistant", content: m.content, tool_calls: m.calls.map((c) => (
    { id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } })) }
    : m.callId !== undefined ? { role: "tool", content: m.content, tool_call_id: m.callId }
      : { role: m.role, content: m.content });
}

/**
 * The result of one call, as the tool message's text: what `execute` returned (a string as it
 * is, anything else as JSON), or an error the model reads (an unknown tool, arguments that are
 * not JSON or break the schema, an `execute` that threw). An abort rejects instead.
 * @param {Call} call @param {ToolSet} set @param {AbortSignal} signal
 * @returns {Promise<string>}
 */
async function runCall(call, set, signal) {
  const failure = (/** @type {string} */ message) => JSON.stringify({ error: message });
  const tool = set.tools.find((t) => t.name === call.name);
  const names = set.tools.map((t) => t.name).join(", ");
  if (!tool) return failure(`there is no tool named ${call.name}; the tools are ${names}`);
  let args;
  try {
    args = JSON.parse(call.arguments);
  } catch {
    return failure(`the arguments are not JSON: ${call.arguments}`);
  }
  const wrong = schemaError(tool.inputSchema, args);
  if (wrong) return failure(`the arguments do not follow the tool's input schema: ${wrong}`);
  try {
    const result = await abortable(Promise.resolve().then(() => tool.execute(args, { signal })), signal);
    return typeof result === "string" ? result : JSON.stringify(result) ?? String(result);
  } catch (e) {
    signal.throwIfAborted();
    return failure(`the tool failed: ${/** @type {any} */ (e)?.message ?? e}`);
  }
}

/**
 * One reply of the model with the tools offered: its text (streamed to `chunk`), all it wrote
 * (`content`) and its calls. Whitespace alone before the calls (models put a call on a line of its
 * own) is not text of the reply: it is held back until words follow, and dropped if a call does.
 * @param {WebWorkerEngine} engine @param {any} request @param {AbortSignal} signal
 * @param {((text: string) => void)|null} chunk
 */
async function reply(engine, request, signal, chunk) {
  let text = "";
  let held = "";
  const say = (/** @type {string} */ t) => {
    text += t;
    chunk?.(t);
  };
  /** @type {Call[]} */
  const calls = [];
  const { generated } = await readReply(() => engine.chat.completions.create(request, { signal }), signal, (choice) => {
    const content = choice?.delta?.content;
    if (content && !text && !content.trim()) held += content;
    else if (content) {
      say(held + content);
      held = "";
    }
    for (const d of choice?.delta?.tool_calls ?? []) {
      const call = (calls[d.index] ??= { id: "", name: "", arguments: "" });
      if (d.id) call.id = d.id;
      if (d.function?.name) call.name = d.function.name;
      call.arguments += d.function?.arguments ?? "";
    }
  });
  const called = calls.filter(Boolean);
  if (!called.length && held) say(held);
  return { text, content: held + text, calls: called, generated };
}

/**
 * A prompt with tools: the model's replies, each call run and its result sent back, until it
 * answers in text (or MAX_TOOL_ROUNDS rounds of calls are over). `fit` fits the conversation with
 * `added` after it in the window (see prompt_api.js). Resolves to the text of every reply, this
 * prompt's turns (its messages, calls and results) and the last reply's text and token counts.
 * @param {{engine: WebWorkerEngine, model: string, set: ToolSet, maxTokens: number|undefined,
 *          sampling: Record<string, number>}} session
 * @param {TextMessage[]} messages
 * @param {(added: TextMessage[]) => Promise<{count: number, window: number, history: TextMessage[]}>} fit
 * @param {AbortSignal} signal @param {((text: string) => void)|null} chunk
 */
export async function promptWithTools(session, messages, fit, signal, chunk) {
  const added = [...messages];
  let text = "";
  for (let round = 0; ; round++) {
    const { count, window, history } = await fit(added);
    const room = window - count;
    const r = await reply(session.engine, {
      model: session.model, messages: chatMessages([...history, ...added]), tools: session.set.declarations,
      tool_choice: round >= MAX_TOOL_ROUNDS ? "none" : round === 0 ? session.set.choice : "auto",
      stream: true, stream_options: { include_usage: true }, max_tokens: Math.min(room, session.maxTokens ?? room),
      ...session.sampling,
    }, signal, chunk);
    text += r.text;
    if (!r.calls.length) return { text, added, last: r.text, count, generated: r.generated };
    const results = await Promise.all(r.calls.map(async (call) => /** @type {TextMessage} */ (
      { role: "tool", content: await runCall(call, session.set, signal), prefix: false, callId: call.id })));
    added.push({ role: "assistant", content: r.content, prefix: false, calls: r.calls }, ...results);
  }
}
