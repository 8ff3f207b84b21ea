// The "Output format and tools" drawer: what a chat request asks for besides its messages, a reply
// format (free text, any JSON object, JSON matching a schema, an EBNF grammar, a regex) and the demo
// tools. Its state belongs to the open conversation.

import { TOOLS } from "../demo_tools.js";
import { find } from "./dom.js";

/**
 * @typedef {Partial<import("csi-web").ChatCompletionRequest>} RequestExtras
 * @typedef {import("../conversations/tree.js").FormatState} FormatState
 */

/** @type {FormatState} */
export const DEFAULT_FORMAT = Object.freeze({ format: "off", schema: "", grammar: "", pattern: "", tools: false, toolChoice: "auto" });

/**
 * Mount the drawer on its root (`#structure`).
 * @param {ParentNode} root @param {{onChange: (state: FormatState) => void}} options
 */
export function mountReplyFormat(root, options) {
  const ui = {
    format: find(root, "#format", HTMLSelectElement),
    schema: find(root, "#schema", HTMLTextAreaElement),
    grammar: find(root, "#grammar", HTMLTextAreaElement),
    pattern: find(root, "#pattern", HTMLInputElement),
    toolsOn: find(root, "#tools-on", HTMLInputElement),
    toolChoice: find(root, "#tool-choice", HTMLSelectElement),
    toolsHint: find(root, "#tools-hint", HTMLElement),
  };
  const exampleSchema = ui.schema.value;

  function sync() {
    ui.schema.hidden = ui.format.value !== "schema";
    ui.grammar.hidden = ui.format.value !== "grammar";
    ui.pattern.hidden = ui.format.value !== "regex";
    ui.toolChoice.disabled = !ui.toolsOn.checked;
    ui.toolsHint.hidden = !ui.toolsOn.checked;
  }

  /** @returns {FormatState} */
  function state() {
    return { format: ui.format.value, schema: ui.schema.value, grammar: ui.grammar.value, pattern: ui.pattern.value,
      tools: ui.toolsOn.checked, toolChoice: ui.toolChoice.value };
  }

  for (const input of [ui.format, ui.schema, ui.grammar, ui.pattern, ui.toolsOn, ui.toolChoice]) {
    input.addEventListener("change", () => {
      sync();
      options.onChange(state());
    });
  }
  sync();

  return {
    state,
    /** Show a conversation's format. @param {FormatState} s */
    set(s) {
      ui.format.value = s.format;
      ui.schema.value = s.schema || exampleSchema;
      ui.grammar.value = s.grammar;
      ui.pattern.value = s.pattern;
      ui.toolsOn.checked = s.tools;
      ui.toolChoice.value = s.toolChoice;
      sync();
    },
    /** What the drawer asks of a request; throws a `SyntaxError` when the schema box holds no JSON. */
    request() {
      /** @type {RequestExtras} */
      const out = {};
      const f = ui.format.value;
      if (f === "json") out.response_format = { type: "json_object" };
      if (f === "schema") {
        out.response_format = { type: "json_schema", json_schema: { name: "reply", schema: JSON.parse(ui.schema.value) } };
      }
      if (f === "grammar") out.response_format = { type: "grammar", grammar: ui.grammar.value };
      if (f === "regex") out.response_format = { type: "regex", pattern: ui.pattern.value };
      if (ui.toolsOn.checked) {
        out.tools = TOOLS;
        out.tool_choice = /** @type {import("csi-web").ChatCompletionToolChoice} */ (ui.toolChoice.value);
      }
      return out;
    },
  };
}
