// @ts-check
// Where the Prompt API facade's sessions get their engine: the one the app configured, or one the
// facade creates on first use (in its own module worker) and shares between its sessions. It also
// answers the model part of `availability()` and turns the engine's load progress into the
// Prompt API's `downloadprogress` fractions.

import { MLCEngine } from "./engine.js";
import { LoadProgress } from "./client/load_progress.js";
import { hasModelInCache } from "./model_cache.js";

/**
 * @typedef {import("./engine.js").WebWorkerEngine} WebWorkerEngine
 * @typedef {"unavailable"|"downloadable"|"downloading"|"available"} Availability
 * @typedef {{model?: string, engine?: WebWorkerEngine, device?: "wasm"|"webgpu"|"auto",
 *            languages?: string[], maxTokens?: number}} FacadeConfig
 *   `model`: the model sessions talk to (default `smollm2-135m-instruct`, the built-in instruct
 *   model); `engine`: an engine the app made (web/engine.js), used as it is, with `model` one of
 *   its loaded models (left out: its one chat model); `device`: where a facade-made engine runs;
 *   `languages`: the languages the model reads and writes (BCP 47; default English for every model);
 *   `maxTokens`: the longest reply (default: the rest of the context window).
 */

/** The built-in instruct model, a session's model unless configured otherwise. */
export const DEFAULT_MODEL = "smollm2-135m-instruct";
/** The languages a model is taken to handle when the configuration names none. */
export const DEFAULT_LANGUAGES = Object.freeze(["en"]);

/**
 * `LanguageModel.configure()`'s configuration checked (TypeErrors), its languages canonical.
 * @param {any} config
 * @returns {FacadeConfig}
 */
export function checkedConfig(config) {
  if (!config || typeof config !== "object") throw new TypeError("the configuration is an object");
  const { model, engine, device, languages, maxTokens } = config;
  if (model !== undefined && (typeof model !== "string" || !model)) throw new TypeError("model must be a model id");
  if (engine !== undefined && typeof engine?.chatTokens !== "function") {
    throw new TypeError("engine must be a csi-web engine (web/engine.js)");
  }
  if (device !== undefined && !["wasm", "webgpu", "auto"].includes(device)) {
    throw new TypeError('device must be "wasm", "webgpu" or "auto"');
  }
  if (maxTokens !== undefined && !(Number.isSafeInteger(maxTokens) && maxTokens > 0)) {
    throw new TypeError("maxTokens must be a positive integer");
  }
  const canonical = languages === undefined ? undefined : Intl.getCanonicalLocales(languages);
  return { model, engine, device, languages: canonical, maxTokens };
}

/** An engine for the facade's sessions, and what is known of its model. */
export class EngineSource {
  /** @param {FacadeConfig} [config] */
  constructor(config = {}) {
    /** @type {FacadeConfig} */
    this.config = { ...config };
    /** @type {Promise<WebWorkerEngine>|null} the facade's own engine, loading or loaded */
    this.loading = null;
    this.loaded = false;
    /** which configuration the load under way belongs to */
    this.epoch = 0;
    /** @type {Set<(fraction: number) => void>} who follows the load under way */
    this.followers = new Set();
  }

  /** @param {FacadeConfig} config */
  configure(config) {
    this.config = { ...config };
    this.epoch++;
    this.loading = null; // sessions made before keep their engine; new ones get the new choice
    this.loaded = false;
  }

  /** The model id requests name (undefined: the app's engine's one chat model). */
  get model() {
    return this.config.model ?? (this.config.engine ? undefined : DEFAULT_MODEL);
  }

  get languages() {
    return this.config.languages ?? [...DEFAULT_LANGUAGES];
  }

  /**
   * Whether sessions can be created now, after a load already under way, after a download, or not.
   * @returns {Promise<Availability>}
   */
  async availability() {
    if (typeof WebAssembly !== "object" || typeof Worker !== "function") return "unavailable";
    const { engine } = this.config;
    if (engine) {
      const model = this.model;
      return model === undefined || engine.modelIds.includes(model) ? "available" : "unavailable";
    }
    if (this.loaded) return "available";
    if (this.loading) return "downloading";
    const cached = await hasModelInCache(/** @type {string} */ (this.model)).catch(() => false);
    return cached ? "available" : "downloadable";
  }

  /**
   * The engine, loading the model first if need be; `progress` receives the load's fraction
   * (0 to 1, never backwards) while it lasts.
   * @param {(fraction: number) => void} progress
   * @returns {Promise<WebWorkerEngine>}
   */
  async acquire(progress) {
    if (this.config.engine) return this.config.engine;
    if (!this.loading) this.loading = this.load(/** @type {string} */ (this.model));
    const loading = this.loading;
    this.followers.add(progress);
    try {
      return await loading;
    } finally {
      this.followers.delete(progress);
    }
  }

  /** @param {string} model @returns {Promise<WebWorkerEngine>} */
  async load(model) {
    const engine = new MLCEngine({ device: this.config.device ?? "wasm" });
    const reports = new LoadProgress(model);
    const started = performance.now();
    const epoch = this.epoch;
    try {
      await engine.reload(model, undefined, {
        progress: (p) => {
          const { progress } = reports.next(p, (performance.now() - started) / 1000);
          for (const follow of this.followers) follow(progress);
        },
      });
    } catch (err) {
      engine.terminate();
      if (this.epoch === epoch) this.loading = null;
      throw err;
    }
    if (this.epoch === epoch) this.loaded = true;
    return engine;
  }
}
