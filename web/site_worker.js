// @ts-check
// The site's service worker (worker/service_worker.js, served as <base>sw.js), from the page's
// side: where it is, its registration, and the one reload that makes a page cross-origin isolated
// on a host that sends no COOP/COEP headers. Every URL here comes from this module's own URL, so
// the site works from `/` or from any sub-path (a GitHub Pages project site, `/a/b/`).
//
//   import { registerSiteWorker, reloadWhenIsolating } from "./site_worker.js";

import { runtimeBase } from "./runtime_base.js";
import { trustedScriptURL } from "./trusted_types.js";

/** Replaced by csi-web/vite's transform with where it writes the service worker. @type {string|null} */
const BUNDLED_SERVICE_WORKER = null;

/**
 * The service worker's default URL: `sw.js` in the site's root (`<base>`, the folder of web/ and
 * worker/), or where csi-web/vite wrote it. Its scope is its folder.
 */
export function serviceWorkerUrl() {
  if (BUNDLED_SERVICE_WORKER !== null) return new URL(BUNDLED_SERVICE_WORKER, document.baseURI);
  return new URL("sw.js", runtimeBase());
}
/** The sessionStorage key that says this tab already reloaded once to be isolated. */
const RELOADED = "csi-isolation-reload";

/**
 * Register the site's service worker, with the scope of its folder.
 * @param {ServiceWorkerContainer} container
 * @param {string|URL} [url] another URL of it (relative to the page); default {@link serviceWorkerUrl}
 * @returns {Promise<ServiceWorkerRegistration>}
 */
export function registerSiteWorker(container, url) {
  const script = new URL(url ?? serviceWorkerUrl(), document.baseURI);
  return container.register(trustedScriptURL(script), { scope: new URL("./", script).href });
}

/**
 * The URL of the site's OpenAI-compatible endpoint (`<base>v1`, no trailing slash), served by the
 * service worker at `serviceWorkerUrl`.
 * @param {string|URL} [url] the service worker's URL; default {@link serviceWorkerUrl}
 */
export function v1Url(url) {
  return new URL("v1", new URL(url ?? serviceWorkerUrl(), document.baseURI)).href;
}

/**
 * Reload the page once, by itself, when it is not cross-origin isolated but the service worker that
 * controls it (now, or once it takes over) adds the isolation headers: the page it then serves is
 * isolated (threads for the models, SharedArrayBuffer for Python's interrupts). Never when the page
 * is isolated already (the host sends COOP/COEP), in a frame whose top page is not isolated (its
 * reload would not isolate it), where sessionStorage is refused, nor a second time in a tab
 * (no reload loops: a page still not isolated after its reload stays as it is).
 * @param {ServiceWorkerContainer} container
 * @returns {boolean} whether the page may reload (it waits for the service worker's word)
 */
export function reloadWhenIsolating(container) {
  if (globalThis.crossOriginIsolated) {
    forgetReload();
    return false;
  }
  // (a browser without cross-origin isolation has no `crossOriginIsolated` at all)
  if (!("crossOriginIsolated" in globalThis) || !topIsolated() || reloadedBefore()) return false;
  /** @param {MessageEvent} e */
  const onMessage = (e) => {
    if (e.data?.type !== "csi-site-version" || e.data?.isolates !== true) return;
    if (!container.controller || e.source !== container.controller || reloadedBefore()) return;
    try {
      sessionStorage.setItem(RELOADED, String(Date.now()));
    } catch {
      return; // no guard against a loop: no reload
    }
    container.removeEventListener("message", onMessage);
    location.reload();
  };
  container.addEventListener("message", onMessage);
  const ask = () => container.controller?.postMessage({ type: "csi-site-version" });
  container.addEventListener("controllerchange", ask);
  container.startMessages();
  ask();
  return true;
}

/** Whether this is the top page, or a frame of an isolated page of the same origin. */
function topIsolated() {
  if (window.top === window) return true;
  try {
    return Boolean(/** @type {Window} */ (window.top).crossOriginIsolated);
  } catch {
    return false; // a page of another origin holds this frame: not ours to reload
  }
}

/** Whether this tab reloaded once for isolation already (true where sessionStorage is refused). */
function reloadedBefore() {
  try {
    return sessionStorage.getItem(RELOADED) !== null;
  } catch {
    return true;
  }
}

/** The page is isolated: a later load that is not may reload again. */
function forgetReload() {
  try {
    sessionStorage.removeItem(RELOADED);
  } catch {
    // storage refused: nothing was kept
  }
}
