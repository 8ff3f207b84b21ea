// The skill studio's MCP servers: a person adds a server's URL (and, if it needs one, an
// Authorization header), sees the tools it lists, and disconnects it. The servers are connected in
// the studio's namespace, so the skills it runs call their tools (`csi.invoke_tool`). Everything a
// server says (names, descriptions, schemas, errors) is set only as text. The chat offers the
// connected servers' tools to the model (`onChange` tells it which servers there are).

import { counted, el, find } from "./dom.js";

/**
 * @typedef {import("csi-web").WebWorkerEngine} WebWorkerEngine
 * @typedef {{namespace: string, url: string, label: string,
 *   tools: {name: string, description?: string|null, input_schema: Record<string, unknown>}[]}} ToolServer
 */

/** The namespace the studio runs its skills in, and connects its servers in. */
export const STUDIO_NAMESPACE = "playground";

/**
 * Mount on the studio's #mcp-tools part.
 * @param {HTMLElement} root
 * @param {{onChange?: (servers: import("./chat_responses.js").OfferedServer[]) => void}} [options]
 */
export function mountToolServers(root, options = {}) {
  const ui = {
    form: find(root, "#mcp-form", HTMLFormElement),
    url: find(root, "#mcp-url", HTMLInputElement),
    auth: find(root, "#mcp-auth", HTMLInputElement),
    connect: find(root, "#mcp-connect", HTMLButtonElement),
    status: find(root, "#mcp-status", HTMLElement),
    servers: find(root, "#mcp-servers", HTMLElement),
  };
  /** @type {WebWorkerEngine|null} */
  let engine = null;
  let busy = false;
  /** The headers each server was connected with (they are sent again when the chat offers its tools). @type {Map<string, Record<string, string>>} */
  const headers = new Map();

  const update = () => {
    ui.connect.disabled = !engine || busy;
    for (const b of ui.servers.querySelectorAll("button")) b.disabled = !engine || busy;
  };

  /** @param {string} text @param {"ok"|"error"|"busy"|""} [state] */
  function setStatus(text, state = "") {
    ui.status.textContent = text;
    ui.status.dataset.state = state;
  }

  /** @param {ToolServer} server */
  function serverItem(server) {
    const item = el("li", "mcp-server");
    item.dataset.url = server.url;
    const head = el("div", "mcp-server-head");
    const off = el("button", "", "Disconnect");
    off.type = "button";
    off.addEventListener("click", () => void disconnect(server.url));
    head.append(el("code", "", server.url), el("span", "hint", counted(server.tools.length, "tool")), off);
    const tools = el("ul", "mcp-tools");
    tools.setAttribute("aria-label", `Tools of ${server.url}`);
    for (const tool of server.tools) {
      const details = el("details", "mcp-tool");
      const summary = el("summary");
      summary.append(el("code", "", tool.name), el("span", "hint", tool.description ? ` ${tool.description}` : ""));
      const schema = el("pre", "", JSON.stringify(tool.input_schema, null, 2));
      schema.tabIndex = 0; // it may scroll: the keyboard reaches it
      schema.setAttribute("aria-label", `Input schema of ${tool.name}`);
      details.append(summary, schema);
      const li = el("li");
      li.dataset.tool = tool.name;
      li.append(details);
      tools.append(li);
    }
    item.append(head, tools);
    return item;
  }

  async function refresh() {
    if (!engine) {
      ui.servers.replaceChildren();
      options.onChange?.([]);
      return;
    }
    /** @type {ToolServer[]} */
    const all = (await engine.tools.servers()).filter((/** @type {ToolServer} */ s) => s.namespace === STUDIO_NAMESPACE);
    ui.servers.replaceChildren(...all.map(serverItem));
    options.onChange?.(all.map((s) => ({ url: s.url, label: s.label, tools: s.tools.map((t) => t.name),
      ...(headers.has(s.url) ? { headers: headers.get(s.url) } : {}) })));
    update();
  }

  /** @param {() => Promise<string>} work what to do; it says how it went */
  async function act(work) {
    if (!engine || busy) return;
    busy = true;
    update();
    try {
      setStatus(await work(), "ok");
    } catch (e) {
      const err = /** @type {{name?: string, message?: string}} */ (e ?? {});
      setStatus(`${err.name}: ${err.message}`, "error");
    } finally {
      busy = false;
      await refresh().catch(() => {});
      update();
    }
  }

  const connect = () => act(async () => {
    const url = ui.url.value.trim();
    const auth = ui.auth.value.trim();
    setStatus(`Connecting ${url}…`, "busy");
    const server = await /** @type {WebWorkerEngine} */ (engine).tools.connect({
      namespace: STUDIO_NAMESPACE, url, label: url, ...(auth ? { headers: { Authorization: auth } } : {}) });
    if (auth) headers.set(server.url, { Authorization: auth });
    else headers.delete(server.url);
    return `Connected ${server.url}: ${counted(server.tools.length, "tool")}.`;
  });

  /** @param {string} url */
  const disconnect = (url) => act(async () => {
    await /** @type {WebWorkerEngine} */ (engine).tools.disconnect({ namespace: STUDIO_NAMESPACE, url });
    return `Disconnected ${url}.`;
  });

  ui.form.addEventListener("submit", (e) => { e.preventDefault(); void connect(); });
  update();

  return {
    /** The engine the servers are connected on (a new one has none). @param {WebWorkerEngine|null} next */
    setEngine(next) {
      if (next === engine) return;
      engine = next;
      setStatus("");
      void refresh().catch(() => {});
      update();
    },
  };
}
