// The chat's settings drawer (#chat-settings): the open conversation's system prompt and every
// generation knob, presets (built in, and the user's own), and the token view. A knob left empty
// is the engine's default. Numbers are sent as typed: the engine's typed error names a bad one,
// and the field it names is marked.

import { BUILTIN_PRESETS, KNOBS } from "../conversations/knobs.js";
import { el } from "./dom.js";

/**
 * @typedef {import("../conversations/knobs.js").Settings} Settings
 * @typedef {object} SettingsOptions
 * @property {() => Record<string, Settings>} userPresets
 * @property {(name: string, settings: Settings|null) => void} savePreset null deletes it
 * @property {(settings: Settings, system: string) => void} onChange the user changed something
 */

/** @param {string} text @param {HTMLElement} control */
function labelled(text, control, className = "") {
  const label = el("label", className, text);
  label.append(control);
  return label;
}

/** @param {string} id @param {string} text */
function button(id, text) {
  const b = el("button", "", text);
  b.type = "button";
  b.id = id;
  return b;
}

/** Mount the drawer on its (empty) root. @param {HTMLElement} root @param {SettingsOptions} options */
export function mountSettings(root, options) {
  const details = el("details", "settings");
  const summary = el("summary", "", "Settings");
  const brief = el("span", "settings-brief");
  summary.append(" ", brief);
  const system = el("textarea");
  system.id = "system-prompt";
  system.rows = 2;
  system.placeholder = "You are a helpful assistant.";
  const preset = el("select");
  preset.id = "preset";
  const presetName = el("input");
  presetName.id = "preset-name";
  presetName.placeholder = "name";
  presetName.autocomplete = "off";
  const save = button("preset-save", "Save as preset");
  const remove = button("preset-delete", "Delete preset");
  /** @type {Map<string, HTMLInputElement>} */
  const inputs = new Map();
  const grid = el("div", "knobs");
  for (const k of KNOBS) {
    const input = el("input");
    input.type = "number";
    input.id = `set-${k.key.replace(/_/g, "-")}`;
    input.min = String(k.min);
    input.max = String(k.max);
    input.step = String(k.step);
    input.placeholder = "default";
    input.title = k.hint;
    inputs.set(k.key, input);
    grid.append(labelled(k.label, input));
  }
  const stop = el("textarea");
  stop.id = "set-stop";
  stop.rows = 2;
  stop.placeholder = "one per line";
  const ignoreEos = el("input");
  ignoreEos.type = "checkbox";
  ignoreEos.id = "set-ignore-eos";
  const tokenView = el("input");
  tokenView.type = "checkbox";
  tokenView.id = "set-token-view";
  const checks = el("div", "checks");
  checks.append(labelled("", ignoreEos), labelled("", tokenView));
  /** @type {HTMLElement} */ (checks.children[0]).append(" Ignore the end of text");
  /** @type {HTMLElement} */ (checks.children[1]).append(" Token view (probabilities)");
  const presetRow = el("div", "preset-row");
  presetRow.append(labelled("Preset", preset), labelled("Preset name", presetName), save, remove);
  details.append(summary, labelled("System prompt", system, "system"), presetRow, grid,
    labelled("Stop sequences", stop, "stop"), checks);
  root.replaceChildren(details);

  function listPresets() {
    const chosen = preset.value;
    const group = (/** @type {string} */ label, /** @type {string[]} */ names) => {
      const g = el("optgroup");
      g.label = label;
      g.append(...names.map((n) => Object.assign(el("option", "", n), { value: n })));
      return g;
    };
    preset.replaceChildren(Object.assign(el("option", "", "custom"), { value: "" }),
      group("Built in", Object.keys(BUILTIN_PRESETS)), group("Yours", Object.keys(options.userPresets())));
    preset.value = [...preset.options].some((o) => o.value === chosen) ? chosen : "";
    remove.disabled = !(preset.value in options.userPresets());
  }

  /** @returns {Settings} */
  function read() {
    /** @type {Settings} */
    const out = {};
    for (const [key, input] of inputs) {
      if (input.value.trim() !== "" && Number.isFinite(input.valueAsNumber)) out[/** @type {import("../conversations/knobs.js").NumberKnob} */ (key)] = input.valueAsNumber;
    }
    const stops = stop.value.split("\n").filter((s) => s !== "");
    if (stops.length) out.stop = stops;
    if (ignoreEos.checked) out.ignore_eos = true;
    if (tokenView.checked) out.token_view = true;
    return out;
  }

  /** @param {Settings} s */
  function show(s) {
    for (const [key, input] of inputs) {
      const v = s[/** @type {import("../conversations/knobs.js").NumberKnob} */ (key)];
      input.value = v === undefined ? "" : String(v);
      input.removeAttribute("aria-invalid");
    }
    stop.value = (s.stop ?? []).join("\n");
    ignoreEos.checked = Boolean(s.ignore_eos);
    tokenView.checked = Boolean(s.token_view);
    brief.textContent = [
      s.temperature === 0 ? "greedy" : s.temperature !== undefined ? `temperature ${s.temperature}` : "",
      s.max_tokens !== undefined ? `max ${s.max_tokens} tokens` : "",
      s.seed !== undefined ? `seed ${s.seed}` : "",
      (s.n ?? 1) > 1 ? `n ${s.n}` : "",
      s.token_view ? "token view" : "",
    ].filter(Boolean).join(" · ");
  }

  const changed = () => {
    const s = read();
    show(s);
    options.onChange(s, system.value);
  };
  for (const input of [...inputs.values(), stop, ignoreEos, tokenView]) {
    input.addEventListener("change", () => {
      preset.value = "";
      remove.disabled = true;
      changed();
    });
  }
  system.addEventListener("change", changed);
  preset.addEventListener("change", () => {
    const name = preset.value;
    const values = /** @type {Record<string, Settings>} */ (BUILTIN_PRESETS)[name] ?? options.userPresets()[name];
    remove.disabled = !(name in options.userPresets());
    if (!values) return;
    show({ ...read(), ...values });
    options.onChange(read(), system.value);
  });
  save.addEventListener("click", () => {
    const name = presetName.value.trim();
    if (!name || name in BUILTIN_PRESETS) {
      presetName.setCustomValidity(name ? "a built-in preset has that name" : "give the preset a name");
      presetName.reportValidity();
      return;
    }
    presetName.setCustomValidity("");
    options.savePreset(name, read());
    presetName.value = "";
    listPresets();
    preset.value = name;
    remove.disabled = false;
  });
  remove.addEventListener("click", () => {
    if (!(preset.value in options.userPresets())) return;
    options.savePreset(preset.value, null);
    preset.value = "";
    listPresets();
  });
  listPresets();

  return {
    /** Show a conversation's settings and system prompt. @param {Settings} s @param {string} systemPrompt */
    set(s, systemPrompt) {
      show(s);
      system.value = systemPrompt;
      preset.value = "";
      listPresets();
    },
    /** The settings the form holds. */
    read,
    /** Mark the field an engine error names (e.g. "temperature"), if it is one of ours. @param {string|null} param */
    markError(param) {
      const input = param ? inputs.get(/** @type {any} */ (param)) ?? (param === "stop" ? stop : null) : null;
      if (!input) return;
      input.setAttribute("aria-invalid", "true");
      details.open = true;
    },
  };
}
