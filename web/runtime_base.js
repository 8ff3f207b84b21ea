// @ts-check
// Where csi-web's runtime files are served: the folder that holds worker/, vendor/ and wheels/
// (the site's root, or node_modules/csi-web/ in an app that serves its packages as they are), and
// where models come from by default (models/ next to the page).
//
// The relative path is not written as a literal `new URL("...", import.meta.url)`: bundlers rewrite
// those into one hashed asset, which would cut the worker off from the files beside it. An app that
// bundles csi-web copies the runtime folder whole (csi-web/vite does it) and names it here.

/** Replaced by csi-web/vite's transform with the folder it copies the runtime to. @type {string|null} */
const BUNDLED_RUNTIME = null;
const PARENT = ["..", ""].join("/");

/** The page's URL (a worker's own, where there is no document). */
const pageUrl = () => (typeof document !== "undefined" ? document.baseURI : globalThis.location?.href);

/**
 * The runtime folder's URL: `runtimeUrl` when given, else the one a bundler plugin set, else this
 * module's package (web/..).
 * @param {string|URL|null} [runtimeUrl]
 */
export function runtimeBase(runtimeUrl = null) {
  if (runtimeUrl != null) return new URL(String(runtimeUrl).replace(/\/?$/, "/"), pageUrl());
  if (BUNDLED_RUNTIME !== null) return new URL(BUNDLED_RUNTIME, pageUrl());
  return new URL(PARENT, import.meta.url);
}

/**
 * The URL of the module worker to start: `worker/worker.js` of the runtime, told where models are
 * (its `models` query parameter; the worker's default is the runtime's own models/).
 * @param {{runtimeUrl?: string|URL|null, modelsUrl?: string|URL|null}} [where]
 */
export function workerUrl(where = {}) {
  const url = new URL("worker/worker.js", runtimeBase(where.runtimeUrl));
  const models = modelsBase(where.modelsUrl);
  if (models !== null) url.searchParams.set("models", models.href);
  return url;
}

/**
 * Where models are looked for first: `modelsUrl` when given, else models/ next to the page (the
 * worker falls back to the runtime's own models/, then to the Hub).
 * @param {string|URL|null} [modelsUrl]
 * @returns {URL|null}
 */
export function modelsBase(modelsUrl = null) {
  const page = pageUrl();
  if (!page) return null;
  return new URL(modelsUrl == null ? "models/" : String(modelsUrl).replace(/\/?$/, "/"), page);
}
