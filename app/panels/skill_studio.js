// The skill studio: write a Python skill in a code editor, register it (errors marked on their
// line), fill the form made from its input schema, run it, see its output or its traceback, stop
// it. The example skills load in one click. Skill output, errors and descriptions are set only
// as text. A `@message_stream` skill's text is shown as it streams, its end payload after it.

import { find, el } from "./dom.js";
import { registerErrorLine, tracebackLine } from "./skill_errors.js";
import { FieldError, schemaForm } from "./skill_form.js";
import { STUDIO_NAMESPACE } from "./tool_servers.js";

/**
 * @typedef {import("csi-web").WebWorkerEngine} WebWorkerEngine
 * @typedef {ReturnType<typeof import("./skill_editor.js").createSkillEditor>} SkillEditor
 * @typedef {{name: string, file: string}} Example
 * @typedef {object} StudioOptions
 * @property {(busy: boolean) => void} [onBusy] a skill starts or stops running
 */

const STARTER = `"""A skill: a function of the CSI and a pydantic input, returning JSON-able output."""
from pydantic import BaseModel, Field

from pharia_skill import Csi, skill


class Input(BaseModel):
    text: str = Field(description="Any text")
    top: int = Field(default=3, ge=1, description="How many words to list")


class Output(BaseModel):
    words: int
    longest: list[str]


@skill
def word_stats(csi: Csi, input: Input) -> Output:
    """Count the words of a text and list its longest ones."""
    words = input.text.split()
    return Output(words=len(words), longest=sorted(set(words), key=len, reverse=True)[:input.top])
`;

/** @param {unknown} e */
const errorOf = (e) => /** @type {{name?: string, message?: string, param?: string|null}} */ (e ?? {});

/**
 * Mount the studio on the #panel-skills section.
 * @param {HTMLElement} root @param {StudioOptions} [options]
 */
export function mountSkillStudio(root, options = {}) {
  const ui = {
    examples: find(root, "#skill-examples", HTMLElement),
    registerForm: find(root, "#skill-register-form", HTMLFormElement),
    name: find(root, "#skill-name", HTMLInputElement),
    register: find(root, "#skill-register", HTMLButtonElement),
    status: find(root, "#skill-status", HTMLElement),
    runForm: find(root, "#skill-run-form", HTMLFormElement),
    title: find(root, "#skill-form-title", HTMLElement),
    description: find(root, "#skill-description", HTMLElement),
    fields: find(root, "#skill-fields", HTMLElement),
    raw: find(root, "#skill-raw", HTMLDetailsElement),
    json: find(root, "#skill-json", HTMLTextAreaElement),
    run: find(root, "#skill-run", HTMLButtonElement),
    stop: find(root, "#skill-stop", HTMLButtonElement),
    runState: find(root, "#skill-run-state", HTMLElement),
    output: find(root, "#skill-output", HTMLElement),
  };
  /** @type {WebWorkerEngine|null} */
  let engine = null;
  let registering = false;
  let running = false;
  /** The skill the form runs: its name, and the source and schema it was registered with. */
  let current = /** @type {{name: string, source: string, schema: string, kind: string}|null} */ (null);
  /** @type {ReturnType<typeof schemaForm>} */
  let form = null;

  /** @type {Promise<SkillEditor>|null} */
  let editorLoad = null;
  /** The code editor, made the first time the panel is shown (CodeMirror is 1.3 MB: not at start-up). */
  const editor = () => {
    editorLoad ??= import("./skill_editor.js").then(({ createSkillEditor }) =>
      createSkillEditor(find(root, "#skill-editor", HTMLElement), STARTER, {
        run: () => void run(),
        register: () => void register(),
      }));
    return editorLoad;
  };

  const updateControls = () => {
    ui.register.disabled = !engine || registering || running;
    ui.run.disabled = !engine || registering || running || !current;
    ui.stop.disabled = !running;
    for (const b of ui.examples.querySelectorAll("button")) b.disabled = !engine || registering || running;
  };

  /** @param {string} text @param {"ok"|"error"|"busy"|""} [state] */
  function setStatus(text, state = "") {
    ui.status.textContent = text;
    ui.status.dataset.state = state;
  }

  /** Show the form for skill `name`; a form with the same schema keeps what was typed. @param {string} name @param {any} meta @param {string} source */
  function showForm(name, meta, source) {
    const schema = JSON.stringify(meta.input_schema ?? {});
    const same = current?.name === name && current.schema === schema;
    current = { name, source, schema, kind: meta.kind ?? "skill" };
    ui.title.textContent = `Input of ${name}`;
    ui.description.textContent = typeof meta.description === "string" ? meta.description : "";
    if (same && form) return;
    form = schemaForm(meta.input_schema ?? {});
    ui.fields.replaceChildren(...form ? form.nodes : [el("p", "hint", "This input has no fields to show: write it as JSON.")]);
    ui.raw.open = !form;
    ui.json.value = form ? "" : "{}";
  }

  /** Register the editor's source under the name given; true when it worked. */
  async function register() {
    if (!engine || registering || running) return false;
    const name = ui.name.value.trim();
    const source = (await editor()).source();
    registering = true;
    updateControls();
    ui.name.removeAttribute("aria-invalid");
    setStatus(`Registering ${name}…`, "busy");
    try {
      const meta = await engine.skills.register({ name, source });
      (await editor()).mark(null);
      showForm(name, meta, source);
      setStatus(`Registered ${name}.`, "ok");
      return true;
    } catch (e) {
      const err = errorOf(e);
      const where = registerErrorLine({ param: err.param, message: err.message ?? "" });
      (await editor()).mark(where);
      if (err.param === "name") ui.name.setAttribute("aria-invalid", "true");
      setStatus(where ? `Line ${where.line}: ${where.message}` : `${err.name}: ${err.message}`, "error");
      return false;
    } finally {
      registering = false;
      updateControls();
    }
  }

  /** The input to send: the JSON box while it is open, the form otherwise. */
  function input() {
    if (ui.raw.open || !form) return JSON.parse(ui.json.value || "null");
    return form.read();
  }

  /** Run the form's skill (registering the editor's source first when it changed). */
  async function run() {
    if (!engine || registering || running) return;
    ui.output.dataset.state = "running";
    ui.output.textContent = "";
    if (!current || current.source !== (await editor()).source() || current.name !== ui.name.value.trim()) {
      if (!await register()) {
        ui.output.dataset.state = "";
        return;
      }
    }
    const skill = /** @type {{name: string, kind: string}} */ (current);
    for (const f of ui.fields.querySelectorAll("[aria-invalid]")) f.removeAttribute("aria-invalid");
    let value;
    try {
      value = input();
    } catch (e) {
      ui.output.dataset.state = "error";
      ui.output.textContent = e instanceof FieldError || e instanceof SyntaxError ? e.message : String(e);
      return;
    }
    running = true;
    updateControls();
    options.onBusy?.(true);
    ui.runState.textContent = "running…";
    const started = performance.now();
    try {
      if (skill.kind === "message_stream") {
        let text = "";
        for await (const event of engine.skills.stream(skill.name, value, { namespace: STUDIO_NAMESPACE })) {
          if (event.type === "message_begin" && text) text += "\n\n";
          else if (event.type === "message_append") text += event.text;
          else if (event.type === "message_end" && event.payload != null) {
            text += `\n\n${JSON.stringify(event.payload, null, 2)}`;
          }
          ui.output.textContent = text;
        }
      } else {
        const out = await engine.skills.run(skill.name, value, { namespace: STUDIO_NAMESPACE });
        ui.output.textContent = JSON.stringify(out, null, 2) ?? "null";
      }
      ui.output.dataset.state = "ok";
      ui.runState.textContent = `done in ${((performance.now() - started) / 1000).toFixed(2)} s`;
    } catch (e) {
      const err = errorOf(e);
      ui.output.textContent = `${err.name}: ${err.message}`;
      ui.output.dataset.state = "error";
      ui.runState.textContent = "failed";
      const where = tracebackLine(err.message ?? "", skill.name);
      const ed = await editor();
      if (where && ed.source() === current?.source) ed.mark(where);
      if (err.param?.startsWith("input.")) markField(err.param.slice(6));
    } finally {
      running = false;
      updateControls();
      options.onBusy?.(false);
    }
  }

  /** The form's field (or its closest parent) the engine blamed. @param {string} path */
  function markField(path) {
    const parts = path.split(/\.|\[\d+\]/).filter(Boolean);
    for (let n = parts.length; n > 0; n--) {
      const node = [...ui.fields.querySelectorAll("[data-field]")].find((f) => f instanceof HTMLElement
        && f.dataset.field === parts.slice(0, n).join("."));
      if (node) {
        node.setAttribute("aria-invalid", "true");
        return;
      }
    }
  }

  /** Load an example's source into the editor, register it under a name of its own, show its form. @param {Example} example */
  async function loadExample(example) {
    try {
      const r = await fetch(`skills/examples/${encodeURIComponent(example.file)}`);
      if (!r.ok) throw new Error(`HTTP ${r.status}`);
      (await editor()).setSource(await r.text());
    } catch (e) {
      setStatus(`The example ${example.name} could not be loaded: ${e instanceof Error ? e.message : e}`, "error");
      return;
    }
    ui.name.value = `my-${example.name}`; // the example's own name is taken by the built-in skill
    await register();
  }

  async function listExamples() {
    try {
      const r = await fetch("skills/examples/index.json");
      if (!r.ok) return;
      /** @type {Example[]} */
      const examples = await r.json();
      ui.examples.append(...examples.map((example) => {
        const b = el("button", "example", example.name);
        b.type = "button";
        b.dataset.example = example.name;
        b.title = `Load the ${example.name} example into the editor and register it`;
        b.addEventListener("click", () => void loadExample(example));
        return b;
      }));
      updateControls();
    } catch {
      // no examples listed: the editor still works
    }
  }

  ui.registerForm.addEventListener("submit", (e) => { e.preventDefault(); void register(); });
  ui.runForm.addEventListener("submit", (e) => { e.preventDefault(); void run(); });
  ui.stop.addEventListener("click", () => engine?.interruptGenerate());
  ui.raw.addEventListener("toggle", () => {
    if (!ui.raw.open || !form) return;
    try {
      ui.json.value = JSON.stringify(form.read(), null, 2);
    } catch {
      // a field that does not parse: the box keeps what it had
    }
  });
  void listExamples();
  updateControls();

  return {
    /** The panel is shown: make the code editor if it is not there yet. */
    show() {
      void editor();
    },
    /** The engine to register and run skills on (null: none yet). @param {WebWorkerEngine|null} next */
    setEngine(next) {
      engine = next;
      updateControls();
    },
  };
}
