// @ts-check
// What the page client sends the worker: JSON text, checked first, so a value that cannot be
// JSON is refused on the page with an InvalidInputError naming its place instead of failing in
// postMessage, being dropped without a word by JSON.stringify, or reaching the worker as `null`.

/** Nesting the worker accepts (csi.worker.message.MAX_DEPTH); a message is 2 levels above its request. */
export const MAX_DEPTH = 100;

/** Fields of a too-deep value's path the error's text shows (its `param` is `message`, as the worker's). */
const DEPTH_SHOWN = 4;

/** @param {(string|number)[]} path */
function paramOf(path) {
  const rel = path[0] === "request" ? path.slice(1) : path;
  if (path[0] === "request" && !rel.length) return "request";
  let out = "";
  for (const p of rel) out += typeof p === "number" ? `[${p}]` : `${out ? "." : ""}${p}`;
  return out || "message";
}

/** @param {any} v */
function kindOf(v) {
  if (typeof v !== "object") return typeof v;
  if (ArrayBuffer.isView(v)) return v.constructor?.name ?? "typed array";
  return v.constructor?.name ?? "object";
}

export class MessageError extends Error {
  /** @param {string} message @param {string} param */
  constructor(message, param) {
    super(message);
    this.name = "InvalidInputError";
    this.param = param;
  }
}

/**
 * `message` as JSON text, or a {@link MessageError} naming the first value that is not plain JSON:
 * a function, symbol, BigInt, non-finite number, typed array, class instance (Map, Date, a port…),
 * a cycle, or nesting deeper than {@link MAX_DEPTH} (that one names `message`, as the worker does, and
 * shows the start of the path in its text). `undefined` object fields are left out, as
 * JSON.stringify does.
 * @param {Record<string, any>} message
 * @returns {string}
 */
export function encodeMessage(message) {
  const seen = new Set();
  /** @param {any} v @param {(string|number)[]} path */
  const check = (v, path) => {
    const param = paramOf(path);
    if (v === null || typeof v === "string" || typeof v === "boolean") return;
    if (typeof v === "number") {
      if (!Number.isFinite(v)) throw new MessageError(`\`${param}\` is ${v}: numbers must be finite`, param);
      return;
    }
    if (typeof v !== "object") throw new MessageError(`\`${param}\` is a ${typeof v}, not a JSON value`, param);
    if (path.length + 1 > MAX_DEPTH) {
      // the whole path would be ~MAX_DEPTH segments long: the text shows where it starts
      const start = paramOf(path.slice(0, path[0] === "request" ? DEPTH_SHOWN + 1 : DEPTH_SHOWN));
      throw new MessageError(`the message nests deeper than ${MAX_DEPTH} levels (at \`${start}…\`)`, "message");
    }
    if (seen.has(v)) throw new MessageError(`\`${param}\` refers back to itself: JSON has no cycles`, param);
    const proto = Object.getPrototypeOf(v);
    const isArray = Array.isArray(v);
    if (!isArray && proto !== Object.prototype && proto !== null) {
      throw new MessageError(`\`${param}\` is a ${kindOf(v)}: send plain JSON values (objects, arrays, strings, numbers)`, param);
    }
    seen.add(v);
    if (isArray) {
      for (let i = 0; i < v.length; i++) {
        if (v[i] === undefined) throw new MessageError(`\`${paramOf([...path, i])}\` is undefined`, paramOf([...path, i]));
        check(v[i], [...path, i]);
      }
    } else {
      for (const k of Object.keys(v)) if (v[k] !== undefined) check(v[k], [...path, k]);
      if (Object.getOwnPropertySymbols(v).length) throw new MessageError(`\`${param}\` has symbol keys`, param);
    }
    seen.delete(v);
  };
  check(message, []);
  return JSON.stringify(message);
}
