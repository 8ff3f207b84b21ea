// @ts-check
// The Prompt API facade (prompt_api.js) as the page's `globalThis.LanguageModel`: what
// `installLanguageModel` does.

/** @typedef {import("./prompt_api_engine.js").FacadeConfig} FacadeConfig */

/**
 * `installLanguageModel` (prompt_api.js) of the facade `LanguageModel`.
 * @param {typeof import("./prompt_api.js").LanguageModel} LanguageModel
 * @param {FacadeConfig} [config] @param {{replace?: "unavailable"|"never"|"always"}} [options]
 * @returns {Promise<any>}
 */
export async function install(LanguageModel, config, options = {}) {
  const replace = options.replace ?? "unavailable";
  if (!["unavailable", "never", "always"].includes(replace)) {
    throw new TypeError('replace must be "unavailable", "never" or "always"');
  }
  if (config !== undefined) LanguageModel.configure(config);
  const g = /** @type {any} */ (globalThis);
  const native = g.LanguageModel;
  let put = native === undefined || native === LanguageModel || replace === "always";
  if (!put && replace === "unavailable") {
    put = await Promise.resolve().then(() => native.availability()).then((a) => a === "unavailable", () => true);
  }
  if (put) Object.defineProperty(g, "LanguageModel", { value: LanguageModel, writable: true, configurable: true });
  return g.LanguageModel;
}
