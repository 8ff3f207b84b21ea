// The chat: the open conversation's shown path, the prompt box with Send, Stop and New chat, and
// the footer's speed. A conversation is a message tree (web/conversations/tree.js): an edited
// question or a regenerated reply is an alternative beside the old one, and what is shown is what
// the next request sends, so a follow-up resends the same prefix and the engine's prefix cache
// keeps it fast. Replies stream into a live message; tool calls the model makes are run on the
// page and their results sent back, a few rounds at most. Model output is only ever set as text.
// When MCP servers are connected (the Skills panel's Tools part), a turn goes through the Responses
// API with each server as an `mcp` tool: the engine calls them between the model's replies, and the
// reply shows each call where it happened (app/panels/chat_responses.js, mcp_calls.js).

import { requestFields } from "../conversations/knobs.js";
import { ROOT, addNode, children, choose, newConversation, requestMessages, shownPath } from "../conversations/tree.js";
import { runTool } from "../demo_tools.js";
import { liveMessage, renderMessage } from "./chat_message.js";
import { streamChoices } from "./chat_reply.js";
import { responseRequest, settingsNotSent, streamResponse } from "./chat_responses.js";
import { counted, find } from "./dom.js";

/**
 * @typedef {import("csi-web").WebWorkerEngine} WebWorkerEngine
 * @typedef {import("../conversations/tree.js").Conversation} Conversation
 * @typedef {import("../conversations/tree.js").Node} Node
 * @typedef {import("../conversations/knobs.js").Settings} Settings
 * @typedef {import("./reply_format.js").FormatState} FormatState
 * @typedef {object} ChatOptions
 * @property {import("../conversations/library.js").Library} library where conversations are kept
 * @property {Settings} overrides the URL's settings, over every conversation's own
 * @property {Settings} defaults a first conversation's settings
 * @property {{set: (s: Settings, system: string) => void, markError: (param: string|null) => void}} settings the settings drawer
 * @property {{set: (s: FormatState) => void, state: () => FormatState, request: () => import("./reply_format.js").RequestExtras}} replyFormat
 * @property {(busy: boolean) => void} onBusy a reply starts or ends
 * @property {() => void} onChange the conversations changed (the sidebar redraws)
 */

const MAX_TOOL_ROUNDS = 3;

/**
 * Mount the chat on a root that holds the messages, the chat form and the stats line.
 * @param {ParentNode} root @param {ChatOptions} options
 */
export function mountChat(root, options) {
  const { library } = options;
  const ui = {
    messages: find(root, "#messages", HTMLElement),
    form: find(root, "#chat-form", HTMLFormElement),
    prompt: find(root, "#prompt", HTMLTextAreaElement),
    send: find(root, "#send", HTMLButtonElement),
    stop: find(root, "#stop", HTMLButtonElement),
    clear: find(root, "#clear", HTMLButtonElement),
    stats: find(root, "#stats", HTMLElement),
    offer: find(root, "#mcp-offer", HTMLElement),
    offerText: find(root, "#mcp-offer-text", HTMLElement),
    offerNote: find(root, "#mcp-offer-note", HTMLElement),
    mcpUse: find(root, "#mcp-use", HTMLSelectElement),
  };
  /** @type {WebWorkerEngine|null} */
  let engine = null;
  let generating = false;
  let loading = false;
  /** The MCP servers connected (their tools are offered in the chat). @type {import("./chat_responses.js").OfferedServer[]} */
  let servers = [];
  /** Ends the Responses API turn under way (Stop). @type {AbortController|null} */
  let aborter = null;
  /** @type {Conversation} */
  let conv = newConversation({ ...options.defaults, ...options.overrides }, options.replyFormat.state());

  const busy = () => generating || loading;
  const updateControls = () => {
    ui.send.disabled = busy() || !engine;
    ui.prompt.disabled = !engine;
    ui.stop.disabled = !busy(); // Stop also interrupts a load
    for (const b of ui.messages.querySelectorAll(".actions button, .edit-form button")) {
      /** @type {HTMLButtonElement} */ (b).disabled = generating || !engine;
    }
  };

  /** @param {boolean} on */
  function setGenerating(on) {
    generating = on;
    updateControls();
    options.onBusy(on);
  }

  /** The servers whose tools a turn of `c` offers (none: the turn is a chat completion). @param {Conversation} c */
  const offered = (c) => (c.format.mcp === "off" || ["grammar", "regex"].includes(c.format.format) ? [] : servers);

  /** Show which servers' tools the open conversation offers, and what a turn with them leaves out. */
  function showOffer() {
    ui.offer.hidden = !servers.length;
    const use = conv.format.mcp ?? "auto";
    ui.offer.dataset.use = use;
    ui.mcpUse.value = use;
    const tools = servers.flatMap((s) => s.tools);
    ui.offerText.textContent = `Offered to the model: ${counted(tools.length, "tool")} of ${counted(servers.length, "MCP server")} (${tools.join(", ")})`;
    const notes = [];
    if (use !== "off" && ["grammar", "regex"].includes(conv.format.format)) notes.push("not with a grammar or regex reply format");
    else if (use !== "off") {
      const unsent = settingsNotSent(conv.settings);
      if (unsent.length) notes.push(`not applied with server tools: ${unsent.join(", ")}`);
    }
    ui.offerNote.textContent = notes.join("; ");
  }

  const scroll = () => { ui.messages.scrollTop = ui.messages.scrollHeight; };

  /** @type {import("./chat_message.js").MessageActions} */
  const actions = {
    choose(node) {
      choose(conv, node);
      render();
      persist(conv);
    },
    regenerate(node) {
      const parent = conv.messages.find((m) => m.id === node.parent);
      if (parent && engine && !generating) turn(engine, conv, parent);
    },
    edit(node, text) {
      if (!engine || generating) return;
      const user = addNode(conv, { parent: node.parent, role: "user", content: text });
      render();
      persist(conv);
      turn(engine, conv, user);
    },
  };

  function render() {
    const tokenView = Boolean(conv.settings.token_view);
    ui.messages.replaceChildren(...shownPath(conv).map((n) => renderMessage(n, children(conv, n.parent ?? ROOT), { tokenView, actions })));
    showOffer();
    updateControls();
    scroll();
  }

  let saving = 0;
  /**
   * Save `c` once it holds something, and remember it as the open one. `#messages[data-saving]`
   * is there while a save is under way (a reload then would lose it).
   * @param {Conversation} c
   */
  async function persist(c) {
    if (!c.messages.length && !library.get(c.id)) return;
    ui.messages.dataset.saving = String(++saving);
    try {
      await library.save(c);
      if (c === conv) await library.setOpen(c.id);
    } finally {
      if (--saving === 0) delete ui.messages.dataset.saving;
    }
    options.onChange();
  }

  /** Show a conversation (its settings with the URL's over them). @param {Conversation} c */
  function show(c) {
    conv = c;
    conv.settings = { ...conv.settings, ...options.overrides };
    options.settings.set(conv.settings, conv.system);
    options.replyFormat.set(conv.format);
    ui.stats.textContent = "";
    render();
    options.onChange();
  }

  /**
   * Ask for the replies to the path ending at `at` (a question, or a tool's result) and add them
   * under it; tool calls are run and answered, a few rounds at most. A failure is kept as an
   * error message under `at`, naming the field to blame.
   * @param {WebWorkerEngine} engine @param {Conversation} c @param {Node} at
   */
  async function turn(engine, c, at) {
    setGenerating(true);
    ui.stats.textContent = "";
    /** @type {ReturnType<typeof liveMessage>|null} */
    let live = null;
    try {
      let extras = options.replyFormat.request();
      for (let round = 0; round < MAX_TOOL_ROUNDS; round++) {
        // after a tool's result the model answers in words
        if (at.role === "tool" && extras.tools) extras = { ...extras, tool_choice: "none" };
        const view = liveMessage();
        live = view;
        if (c === conv) ui.messages.append(view.div);
        scroll();
        const { choices, stats } = await ask(engine, c, at, extras, view);
        const nodes = choices.map((ch) => addNode(c, {
          parent: at.id, role: "assistant", content: ch.tool_calls.length && !ch.content.trim() && !ch.mcp_calls?.length ? null : ch.content,
          finish: ch.finish, ...(ch.tool_calls.length ? { tool_calls: ch.tool_calls } : {}),
          ...(ch.mcp_calls?.length ? { mcp_calls: ch.mcp_calls } : {}),
          ...(stats ? { stats } : {}), ...(ch.logprobs.length ? { logprobs: ch.logprobs } : {}),
        }));
        live = null;
        if (!nodes.length) break;
        choose(c, nodes[0]);
        if (stats && c === conv) ui.stats.textContent = `${stats.tokens_per_s.toFixed(1)} tokens/s`;
        const first = nodes[0];
        if (first.finish === "tool_calls") {
          at = first;
          for (const call of first.tool_calls ?? []) {
            at = addNode(c, { parent: at.id, role: "tool", content: runTool(call.function.name, call.function.arguments),
              tool_call_id: call.id, tool_name: call.function.name });
          }
        }
        if (c === conv) render();
        await persist(c);
        if (first.finish !== "tool_calls") break;
      }
    } catch (/** @type {any} */ err) {
      live?.div.remove();
      addNode(c, { parent: at.id, role: "assistant", content: null, finish: null,
        error: { name: String(err?.name ?? "Error"), message: String(err?.message ?? err), param: err?.param ?? null } });
      if (c === conv) {
        options.settings.markError(err?.param ?? null);
        render();
      }
      await persist(c);
    } finally {
      aborter = null;
      setGenerating(false);
      ui.prompt.focus();
    }
  }

  /**
   * One request's replies: a chat completion, or (servers connected) a response whose MCP calls
   * the engine makes; `view` shows the first reply as it streams.
   * @param {WebWorkerEngine} engine @param {Conversation} c @param {Node} at
   * @param {import("./reply_format.js").RequestExtras} extras @param {ReturnType<typeof liveMessage>} view
   * @returns {Promise<{choices: Array<import("./chat_reply.js").ChoiceResult & {mcp_calls?: import("./chat_responses.js").Reply["mcp_calls"]}>, stats: import("../conversations/tree.js").Stats|null}>}
   */
  async function ask(engine, c, at, extras, view) {
    const tools = offered(c);
    if (!tools.length) {
      const request = { messages: requestMessages(c, at), ...requestFields(c.settings), ...extras };
      return streamChoices(engine, request, (choice) => { view.show(choice); scroll(); });
    }
    aborter = new AbortController();
    const request = responseRequest(c, at, tools, { choice: c.format.mcp ?? "auto", demoTools: Boolean(extras.tools),
      demoChoice: c.format.toolChoice, format: extras.response_format });
    const signal = aborter.signal;
    try {
      const { reply, stats } = await streamResponse(engine, request, { signal, stop: c.settings.stop ?? [],
        onUpdate: (r) => { view.showSteps(r); scroll(); } });
      return { choices: [reply], stats };
    } catch (err) {
      // stopped before the response began: an empty reply, stopped (as a chat completion's)
      if (!signal.aborted) throw err;
      return { choices: [{ content: "", mcp_calls: [], tool_calls: [], finish: "abort", logprobs: [] }], stats: null };
    }
  }

  /** @param {WebWorkerEngine} engine @param {string} text */
  function send(engine, text) {
    const path = shownPath(conv);
    let parent = path.at(-1) ?? null;
    if (parent?.error) {
      // the failed turn is not continued: the new question is an alternative to the failed one
      const failed = path.slice(0, path.indexOf(parent)).reverse().find((n) => n.role === "user");
      parent = failed ? path.find((n) => n.id === failed.parent) ?? null : null;
    }
    const user = addNode(conv, { parent: parent?.id ?? null, role: "user", content: text });
    render();
    persist(conv);
    turn(engine, conv, user);
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
  ui.stop.addEventListener("click", () => {
    aborter?.abort();
    engine?.interruptGenerate();
  });
  ui.mcpUse.addEventListener("change", () => {
    conv.format = { ...conv.format, mcp: ui.mcpUse.value };
    showOffer();
    persist(conv);
  });

  const chat = {
    /** The open conversation's id. */
    openId: () => conv.id,
    /** Open a kept conversation (a new one when it is gone). @param {string|null} id */
    open(id) {
      const c = id ? library.get(id) : null;
      if (!c) return chat.newChat();
      show(c);
      library.setOpen(c.id);
    },
    /** Start a new conversation with the open one's settings and format. */
    newChat() {
      show(newConversation(conv.settings, options.replyFormat.state()));
      ui.prompt.focus();
    },
    /** The open conversation was renamed or deleted elsewhere. @param {Conversation} c @param {boolean} gone */
    changed(c, gone) {
      if (gone && c.id === conv.id) {
        const next = library.list()[0];
        if (next) show(next);
        else chat.newChat();
      } else if (!gone) persist(c);
    },
    /** The settings drawer changed. @param {Settings} s @param {string} system */
    setSettings(s, system) {
      const viewChanged = Boolean(s.token_view) !== Boolean(conv.settings.token_view);
      conv.settings = s;
      conv.system = system;
      showOffer();
      if (viewChanged) render();
      persist(conv);
    },
    /** The format drawer changed. @param {FormatState} f */
    setFormat(f) {
      conv.format = { ...f, ...(conv.format.mcp ? { mcp: conv.format.mcp } : {}) };
      showOffer();
      persist(conv);
    },
    /** The engine to chat with (`null` until the first load made one). @param {WebWorkerEngine|null} e */
    setEngine(e) {
      engine = e;
      updateControls();
    },
    /** The MCP servers connected now. @param {import("./chat_responses.js").OfferedServer[]} list */
    setServers(list) {
      servers = list;
      showOffer();
    },
    /** A model is loading: no sending meanwhile. @param {boolean} on */
    setLoading(on) {
      loading = on;
      updateControls();
    },
  };
  ui.clear.addEventListener("click", () => chat.newChat());
  return chat;
}
