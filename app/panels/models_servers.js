// The Models panel's Servers part: OpenAI-compatible servers (llama.cpp, vLLM, ...) and their models.
// A form adds one (base URL, API key, and per model its policy: always the server, or this browser
// with the server when the local load fails); the list shows them with a Remove button each. Every
// change goes to the engine first (`apply`): what it refuses is shown with the field it names and
// nothing changes; what it takes is kept in localStorage (servers_store.js).

import { el, find } from "./dom.js";
import { modelIdProblem, readServers, toRemotes, urlProblem, writeServers } from "./servers_store.js";

/**
 * @typedef {import("./servers_store.js").SavedServer} SavedServer
 * @typedef {import("./servers_store.js").ServerModel} ServerModel
 * @typedef {import("csi-web").RemoteServer} RemoteServer
 */

/** What each policy is called in the form and the lists. */
export const POLICY_TEXT = {
  remote: "always the server",
  "prefer-local": "this browser, the server if it cannot load",
};

/**
 * Mount the Servers part. `apply` hands the engine a new list of servers (rejecting with its typed
 * error when it refuses it); `onChange` sees the servers the engine took.
 * @param {ParentNode} root
 * @param {{apply: (remotes: RemoteServer[]) => Promise<void>, onChange: (servers: SavedServer[]) => void}} events
 */
export function mountServers(root, { apply, onChange }) {
  const ui = {
    list: find(root, "#servers-list", HTMLUListElement),
    form: find(root, "#server-form", HTMLFormElement),
    url: find(root, "#server-url", HTMLInputElement),
    key: find(root, "#server-key", HTMLInputElement),
    keepKey: find(root, "#server-keep-key", HTMLInputElement),
    models: find(root, "#server-models", HTMLElement),
    addModel: find(root, "#server-add-model", HTMLButtonElement),
    status: find(root, "#server-status", HTMLElement),
  };
  /** @type {SavedServer[]} */
  let servers = readServers();
  let rowCount = 0;

  /** @param {string} text @param {string} [kind] "error" or "" */
  function say(text, kind = "") {
    ui.status.textContent = text;
    ui.status.className = kind;
  }

  /** A model row of the form: its id, its name on the server, its policy, a Remove button. */
  function modelRow() {
    const n = ++rowCount;
    const row = el("div", "server-model");
    row.setAttribute("role", "group");
    row.setAttribute("aria-label", `Model ${n}`);
    const id = el("input", "server-model-id");
    Object.assign(id, { autocomplete: "off", spellcheck: false, placeholder: "model id" });
    id.setAttribute("aria-label", `Model ${n}: its id here`);
    const name = el("input", "server-model-name");
    Object.assign(name, { autocomplete: "off", spellcheck: false, placeholder: "name on the server (if other)" });
    name.setAttribute("aria-label", `Model ${n}: its name on the server (optional)`);
    const policy = el("select", "server-model-policy");
    policy.setAttribute("aria-label", `Model ${n}: where it runs`);
    for (const [value, text] of Object.entries(POLICY_TEXT)) {
      const option = el("option", "", text);
      option.value = value;
      policy.append(option);
    }
    const remove = el("button", "server-model-remove", "Remove");
    remove.type = "button";
    remove.setAttribute("aria-label", `Remove model ${n} from the form`);
    remove.addEventListener("click", () => {
      if (ui.models.children.length > 1) row.remove();
      else id.value = name.value = "";
      ui.models.querySelector("input")?.focus();
    });
    row.append(id, name, policy, remove);
    return row;
  }

  /** @param {SavedServer} s @param {number} i */
  function serverItem(s, i) {
    const li = el("li", "server");
    li.dataset.url = s.baseURL;
    const head = el("div", "server-head");
    const key = s.apiKey ? (s.keepKey ? "API key kept in this browser" : "API key for this tab only")
      : s.keepKey ? "no API key" : "API key not kept";
    const remove = el("button", "server-remove", "Remove");
    remove.type = "button";
    remove.setAttribute("aria-label", `Remove the server ${s.baseURL}`);
    remove.addEventListener("click", () => change(servers.filter((_, j) => j !== i), `Removed ${s.baseURL}.`));
    head.append(el("code", "server-url", s.baseURL), " ", el("span", "server-key", key), " ", remove);
    const models = el("ul", "server-models");
    for (const m of s.models) {
      const item = el("li");
      item.dataset.model = m.id;
      item.append(el("span", "id", m.id), " ",
        el("span", "policy", `${POLICY_TEXT[m.policy]}${m.serverModel ? `, "${m.serverModel}" there` : ""}`));
      models.append(item);
    }
    li.append(head, models);
    return li;
  }

  function render() {
    ui.list.replaceChildren(...servers.map(serverItem));
    if (!servers.length) ui.list.append(el("li", "hint", "No servers yet."));
  }

  /** Mark the fields the engine's `param` names (e.g. "remotes[1].models[0]"), at server `at`. @param {string|null} param @param {number} at */
  function markParam(param, at) {
    const m = /^remotes\[(\d+)\](?:\.(base_url)|\.models\[(\d+)\])?/.exec(param ?? "");
    if (!m || Number(m[1]) !== at) return;
    if (m[2]) ui.url.setAttribute("aria-invalid", "true");
    const row = m[3] === undefined ? null : ui.models.children[Number(m[3])];
    row?.querySelector(".server-model-id")?.setAttribute("aria-invalid", "true");
  }

  /**
   * Hand `next` to the engine; keep it if taken.
   * @param {SavedServer[]} next @param {string} done what to say then
   */
  async function change(next, done) {
    try {
      await apply(toRemotes(next));
    } catch (/** @type {any} */ err) {
      const param = typeof err.param === "string" ? err.param : null;
      say(`${err.name ?? "Error"}${param ? ` (field ${param})` : ""}: ${err.message}`, "error");
      if (param) ui.status.dataset.param = param;
      markParam(param, next.length - 1);
      return false;
    }
    delete ui.status.dataset.param;
    servers = next;
    writeServers(servers);
    render();
    onChange(servers);
    say(done);
    return true;
  }

  /** The form's server, or null after marking what is wrong. @returns {SavedServer|null} */
  function fromForm() {
    for (const f of ui.form.querySelectorAll("[aria-invalid]")) f.removeAttribute("aria-invalid");
    const baseURL = ui.url.value.trim();
    /** @type {Array<[HTMLElement, string]>} */
    const problems = [];
    const urlWrong = urlProblem(baseURL);
    if (urlWrong) problems.push([ui.url, urlWrong]);
    else if (servers.some((s) => s.baseURL.replace(/\/+$/, "") === baseURL.replace(/\/+$/, ""))) {
      problems.push([ui.url, `${baseURL} is listed already: remove it first to change it.`]);
    }
    /** @type {ServerModel[]} */
    const models = [];
    for (const row of ui.models.children) {
      const id = /** @type {HTMLInputElement} */ (row.querySelector(".server-model-id"));
      const name = /** @type {HTMLInputElement} */ (row.querySelector(".server-model-name"));
      const policy = /** @type {HTMLSelectElement} */ (row.querySelector(".server-model-policy"));
      if (!id.value.trim() && !name.value.trim() && ui.models.children.length > 1) continue;
      const idWrong = modelIdProblem(id.value.trim());
      if (idWrong) problems.push([id, idWrong]);
      models.push({ id: id.value.trim(), policy: policy.value === "prefer-local" ? "prefer-local" : "remote",
        serverModel: name.value.trim() });
    }
    if (problems.length) {
      for (const [field] of problems) field.setAttribute("aria-invalid", "true");
      say(problems.map(([, text]) => text).join(" "), "error");
      problems[0][0].focus();
      return null;
    }
    return { baseURL, apiKey: ui.key.value, keepKey: ui.keepKey.checked, models };
  }

  ui.addModel.addEventListener("click", () => {
    const row = modelRow();
    ui.models.append(row);
    row.querySelector("input")?.focus();
  });
  ui.form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const server = fromForm();
    if (!server) return;
    const ids = server.models.map((m) => m.id).join(", ");
    if (await change([...servers, server], `Added ${server.baseURL} with ${ids}: load ${server.models.length > 1 ? "one" : "it"} above.`)) {
      ui.form.reset();
      ui.models.replaceChildren(modelRow());
    }
  });
  ui.models.replaceChildren(modelRow());
  render();
  // the stored servers go into the engine's config before its first load
  apply(toRemotes(servers)).catch((/** @type {any} */ err) => say(`The stored servers: ${err.name}: ${err.message}`, "error"));
  onChange(servers);
  return { servers: () => servers };
}
