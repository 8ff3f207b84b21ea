// The app shell: the panel tabs (click, arrow keys, the URL's #hash), the sidebar drawer on narrow
// screens, the engine's state in the top bar, and the keyboard shortcuts with their dialog.

import { find } from "./dom.js";

/**
 * @typedef {"booting"|"loading"|"ready"|"generating"|"error"|"idle"} EngineState
 * @typedef {{keys: string, label: string, when?: (e: KeyboardEvent) => boolean, run: () => void}} Shortcut
 */

/** Shortcuts with no modifier fire only outside text fields. @param {EventTarget|null} target */
function typing(target) {
  return target instanceof HTMLElement
    && (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName));
}

/** "Ctrl+Shift+O" → does the event match it? @param {KeyboardEvent} e @param {string} keys */
export function matches(e, keys) {
  const parts = keys.split("+");
  const key = parts.pop() ?? "";
  const want = new Set(parts.map((p) => p.toLowerCase()));
  if (want.has("ctrl") !== (e.ctrlKey || e.metaKey) || want.has("alt") !== e.altKey) return false;
  if (key.length === 1 && /[a-z0-9]/i.test(key)) {
    return want.has("shift") === e.shiftKey && e.key.toLowerCase() === key.toLowerCase();
  }
  return e.key === key; // "?", "Escape", "/": the key's own character, whatever shift it takes
}

/** Mount the shell on the document. @param {Document} doc */
export function mountShell(doc) {
  const ui = {
    tabs: [...doc.querySelectorAll("#tabs [role=tab]")].map((t) => /** @type {HTMLButtonElement} */ (t)),
    sidebarToggle: find(doc, "#sidebar-toggle", HTMLButtonElement),
    state: find(doc, "#engine-state", HTMLElement),
    dialog: find(doc, "#shortcuts", HTMLDialogElement),
    dialogButton: find(doc, "#shortcuts-button", HTMLButtonElement),
    list: find(doc, "#shortcut-list", HTMLElement),
  };
  /** @type {Shortcut[]} */
  const shortcuts = [];
  /** @type {Map<string, Array<(shown: boolean) => void>>} */
  const onShow = new Map();

  const panelOf = (/** @type {HTMLButtonElement} */ tab) => find(doc, `#${tab.getAttribute("aria-controls")}`, HTMLElement);

  /** Show one panel by its name ("chat", "documents", …). @param {string} name @param {boolean} [focus] */
  function show(name, focus = false) {
    const tab = ui.tabs.find((t) => t.dataset.panel === name) ?? ui.tabs[0];
    for (const t of ui.tabs) {
      const on = t === tab;
      t.setAttribute("aria-selected", String(on));
      t.tabIndex = on ? 0 : -1;
      panelOf(t).hidden = !on;
      for (const f of onShow.get(t.dataset.panel ?? "") ?? []) f(on);
    }
    if (focus) tab.focus();
    if (location.hash !== `#${tab.dataset.panel}`) history.replaceState(null, "", `#${tab.dataset.panel}`);
  }

  for (const [i, tab] of ui.tabs.entries()) {
    tab.addEventListener("click", () => show(tab.dataset.panel ?? "chat"));
    tab.addEventListener("keydown", (e) => {
      const step = { ArrowRight: 1, ArrowLeft: -1 }[e.key];
      const to = step ? (i + step + ui.tabs.length) % ui.tabs.length : e.key === "Home" ? 0 : e.key === "End" ? ui.tabs.length - 1 : -1;
      if (to < 0) return;
      e.preventDefault();
      show(ui.tabs[to].dataset.panel ?? "chat", true);
    });
  }
  window.addEventListener("hashchange", () => show(location.hash.slice(1)));

  /** @param {boolean} open */
  function setSidebar(open) {
    doc.body.classList.toggle("sidebar-open", open);
    ui.sidebarToggle.setAttribute("aria-expanded", String(open));
  }
  ui.sidebarToggle.addEventListener("click", () => setSidebar(!doc.body.classList.contains("sidebar-open")));

  function listShortcuts() {
    ui.list.replaceChildren(...shortcuts.flatMap((s) => {
      const dt = doc.createElement("dt");
      dt.textContent = s.keys;
      const dd = doc.createElement("dd");
      dd.textContent = s.label;
      return [dt, dd];
    }));
  }
  ui.dialogButton.addEventListener("click", () => ui.dialog.showModal());

  doc.addEventListener("keydown", (e) => {
    if (e.defaultPrevented || e.isComposing) return;
    for (const s of shortcuts) {
      const plain = !/Ctrl|Alt/.test(s.keys) && s.keys !== "Escape";
      if (!matches(e, s.keys) || (plain && typing(e.target)) || (s.when && !s.when(e))) continue;
      e.preventDefault();
      s.run();
      return;
    }
  });

  const shell = {
    show,
    setSidebar,
    /** Add keyboard shortcuts (listed in the dialog in the order added). @param {Shortcut[]} list */
    addShortcuts(list) {
      shortcuts.push(...list);
      listShortcuts();
    },
    /** Call `f(shown)` whenever the panel is shown or hidden. @param {string} name @param {(shown: boolean) => void} f */
    onPanel(name, f) {
      onShow.set(name, [...onShow.get(name) ?? [], f]);
    },
    /** The engine's state in the top bar. @param {EngineState} state @param {string} [text] */
    setEngineState(state, text) {
      ui.state.dataset.state = state;
      ui.state.textContent = text ?? state;
    },
  };
  shell.addShortcuts([
    { keys: "?", label: "Show the keyboard shortcuts", run: () => ui.dialog.showModal() },
    ...ui.tabs.map((t, i) => ({ keys: `Alt+${i + 1}`, label: `Open the ${t.textContent} panel`, run: () => show(t.dataset.panel ?? "chat", true) })),
    { keys: "Ctrl+Shift+S", label: "Show or hide the conversations", run: () => setSidebar(!doc.body.classList.contains("sidebar-open")) },
  ]);
  show(location.hash.slice(1) || "chat");
  return shell;
}

/** @typedef {ReturnType<typeof mountShell>} Shell */
