// The conversations sidebar (#sidebar): search over titles and message text, New chat, and per
// conversation open, rename and delete (with Undo); export every conversation as a JSON file and
// import one (checked strictly: a bad file changes nothing and says what is wrong).

import { el } from "./dom.js";

/**
 * @typedef {import("../conversations/tree.js").Conversation} Conversation
 * @typedef {object} SidebarOptions
 * @property {import("../conversations/library.js").Library} library
 * @property {() => string|null} openId the conversation the chat shows
 * @property {(id: string) => void} open
 * @property {() => void} newChat
 * @property {(c: Conversation) => void} renamed
 * @property {(c: Conversation) => void} deleted
 * @property {import("./shell.js").Shell} shell where its shortcuts go
 */

/** @param {string} text @param {string} className @param {string} [label] */
function button(text, className, label) {
  const b = el("button", className, text);
  b.type = "button";
  if (label) b.setAttribute("aria-label", label);
  return b;
}

/** Mount the sidebar on its (empty) root. @param {HTMLElement} root @param {SidebarOptions} options */
export function mountSidebar(root, options) {
  const { library } = options;
  const newChat = button("New chat", "primary");
  newChat.id = "new-chat";
  newChat.title = "New chat (Ctrl+Shift+O)";
  const search = el("input");
  search.type = "search";
  search.id = "conv-search";
  search.placeholder = "Search (Ctrl+K)";
  search.setAttribute("aria-label", "Search the conversations");
  search.autocomplete = "off";
  const list = el("ul");
  list.id = "conv-list";
  const undo = el("div", "conv-undo");
  undo.id = "conv-undo";
  undo.hidden = true;
  undo.setAttribute("role", "status");
  const exportButton = button("Export", "");
  exportButton.id = "conv-export";
  exportButton.title = "Download every conversation as JSON";
  const fileInput = el("input");
  fileInput.type = "file";
  fileInput.id = "conv-import";
  fileInput.accept = "application/json,.json";
  const importLabel = el("label", "file-button", "Import");
  importLabel.append(fileInput);
  const io = el("div", "conv-io");
  io.append(exportButton, importLabel);
  const problem = el("p", "error-text");
  problem.id = "conv-error";
  problem.setAttribute("role", "alert");
  const head = el("div", "conv-head");
  head.append(el("h2", "", "Conversations"), newChat);
  root.replaceChildren(head, search, list, undo, io, problem);

  /** @param {HTMLLIElement} li @param {Conversation} c */
  function startRename(li, c) {
    const input = el("input", "conv-title-input");
    input.value = c.title;
    input.setAttribute("aria-label", "New title");
    let finished = false;
    const finish = (/** @type {boolean} */ keep) => {
      if (finished) return;
      finished = true;
      const title = input.value.trim();
      if (keep && title && title !== c.title) {
        c.title = title.slice(0, 500);
        c.titleEdited = true;
        options.renamed(c);
      }
      refresh();
    };
    input.addEventListener("keydown", (e) => {
      if (e.key === "Enter") { e.preventDefault(); finish(true); }
      if (e.key === "Escape") { e.preventDefault(); e.stopPropagation(); finish(false); }
    });
    input.addEventListener("blur", () => finish(true));
    li.replaceChildren(input);
    input.focus();
    input.select();
  }

  /** @param {Conversation} c */
  async function remove(c) {
    await library.remove(c.id);
    options.deleted(c);
    undo.replaceChildren(`Deleted “${c.title}”. `);
    const back = button("Undo", "conv-undo-button");
    back.addEventListener("click", async () => {
      undo.hidden = true;
      await library.save(c);
      options.open(c.id);
    });
    undo.append(back);
    undo.hidden = false;
    refresh();
  }

  function refresh() {
    const open = options.openId();
    list.replaceChildren(...library.list(search.value).map((c) => {
      const li = el("li", "conv");
      li.dataset.id = c.id;
      const title = button(c.title, "conv-open");
      if (c.id === open) title.setAttribute("aria-current", "true");
      title.title = c.title;
      title.addEventListener("click", () => {
        options.shell.setSidebar(false); // the phone's drawer makes way for the chat
        options.open(c.id);
      });
      const rename = button("✎", "conv-rename", `Rename “${c.title}”`);
      rename.addEventListener("click", () => startRename(li, c));
      const del = button("✕", "conv-delete", `Delete “${c.title}”`);
      del.addEventListener("click", () => remove(c));
      li.append(title, rename, del);
      return li;
    }));
    if (!list.children.length) list.append(el("li", "conv-none hint", search.value ? "No conversation matches." : "No conversations yet."));
  }

  search.addEventListener("input", refresh);
  search.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && search.value) { e.stopPropagation(); search.value = ""; refresh(); }
  });
  newChat.addEventListener("click", () => {
    options.shell.setSidebar(false);
    options.newChat();
  });
  exportButton.addEventListener("click", () => {
    const url = URL.createObjectURL(new Blob([library.exportJson()], { type: "application/json" }));
    const a = el("a");
    a.href = url;
    a.download = `conversations-${new Date().toISOString().slice(0, 10)}.json`;
    a.click();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  });
  fileInput.addEventListener("change", async () => {
    const file = fileInput.files?.[0];
    fileInput.value = "";
    if (!file) return;
    problem.textContent = "";
    try {
      const added = await library.importJson(await file.text());
      refresh();
      if (added.length) options.open(added[added.length - 1].id);
      problem.textContent = "";
      undo.replaceChildren(`Imported ${added.length} conversation${added.length === 1 ? "" : "s"}.`);
      undo.hidden = false;
    } catch (err) {
      const e = /** @type {Error} */ (err);
      problem.textContent = `Not imported: ${e.message}`;
    }
  });
  refresh();
  options.shell.addShortcuts([
    { keys: "Ctrl+Shift+O", label: "Start a new chat", run: () => { options.shell.show("chat"); options.newChat(); } },
    { keys: "Ctrl+K", label: "Search the conversations", run: () => {
      options.shell.setSidebar(true);
      search.focus();
      search.select();
    } },
  ]);

  return { refresh };
}
