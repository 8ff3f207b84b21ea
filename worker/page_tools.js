// @ts-check
// The worker's side of the page's tools (engine.tools on the page): Python asks for a call
// (csi.backends.pyodide.page_tools), this posts it to the page as `tool_call` and keeps its promise
// until the page's `tool_result` settles it. A skill waiting on a tool is suspended (JS promise
// integration), so the page's answer is read here, in JS, whatever Python is doing.

/**
 * @typedef {import("./protocol.js").ToolResultMessage} ToolResultMessage
 * @typedef {{resolve: (json: string) => void, reject: (err: Error) => void}} PendingToolCall
 */

/** The calls of page tools in flight, by call id (Python numbers them). */
export class PageTools {
  /** @param {(text: string) => void} post posts JSON text to the page */
  constructor(post) {
    this.post = post;
    /** @type {Map<number, PendingToolCall>} */
    this.pending = new Map();
  }

  /**
   * Ask the page to run tool `name`.
   * @param {number} call @param {string} name @param {string} argumentsJson a JSON object
   * @returns {Promise<string>} the JSON text of the tool's result; rejects with the tool's error message
   */
  call(call, name, argumentsJson) {
    return new Promise((resolve, reject) => {
      this.pending.set(call, { resolve, reject });
      this.post(`{"type":"tool_call","call":${call},"name":${JSON.stringify(name)},"arguments":${argumentsJson}}`);
    });
  }

  /** Python stopped waiting for `call` (its skill was cancelled): tell the page. @param {number} call */
  cancel(call) {
    if (this.pending.delete(call)) this.post(JSON.stringify({ type: "tool_cancel", call }));
  }

  /**
   * The page's answer to a call; answers to calls not pending (cancelled, or never made) are dropped.
   * @param {ToolResultMessage} msg
   */
  settle(msg) {
    const p = typeof msg.call === "number" ? this.pending.get(msg.call) : undefined;
    if (!p) return;
    this.pending.delete(msg.call);
    if (msg.error !== undefined && msg.error !== null) {
      p.reject(new Error(String(msg.error?.message ?? msg.error)));
      return;
    }
    let json;
    try {
      json = JSON.stringify(msg.result ?? null);
    } catch (/** @type {any} */ err) {
      p.reject(new Error(`the tool's result is not JSON: ${err?.message ?? err}`));
      return;
    }
    p.resolve(json);
  }
}
