// Where in a skill's source an engine error points: "line N: …" of a register error, or the last
// frame of the skill's own module in a run error's traceback.

/**
 * The line a failed `skills.register` names (syntax, import and loading errors), if any.
 * @param {{param?: string|null, message: string}} error
 * @returns {{line: number, message: string}|null}
 */
export function registerErrorLine(error) {
  if (error.param !== "source") return null;
  const m = /^line (\d+): ([\s\S]*)$/.exec(error.message);
  return m ? { line: Number(m[1]), message: m[2] } : null;
}

/**
 * The deepest line of skill `name`'s own source in a traceback (`File "<skill name>", line N`).
 * @param {string} message @param {string} name
 * @returns {{line: number, message: string}|null}
 */
export function tracebackLine(message, name) {
  const frame = /File "<skill ([^>"]+)>", line (\d+)/g;
  let line = 0;
  for (const m of message.matchAll(frame)) {
    if (m[1] === name) line = Number(m[2]);
  }
  if (!line) return null;
  const lines = message.trim().split("\n");
  return { line, message: lines[lines.length - 1] || lines[0] };
}
