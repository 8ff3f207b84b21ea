// @ts-check
// Load progress as WebLLM reports it, worked out from the worker's progress events. Pure: no DOM,
// no worker, no clock (the caller says how long the load has run), so node can test it.
//
// Semantics: only the files of models whose plan came count (a plan lists every file of a model
// and its size); a file no plan announced adds to the total as it starts. `progress` is loaded
// bytes over total bytes, at most 0.99 until the last model is ready (then 1), and never goes
// backwards.

/**
 * @typedef {import("../../worker/protocol.js").Progress} Progress
 * @typedef {{stage: string, file: string|null, loaded: number, total: number, model: string|null,
 *            progress: number, bytesLoaded: number, bytesTotal: number, timeElapsed: number,
 *            text: string}} InitProgressReport
 *   WebLLM's report (`progress` from 0 to 1, never backwards; `timeElapsed` in seconds; `text`),
 *   with the event it follows: `stage`, `file` and that file's `loaded`/`total` bytes, and
 *   `bytesLoaded`/`bytesTotal` over all the files of the load.
 * @typedef {{loaded: number, total: number}} FileBytes
 */

/** @param {number} n bytes @returns {string} megabytes with one decimal */
const mb = (n) => (n / 1e6).toFixed(1);

/** The reports of one load: feed it each progress event in order. */
export class LoadProgress {
  /** @param {string|undefined} lastModel the model whose `ready` ends the load */
  constructor(lastModel) {
    this.lastModel = lastModel;
    /** @type {Map<string, Map<string, FileBytes>>} bytes per file, per model */
    this.models = new Map();
    /** @type {Set<string>} models whose plan came: only they count */
    this.planned = new Set();
    /** the progress reported last */
    this.shown = 0;
  }

  /**
   * The report that follows event `p`.
   * @param {Progress} p @param {number} timeElapsed seconds since the load started
   * @returns {InitProgressReport}
   */
  next(p, timeElapsed) {
    const model = String(p.model);
    const files = this.models.get(model) ?? new Map();
    this.models.set(model, files);
    if (p.stage === "plan" && p.files && typeof p.files === "object") {
      this.planned.add(model);
      for (const [file, size] of Object.entries(p.files)) {
        if (!files.has(file)) files.set(file, { loaded: 0, total: Number(size) || 0 });
      }
    } else if (p.file && p.stage === "progress") {
      files.set(p.file, { loaded: p.loaded || 0, total: p.total || 0 });
    }
    let bytesLoaded = 0;
    let bytesTotal = 0;
    for (const m of this.planned) {
      for (const f of this.models.get(m)?.values() ?? []) {
        bytesLoaded += f.loaded;
        bytesTotal += f.total;
      }
    }
    const done = p.stage === "ready" && p.model === this.lastModel;
    this.shown = done ? 1 : Math.max(this.shown, bytesTotal ? Math.min(0.99, bytesLoaded / bytesTotal) : 0);
    return {
      ...p,
      progress: this.shown,
      bytesLoaded,
      bytesTotal,
      timeElapsed,
      text: `${p.stage}${p.file ? ` ${p.file}` : ""}${p.model ? ` (${p.model})` : ""}` +
        (bytesTotal ? `: ${mb(bytesLoaded)} of ${mb(bytesTotal)} MB` : ""),
    };
  }
}
