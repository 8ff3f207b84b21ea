// @ts-check
// Offline use, the page's side: register the site's service worker (<base>sw.js), which keeps the
// app shell and the runtime in Cache Storage (worker/service_worker.js), and tell the person when a
// new version of the site took over. The version this browser last ran is kept in localStorage,
// so a version installed while no page of the site was open is announced on the next visit.
// On a host that sends no COOP/COEP headers, the page reloads once when the service worker takes
// over, to be cross-origin isolated (web/site_worker.js); `{isolate: false}` opts out.
//
//   import { startOffline } from "./web/offline.js";
//   await startOffline(document.body);

import { registerSiteWorker, reloadWhenIsolating } from "./site_worker.js";

/** The localStorage key of the site version this browser last ran. */
const SEEN = "csi-site-version";

/**
 * Register the service worker and watch its version; `root` gets the update notice and the
 * attribute `data-site-version` (the version of the service worker that controls the page).
 * @param {HTMLElement} root
 * @param {{serviceWorkerUrl?: string|URL, isolate?: boolean}} [options] `serviceWorkerUrl`: default
 *   `<base>sw.js` (beside this module's folder); `isolate: false`: never reload the page to be isolated
 * @returns {Promise<ServiceWorkerRegistration|null>} null where the page cannot use a service worker
 */
export async function startOffline(root, options = {}) {
  const container = navigator.serviceWorker;
  if (!container) return null;
  if (options.isolate !== false) reloadWhenIsolating(container);
  // the page came from this service worker's version: another one taking over makes it out of date
  const loadedFrom = container.controller;
  container.addEventListener("message", (e) => {
    const type = e.data?.type;
    if (typeof e.data?.version !== "string") return;
    const stale = !!loadedFrom && e.source !== loadedFrom;
    // a reply of the service worker that controlled the page before an update is out of date
    if (type === "csi-site-version" && e.source === container.controller) learn(root, e.data.version, stale);
    else if (type === "csi-site-updated") learn(root, e.data.version, stale);
  });
  container.startMessages(); // (messages wait until then, or until the document is loaded)
  const ask = () => container.controller?.postMessage({ type: "csi-site-version" });
  container.addEventListener("controllerchange", ask);
  ask();
  const registration = await registerSiteWorker(container, options.serviceWorkerUrl);
  registration.update().catch(() => {}); // offline: the stored version goes on serving
  return registration;
}

/**
 * @param {HTMLElement} root @param {string} version
 * @param {boolean} live whether it took over while this page runs (the page is the version before)
 */
function learn(root, version, live) {
  if (version === "dev") return;
  root.dataset.siteVersion = version;
  let seen = null;
  try {
    seen = localStorage.getItem(SEEN);
    localStorage.setItem(SEEN, version);
  } catch {
    // storage refused (a sandboxed frame): nothing to compare with
  }
  if (seen && seen !== version) showNotice(root, version, live);
}

/** @param {HTMLElement} root @param {string} version @param {boolean} live */
function showNotice(root, version, live) {
  root.querySelector(".update-notice")?.remove();
  const notice = document.createElement("div");
  notice.className = "update-notice";
  notice.setAttribute("role", "status");
  const text = document.createElement("span");
  text.textContent = `csi-web was updated (version ${version}).${live ? " Reload to use it." : ""}`;
  notice.append(text);
  if (live) {
    const reload = document.createElement("button");
    reload.type = "button";
    reload.textContent = "Reload";
    reload.addEventListener("click", () => location.reload());
    notice.append(reload);
  }
  const close = document.createElement("button");
  close.type = "button";
  close.className = "dismiss";
  close.textContent = "×";
  close.setAttribute("aria-label", "Dismiss");
  close.addEventListener("click", () => notice.remove());
  notice.append(close);
  root.append(notice);
}
