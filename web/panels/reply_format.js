// The "Output format and tools" panel: what a chat request asks for besides its messages, a reply
// format (free text, any JSON object, or JSON matching a schema) and the demo tools.

import { TOOLS } from "../demo_tools.js";
import { find } from "./dom.js";

/** @typedef {Partial<import("../engine.js").ChatCompletionRequest>} RequestExtras */

/**
 * Mount the panel on its root (`#structure`).
 * @param {ParentNode} root
 * @returns {{request: () => RequestExtras}}
 */
export function mountReplyFormat(root) {
  const ui = {
    format: find(root, "#format", HTMLSelectElement),
    schema: find(root, "#schema", HTMLTextAreaElement),
    toolsOn: find(root, "#tools-on", HTMLInputElement),
    toolChoice: find(root, "#tool-choice", HTMLSelectElement),
    toolsHint: find(root, "#tools-hint", HTMLElement),
  };

  ui.format.addEventListener("change", () => {
    ui.schema.hidden = ui.format.value !== "schema";
  });
  ui.toolsOn.addEventListener("change", () => {
    ui.toolChoice.disabled = !ui.toolsOn.checked;
    ui.toolsHint.hidden = !ui.toolsOn.checked;
  });

  return {
    /** What the panel asks of a request; throws a `SyntaxError` when the schema box holds no JSON. */
    request() {
      /** @type {RequestExtras} */
      const out = {};
      if (ui.format.value === "json") out.response_format = { type: "json_object" };
      if (ui.format.value === "schema") {
        out.response_format = { type: "json_schema", json_schema: { name: "reply", schema: JSON.parse(ui.schema.value) } };
      }
      if (ui.toolsOn.checked) {
        out.tools = TOOLS;
        out.tool_choice = /** @type {import("../engine.js").ChatCompletionToolChoice} */ (ui.toolChoice.value);
      }
      return out;
    },
  };
}
