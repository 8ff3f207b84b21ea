// A form made from a skill's input JSON Schema (pydantic's): text, numbers, checkboxes, selects
// for enums, lists of strings, fieldsets for nested objects, and a JSON box for whatever else.
// Schema text (titles, descriptions, enum values) is set only as text.

import { el } from "./dom.js";

/**
 * @typedef {{[key: string]: any}} Schema
 * @typedef {object} Field
 * @property {HTMLElement} node
 * @property {() => {present: boolean, value?: any}} read the field's value; throws FieldError
 * @typedef {object} FieldSpec
 * @property {string[]} path property names from the input's root
 * @property {Schema} schema resolved (no $ref, no nullable anyOf)
 * @property {boolean} required
 * @property {boolean} nullable
 * @property {any} initial the default (undefined when none)
 */

/** A value the user typed that is not what its field takes. */
export class FieldError extends Error {
  /** @param {string} path @param {string} message */
  constructor(path, message) {
    super(`${path}: ${message}`);
    this.name = "FieldError";
    this.path = path;
  }
}

/** Follow local `$ref`s; an `anyOf` with `null` becomes its other case, nullable. @param {Schema} s @param {Schema} defs */
export function resolve(s, defs) {
  let schema = s ?? {};
  let nullable = false;
  for (let i = 0; i < 8; i++) {
    const { $ref, anyOf, allOf, ...own } = schema;
    if (typeof $ref === "string" && $ref.startsWith("#/$defs/")) {
      schema = { ...defs[$ref.slice(8)], ...own };
    } else if (Array.isArray(allOf) && allOf.length === 1) {
      schema = { ...allOf[0], ...own };
    } else if (Array.isArray(anyOf) && anyOf.some((c) => c?.type === "null")) {
      const rest = anyOf.filter((c) => c?.type !== "null");
      nullable = true;
      if (rest.length !== 1) return { schema: { ...own, anyOf: rest }, nullable };
      schema = { ...rest[0], ...own };
    } else {
      return { schema, nullable };
    }
  }
  return { schema, nullable };
}

/** The input's name attribute and id. @param {string[]} path */
const nameOf = (path) => path.join(".");
const idOf = (/** @type {string[]} */ path) => `skill-in-${path.join("-").replace(/[^A-Za-z0-9_-]/g, "_")}`;

/** A labelled row: the property's name, its description, the control. @param {FieldSpec} spec @param {HTMLElement} control */
function row(spec, control, labelFor = true) {
  const node = el("div", "field");
  node.dataset.field = nameOf(spec.path);
  const label = el(labelFor ? "label" : "span", "field-name", spec.path[spec.path.length - 1]);
  if (labelFor && label instanceof HTMLLabelElement) label.htmlFor = control.id;
  if (spec.required) label.append(el("span", "required", " *"));
  node.append(label, control);
  if (typeof spec.schema.description === "string") node.append(el("span", "hint", spec.schema.description));
  return node;
}

/**
 * @template {HTMLInputElement|HTMLTextAreaElement|HTMLSelectElement} T
 * @param {FieldSpec} spec @param {T} control @returns {T}
 */
function tag(spec, control) {
  control.id = idOf(spec.path);
  control.name = nameOf(spec.path);
  if (spec.required) control.setAttribute("aria-required", "true");
  return control;
}

/** Left out when empty and optional; an empty required field is sent, so the skill's validation names it. */
const absentWhenEmpty = (/** @type {FieldSpec} */ spec, /** @type {boolean} */ empty) =>
  empty && !spec.required;

/** @param {FieldSpec} spec @returns {Field} */
function textField(spec) {
  const short = typeof spec.initial === "string" || (spec.schema.maxLength ?? Infinity) <= 120;
  const input = tag(spec, short ? el("input") : el("textarea"));
  if (input instanceof HTMLTextAreaElement) input.rows = 2;
  input.spellcheck = false;
  if (typeof spec.initial === "string") input.value = spec.initial;
  return {
    node: row(spec, input),
    read: () => absentWhenEmpty(spec, !input.value && spec.initial === undefined) ? { present: false }
      : { present: true, value: input.value },
  };
}

/** @param {FieldSpec} spec @returns {Field} */
function numberField(spec) {
  const input = tag(spec, el("input"));
  input.type = "number";
  input.step = spec.schema.type === "integer" ? "1" : "any";
  for (const [attr, key] of [["min", "minimum"], ["max", "maximum"]]) {
    if (typeof spec.schema[key] === "number") input.setAttribute(attr, String(spec.schema[key]));
  }
  if (typeof spec.initial === "number") input.value = String(spec.initial);
  return {
    node: row(spec, input),
    read() {
      if (input.value.trim() === "") return { present: false };
      const value = Number(input.value);
      if (!Number.isFinite(value)) throw new FieldError(nameOf(spec.path), "not a number");
      return { present: true, value };
    },
  };
}

/** @param {FieldSpec} spec @returns {Field} */
function booleanField(spec) {
  const input = tag(spec, el("input"));
  input.type = "checkbox";
  input.checked = spec.initial === true;
  return { node: row(spec, input), read: () => ({ present: true, value: input.checked }) };
}

/** @param {FieldSpec} spec @param {any[]} values @returns {Field} */
function enumField(spec, values) {
  const select = tag(spec, el("select"));
  const blank = !spec.required || spec.nullable || spec.initial === undefined;
  if (blank) select.append(el("option", "", spec.nullable ? "(none)" : "(not set)"));
  values.forEach((v, i) => {
    const option = el("option", "", String(v));
    option.value = String(i);
    option.selected = v === spec.initial;
    select.append(option);
  });
  if (spec.nullable && spec.initial === null) select.selectedIndex = 0;
  return {
    node: row(spec, select),
    read() {
      if (select.value === "") return spec.nullable && spec.required ? { present: true, value: null } : { present: false };
      return { present: true, value: values[Number(select.value)] };
    },
  };
}

/** Checkboxes for a list of enum values. @param {FieldSpec} spec @param {any[]} values @returns {Field} */
function enumListField(spec, values) {
  const group = el("div", "choices");
  group.setAttribute("role", "group");
  group.setAttribute("aria-label", nameOf(spec.path));
  const initial = Array.isArray(spec.initial) ? spec.initial : [];
  const boxes = values.map((v, i) => {
    const box = el("input");
    box.type = "checkbox";
    box.name = nameOf(spec.path);
    box.value = String(i);
    box.checked = initial.includes(v);
    const label = el("label", "choice");
    label.append(box, ` ${String(v)}`);
    group.append(label);
    return box;
  });
  return {
    node: row(spec, group, false),
    read() {
      const value = values.filter((_, i) => boxes[i].checked);
      return { present: spec.required || spec.initial !== undefined || value.length > 0, value };
    },
  };
}

/** One input per string, with Add and Remove buttons. @param {FieldSpec} spec @returns {Field} */
function stringListField(spec) {
  const list = el("div", "string-list");
  list.id = idOf(spec.path);
  const items = el("div", "items");
  const add = el("button", "add", "Add");
  add.type = "button";
  add.setAttribute("aria-label", `Add an item to ${nameOf(spec.path)}`);
  /** @param {string} text */
  const addItem = (text) => {
    const item = el("div", "item");
    const input = el("input");
    input.name = nameOf(spec.path);
    input.value = text;
    input.spellcheck = false;
    input.setAttribute("aria-label", `${nameOf(spec.path)} item`);
    const remove = el("button", "remove", "×");
    remove.type = "button";
    remove.setAttribute("aria-label", "Remove this item");
    remove.addEventListener("click", () => item.remove());
    item.append(input, remove);
    items.append(item);
    return input;
  };
  for (const v of Array.isArray(spec.initial) ? spec.initial : []) addItem(String(v));
  add.addEventListener("click", () => addItem("").focus());
  list.append(items, add);
  return {
    node: row(spec, list, false),
    read() {
      const value = [...items.querySelectorAll("input")].map((i) => i.value).filter((v) => v !== "");
      return { present: spec.required || spec.initial !== undefined || value.length > 0, value };
    },
  };
}

/** Whatever the form has no control for, as JSON. @param {FieldSpec} spec @returns {Field} */
function jsonField(spec) {
  const area = tag(spec, el("textarea"));
  area.rows = 3;
  area.spellcheck = false;
  area.classList.add("json");
  area.placeholder = "JSON";
  if (spec.initial !== undefined) area.value = JSON.stringify(spec.initial);
  return {
    node: row(spec, area),
    read() {
      if (area.value.trim() === "") return { present: false };
      try {
        return { present: true, value: JSON.parse(area.value) };
      } catch (e) {
        throw new FieldError(nameOf(spec.path), `not JSON (${e instanceof Error ? e.message : e})`);
      }
    },
  };
}

/** @param {FieldSpec} spec @param {Schema} defs @returns {Field} */
function objectField(spec, defs) {
  const set = el("fieldset", "object");
  set.dataset.field = nameOf(spec.path);
  const legend = el("legend", "field-name", spec.path[spec.path.length - 1]);
  set.append(legend);
  if (typeof spec.schema.description === "string") set.append(el("span", "hint", spec.schema.description));
  const fields = objectFields(spec.schema, defs, spec.path, spec.initial);
  set.append(...fields.map(([, f]) => f.node));
  return {
    node: set,
    read() {
      const value = readObject(fields);
      return { present: spec.required || Object.keys(value).length > 0, value };
    },
  };
}

/** @param {FieldSpec} spec @param {Schema} defs @returns {Field} */
function field(spec, defs) {
  const s = spec.schema;
  const values = Array.isArray(s.enum) ? s.enum : "const" in s ? [s.const] : null;
  if (values) return enumField(spec, values);
  if (s.type === "string") return textField(spec);
  if (s.type === "integer" || s.type === "number") return numberField(spec);
  if (s.type === "boolean") return booleanField(spec);
  if (s.type === "array" && s.items) {
    const { schema: items } = resolve(s.items, defs);
    if (Array.isArray(items.enum)) return enumListField(spec, items.enum);
    if (items.type === "string") return stringListField(spec);
  }
  if (s.type === "object" && s.properties && !s.additionalProperties) return objectField(spec, defs);
  return jsonField(spec);
}

/**
 * @param {Schema} schema an object schema @param {Schema} defs @param {string[]} path @param {any} initial
 * @returns {[string, Field][]}
 */
function objectFields(schema, defs, path, initial) {
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  return Object.entries(schema.properties ?? {}).map(([key, prop]) => {
    const { schema: s, nullable } = resolve(prop, defs);
    const given = initial && typeof initial === "object" && key in initial ? initial[key] : s.default;
    return [key, field({ path: [...path, key], schema: s, required: required.has(key), nullable, initial: given }, defs)];
  });
}

/** @param {[string, Field][]} fields */
function readObject(fields) {
  /** @type {{[key: string]: any}} */
  const value = {};
  for (const [key, f] of fields) {
    const read = f.read();
    if (read.present) value[key] = read.value;
  }
  return value;
}

/**
 * The form for an input schema; `null` when the input is not an object with properties (then
 * only raw JSON fits).
 * @param {Schema} inputSchema
 * @returns {{nodes: HTMLElement[], read: () => any}|null}
 */
export function schemaForm(inputSchema) {
  const defs = inputSchema?.$defs ?? {};
  const { schema } = resolve(inputSchema, defs);
  if (schema.type !== "object" || !schema.properties) return null;
  const fields = objectFields(schema, defs, [], undefined);
  return { nodes: fields.map(([, f]) => f.node), read: () => readObject(fields) };
}
