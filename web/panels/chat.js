// The chat: the conversation, the prompt box with Send, Stop and New chat, and the footer's speed.
// Replies stream into their message as they come; tool calls the model makes are run on the page
// and their results sent back, a few rounds at most. Model output is only ever set as text.

import { runTool } from "../demo_tools.js";
import { find } from "./dom.js";
import { streamReply } from "./chat_reply.js";

/**
 * @typedef {import("../engine.js").WebWorkerEngine} WebWorkerEngine
 * @typedef {import("../engine.js").ChatCompletionMessageParam} ChatCompletionMessageParam
 * @typedef {import("./reply_format.js").RequestExtras} RequestExtras
 * @typedef {{temperature: number, top_p: number, max_tokens: number, ignore_eos?: boolean}} GenerationSettings
 * @typedef {object} ChatOptions
 * @property {GenerationSettings} settings sent with every request
 * @property {() => RequestExtras} request what else each turn asks for (reply format, tools)
 * @property {(busy: boolean) => void} onBusy a reply starts or ends
 */

const MAX_TOOL_ROUNDS = 3;

/**
 * Mount the chat on a root that holds the messages, the chat form and the stats line.
 * @param {ParentNode} root @param {ChatOptions} options
 */
export function mountChat(root, options) {
  const ui = {
    messages: find(root, "#messages", HTMLElement),
    form: find(root, "#chat-form", HTMLFormElement),
    prompt: find(root, "#prompt", HTMLTextAreaElement),
    send: find(root, "#send", HTMLButtonElement),
    stop: find(root, "#stop", HTMLButtonElement),
    clear: find(root, "#clear", HTMLButtonElement),
    stats: find(root, "#stats", HTMLElement),
  };
  /** @type {WebWorkerEngine|null} */
  let engine = null;
  /** @type {ChatCompletionMessageParam[]} */
  let history = [];
  let generating = false;
  let loading = false;

  const busy = () => generating || loading;
  const updateControls = () => {
    ui.send.disabled = busy() || !engine;
    ui.prompt.disabled = !engine;
    ui.stop.disabled = !busy(); // Stop also interrupts a load
  };

  /** @param {boolean} on */
  function setGenerating(on) {
    generating = on;
    updateControls();
    options.onBusy(on);
  }

  /** @param {string} role @param {string} text */
  function addMessage(role, text) {
    const div = document.createElement("div");
    div.className = `message ${role}`;
    const body = document.createElement("span");
    body.className = "body";
    body.textContent = text;
    div.append(body);
    ui.messages.append(div);
    ui.messages.scrollTop = ui.messages.scrollHeight;
    return div;
  }

  /** Where replies stream to. @type {import("./chat_reply.js").ReplyView} */
  const view = {
    newMessage: () => addMessage("assistant", ""),
    showSpeed: (text) => { ui.stats.textContent = text; },
    scroll: () => { ui.messages.scrollTop = ui.messages.scrollHeight; },
  };

  /** @param {WebWorkerEngine} engine @param {string} text */
  async function send(engine, text) {
    history.push({ role: "user", content: text });
    addMessage("user", text);
    setGenerating(true);
    ui.stats.textContent = "";
    const before = history.length;
    try {
      let request = options.request();
      for (let round = 0; round < MAX_TOOL_ROUNDS; round++) {
        const reply = await streamReply(engine, view, {
          messages: history, stream: true, stream_options: { include_usage: true }, ...options.settings, ...request,
        });
        history.push(reply.message);
        if (reply.finish !== "tool_calls") break;
        for (const call of reply.message.tool_calls ?? []) {
          const result = runTool(call.function.name, call.function.arguments);
          history.push({ role: "tool", tool_call_id: call.id, content: result });
          addMessage("tool", `${call.function.name} → ${result}`);
        }
        // the results go back to the model, which now answers in words
        request = { ...request, tool_choice: "none" };
      }
    } catch (/** @type {any} */ err) {
      if (!err.shown) {
        const div = addMessage("assistant", "");
        div.classList.add("error");
        find(div, ".body", HTMLElement).textContent = `${err.name}: ${err.message}`;
        div.dataset.done = "true";
      }
      history.length = before - 1; // the turn failed: forget it, the question included
    } finally {
      setGenerating(false);
      ui.prompt.focus();
    }
  }

  ui.form.addEventListener("submit", (e) => {
    e.preventDefault();
    const text = ui.prompt.value.trim();
    if (!text || busy() || !engine) return;
    ui.prompt.value = "";
    send(engine, text);
  });
  ui.prompt.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) {
      e.preventDefault();
      ui.form.requestSubmit();
    }
  });
  ui.stop.addEventListener("click", () => engine?.interruptGenerate());
  ui.clear.addEventListener("click", () => {
    history = [];
    ui.messages.replaceChildren();
    engine?.resetChat();
  });

  return {
    /** The engine to chat with (`null` until the first load made one). @param {WebWorkerEngine|null} e */
    setEngine(e) {
      engine = e;
      updateControls();
    },
    /** A model is loading: no sending meanwhile. @param {boolean} on */
    setLoading(on) {
      loading = on;
      updateControls();
    },
  };
}
