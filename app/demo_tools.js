// The playground's tools demo: three small functions the page runs when the model calls them.
// The model's arguments are valid against each schema by construction (the engine constrains
// them with a grammar); they are still treated as untrusted data.

/** @typedef {import("csi-web").ChatCompletionTool} ToolSpec */

/** @type {ToolSpec[]} */
export const TOOLS = [
  {
    type: "function",
    function: {
      name: "get_time",
      description: "The current date and time in a time zone",
      parameters: {
        type: "object",
        properties: { timezone: { type: "string", description: "an IANA time zone, e.g. Europe/Berlin", maxLength: 40 } },
        required: ["timezone"],
        additionalProperties: false,
      },
    },
  },
  {
    type: "function",
    function: {
      name: "add",
      description: "The sum of two integers",
      parameters: {
        type: "object",
        properties: { a: { type: "integer" }, b: { type: "integer" } },
        required: ["a", "b"],
        additionalProperties: false,
      },
    },
  },
  {
    type: "function",
    function: {
      name: "word_count",
      description: "How many words a text has",
      parameters: {
        type: "object",
        properties: { text: { type: "string", maxLength: 2000 } },
        required: ["text"],
        additionalProperties: false,
      },
    },
  },
];

/** @type {Record<string, (args: any) => unknown>} */
const IMPLEMENTATIONS = {
  get_time: ({ timezone }) => {
    try {
      return { timezone, now: new Date().toLocaleString("en-GB", { timeZone: timezone }) };
    } catch {
      return { error: `unknown time zone ${JSON.stringify(timezone)}` };
    }
  },
  add: ({ a, b }) => ({ sum: a + b }),
  word_count: ({ text }) => ({ words: String(text).split(/\s+/).filter(Boolean).length }),
};

/**
 * Run one call; the result (or the error) as JSON text for a `tool` message.
 * @param {string} name @param {string} argumentsJson
 */
export function runTool(name, argumentsJson) {
  const fn = IMPLEMENTATIONS[name];
  if (!fn) return JSON.stringify({ error: `no tool named ${JSON.stringify(name)}` });
  try {
    return JSON.stringify(fn(JSON.parse(argumentsJson)));
  } catch (err) {
    return JSON.stringify({ error: String(/** @type {any} */ (err)?.message ?? err) });
  }
}

/**
 * The same tools for `engine.tools.register`: skills call them through the CSI
 * (`csi.list_tools()`, `csi.invoke_tool(...)`, `chat_stream(..., tools=[...])`).
 * @type {Array<{spec: {name: string, description: string, input_schema: Record<string, unknown>}, fn: (args: any) => unknown}>}
 */
export const PAGE_TOOLS = TOOLS.map(({ function: f }) => ({
  spec: { name: f.name, description: f.description ?? "", input_schema: /** @type {Record<string, unknown>} */ (f.parameters ?? {}) },
  fn: (/** @type {any} */ args) => IMPLEMENTATIONS[f.name](args),
}));
