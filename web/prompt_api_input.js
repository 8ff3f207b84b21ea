// @ts-check
// The Prompt API's inputs, checked and put in their long form before anything reaches the engine:
// prompts (strings or messages), options (expected inputs/outputs, languages, sampling) and
// response constraints. Errors are the exceptions the Prompt API names: TypeError, RangeError and
// DOMExceptions (SyntaxError, NotSupportedError, QuotaExceededError...). Pure: no engine, no DOM.

/**
 * @typedef {"system"|"user"|"assistant"} Role
 * @typedef {{id: string, name: string, arguments: string}} Call a tool call (`arguments`: JSON text)
 * @typedef {{role: Role|"tool", content: string, prefix: boolean, calls?: Call[], callId?: string}} TextMessage
 *   A message in its long form, text only (what csi-web's models read); in a session with tools,
 *   also an assistant's `calls` and a tool's result (role "tool", answering `callId`).
 * @typedef {{type: string, languages?: string[]}} Expected
 * @typedef {"most-predictable"|"predictable"|"balanced"|"creative"|"most-creative"} SamplingMode
 * @typedef {{temperature: number, topK: number}} Sampling
 * @typedef {{temperature?: number, topK?: number}} ChosenSampling what the app chose; the rest is the model's
 * @typedef {{type: "json_schema", json_schema: {name: string, schema: Record<string, unknown>}}
 *          | {type: "regex", pattern: string}} ResponseFormat
 * @typedef {{format: ResponseFormat, guidance: string}} Constraint
 */

export const ROLES = Object.freeze(["system", "user", "assistant"]);
/** Every content type of the Prompt API; csi-web's models take and give text only. */
export const CONTENT_TYPES = Object.freeze(["text", "image", "audio", "tool-call", "tool-response"]);

/**
 * What each sampling mode means here: greedy for the most predictable, then wider and hotter.
 * @type {Readonly<Record<SamplingMode, Sampling>>}
 */
export const SAMPLING_MODES = Object.freeze({
  "most-predictable": { temperature: 0, topK: 1 },
  predictable: { temperature: 0.3, topK: 10 },
  balanced: { temperature: 0.7, topK: 40 },
  creative: { temperature: 1.0, topK: 64 },
  "most-creative": { temperature: 1.3, topK: 128 },
});

/** The most `temperature` and `topK` can be (larger values are clamped to these, as the spec says). */
export const MAX_TEMPERATURE = 2;
export const MAX_TOP_K = 128;

/**
 * The Prompt API's view of a model's sampling defaults (chat_tokens' `sampling`): greedy is top-k 1,
 * and top-k off shows as the most `topK` can be.
 * @param {{temperature: number, top_k: number}} model
 * @returns {Sampling}
 */
export function modelSampling(model) {
  const temperature = Math.min(model.temperature, MAX_TEMPERATURE);
  if (!(temperature > 0)) return { temperature: 0, topK: 1 };
  return { temperature, topK: model.top_k > 0 ? Math.min(model.top_k, MAX_TOP_K) : MAX_TOP_K };
}

/** @param {string} name @param {string} message @returns {DOMException} */
export const domError = (name, message) => new DOMException(message, name);

/**
 * A QuotaExceededError: the browser's own class where it has one (it carries `requested` and
 * `quota`), otherwise a DOMException of that name with the two numbers set on it.
 * @param {string} message @param {number} requested @param {number} quota
 * @returns {DOMException & {requested: number, quota: number}}
 */
export function quotaExceeded(message, requested, quota) {
  const Native = /** @type {any} */ (globalThis).QuotaExceededError;
  if (typeof Native === "function") {
    try {
      const e = new Native(message, { requested, quota });
      if (e.requested === requested) return e;
    } catch {
      // an older shape of the class: fall through to the DOMException
    }
  }
  const e = /** @type {DOMException & {requested: number, quota: number}} */ (domError("QuotaExceededError", message));
  Object.defineProperties(e, { requested: { value: requested }, quota: { value: quota } });
  return e;
}

/**
 * The language tags as ECMA-402 canonicalizes them, duplicates dropped; a RangeError for an
 * invalid tag, a TypeError for something that is not a list of strings.
 * @param {unknown} languages @param {string} field
 * @returns {string[]}
 */
function canonicalLanguages(languages, field) {
  if (!Array.isArray(languages) || !languages.every((l) => typeof l === "string")) {
    throw new TypeError(`${field} must be a list of language tags`);
  }
  return [...new Set(Intl.getCanonicalLocales(languages))];
}

/**
 * `expectedInputs` / `expectedOutputs` checked and canonicalized.
 * @param {unknown} list @param {string} field
 * @returns {Expected[]}
 */
function expectedList(list, field) {
  if (list === undefined) return [];
  if (!Array.isArray(list)) throw new TypeError(`${field} must be a list`);
  return list.map((e, i) => {
    if (!e || typeof e !== "object" || !CONTENT_TYPES.includes(e.type)) {
      throw new TypeError(`${field}[${i}].type must be one of ${CONTENT_TYPES.join(", ")}`);
    }
    return e.languages === undefined ? { type: e.type }
      : { type: e.type, languages: canonicalLanguages(e.languages, `${field}[${i}].languages`) };
  });
}

/**
 * The options `availability()` and `create()` share, checked: what the model is expected to read
 * and write, and its sampling (a `samplingMode`, or the raw `temperature` and `topK`, not both;
 * what is not chosen is the model's default).
 * @param {any} options
 * @returns {{expectedInputs: Expected[], expectedOutputs: Expected[], samplingMode: SamplingMode|null,
 *            sampling: ChosenSampling}}
 */
export function coreOptions(options) {
  if (options === undefined || options === null) options = {};
  if (typeof options !== "object") throw new TypeError("the options must be an object");
  const expectedInputs = expectedList(options.expectedInputs, "expectedInputs");
  const expectedOutputs = expectedList(options.expectedOutputs, "expectedOutputs");
  const mode = options.samplingMode;
  if (mode !== undefined && !Object.hasOwn(SAMPLING_MODES, mode)) {
    throw new TypeError(`samplingMode must be one of ${Object.keys(SAMPLING_MODES).join(", ")}`);
  }
  const raw = options.temperature !== undefined || options.topK !== undefined;
  if (mode !== undefined && raw) throw new TypeError("give samplingMode or temperature and topK, not both");
  /** @type {ChosenSampling} */
  const sampling = mode === undefined ? {} : { ...SAMPLING_MODES[/** @type {SamplingMode} */ (mode)] };
  if (options.temperature !== undefined) sampling.temperature = temperature(options.temperature);
  if (options.topK !== undefined) sampling.topK = topK(options.topK);
  return { expectedInputs, expectedOutputs, samplingMode: mode ?? null, sampling };
}

/** @param {unknown} t */
function temperature(t) {
  if (typeof t !== "number" || Number.isNaN(t)) throw new TypeError("temperature must be a number");
  if (t < 0) throw new RangeError("temperature must be 0 or more");
  return Math.min(t, MAX_TEMPERATURE);
}

/** @param {unknown} k */
function topK(k) {
  if (typeof k !== "number" || Number.isNaN(k)) throw new TypeError("topK must be a number");
  if (k < 1) throw new RangeError("topK must be 1 or more");
  return Math.min(Math.floor(k), MAX_TOP_K);
}

/**
 * A prompt (a string, or a list of messages whose content is a string or a list of parts) as a
 * list of text messages, as the spec's "validate and canonicalize a prompt" does. `appended`:
 * the session already holds input (a system message is then refused).
 * @param {unknown} input @param {boolean} appended
 * @returns {TextMessage[]}
 */
export function canonicalPrompt(input, appended) {
  if (typeof input === "string") return [{ role: "user", content: input, prefix: false }];
  if (!Array.isArray(input)) throw new TypeError("a prompt is a string or a list of messages");
  if (!input.length) return [{ role: "user", content: "", prefix: false }];
  return input.map((m, i) => {
    if (!m || typeof m !== "object" || !ROLES.includes(m.role)) {
      throw new TypeError(`message ${i}: role must be one of ${ROLES.join(", ")}`);
    }
    const prefix = m.prefix === undefined ? false : Boolean(m.prefix);
    if (prefix && (m.role !== "assistant" || i !== input.length - 1)) {
      throw domError("SyntaxError", "only the last message, from the assistant, may be a prefix");
    }
    if (m.role === "system" && (appended || i > 0)) {
      throw new TypeError("a system message may only come first, before any other input of the session");
    }
    return { role: m.role, content: textOf(m.content, m.role, i), prefix };
  });
}

/**
 * A message's content as one text (contiguous text parts are joined, as the spec collapses them).
 * @param {unknown} content @param {Role} role @param {number} i
 */
function textOf(content, role, i) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) throw new TypeError(`message ${i}: content must be a string or a list of parts`);
  let text = "";
  for (const part of content) {
    if (!part || typeof part !== "object" || !CONTENT_TYPES.includes(part.type)) {
      throw new TypeError(`message ${i}: each part needs a type (${CONTENT_TYPES.join(", ")}) and a value`);
    }
    if (part.type !== "text") {
      throw domError("NotSupportedError", `message ${i}: ${role === "assistant" ? "assistant messages hold text only"
        : `this model reads text only, not ${part.type}`}`);
    }
    if (typeof part.value !== "string") throw new TypeError(`message ${i}: a text part's value must be a string`);
    text += part.value;
  }
  return text;
}

/**
 * `responseConstraint` as the engine's `response_format`, and the words that tell the model about
 * it (added to the prompt unless `omitResponseConstraintInput`). A RegExp becomes a `regex`
 * constraint (whole-match; flags that change matching cannot be honored), an object a JSON Schema.
 * @param {unknown} constraint
 * @returns {Constraint}
 */
export function responseConstraint(constraint) {
  if (constraint instanceof RegExp) {
    const unsupported = constraint.flags.replace(/[gyd]/g, "");
    if (unsupported) {
      throw domError("NotSupportedError", `a response constraint's RegExp flags "${unsupported}" cannot be honored`);
    }
    const pattern = constraint.source.replace(/^\^/, "").replace(/(?<!\\)\$$/, "");
    return { format: { type: "regex", pattern },
      guidance: `Answer with text that matches the regular expression /${pattern}/ and nothing else.` };
  }
  if (!constraint || typeof constraint !== "object" || Array.isArray(constraint)) {
    throw new TypeError("responseConstraint must be a JSON Schema object or a RegExp");
  }
  let text;
  try {
    text = JSON.stringify(constraint);
  } catch {
    throw new TypeError("responseConstraint must be a JSON Schema object (JSON-serializable)");
  }
  return { format: { type: "json_schema", json_schema: { name: "response", schema: JSON.parse(text) } },
    guidance: `Answer with JSON that follows this JSON Schema, and nothing else: ${text}` };
}

/**
 * The messages of a prompt with the constraint's guidance added to its last user message (or as
 * a user message of its own when it has none).
 * @param {TextMessage[]} messages @param {string} guidance
 * @returns {TextMessage[]}
 */
export function withGuidance(messages, guidance) {
  const out = messages.map((m) => ({ ...m }));
  const users = out.filter((m) => m.role === "user");
  const last = users[users.length - 1];
  if (last) {
    last.content = `${last.content}\n\n${guidance}`;
    return out;
  }
  const prefix = out.findIndex((m) => m.prefix);
  out.splice(prefix < 0 ? out.length : prefix, 0, { role: "user", content: guidance, prefix: false });
  return out;
}

/**
 * Whether `wanted` languages are among `supported` (matched on the primary subtag: "en-GB" is "en").
 * @param {string[]} wanted @param {string[]} supported
 */
export function languagesSupported(wanted, supported) {
  const primary = (/** @type {string} */ tag) => tag.toLowerCase().split("-")[0];
  const have = new Set(supported.map(primary));
  return wanted.every((tag) => have.has(primary(tag)));
}

/**
 * Why the model cannot honor these options (null: it can): it reads text (and tool results) and
 * writes text (and tool calls), in `languages`.
 * @param {ReturnType<typeof coreOptions>} core @param {string[]} languages
 * @returns {string|null}
 */
export function refusal(core, languages) {
  for (const [list, what, tool] of /** @type {const} */ ([[core.expectedInputs, "reads", "tool-response"],
    [core.expectedOutputs, "writes", "tool-call"]])) {
    for (const e of list) {
      if (e.type !== "text" && e.type !== tool) return `the model ${what} text and ${tool}s only, not ${e.type}`;
      if (e.languages && !languagesSupported(e.languages, languages)) {
        return `the model ${what} ${languages.join(", ")}, not all of ${e.languages.join(", ")}`;
      }
    }
  }
  return null;
}
