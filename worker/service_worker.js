// @ts-check
// The site's service worker: an OpenAI-compatible HTTP endpoint at <base>v1/ for every tab and
// iframe of the site, answered by an engine that runs in one of its pages (web/v1_host.js), over a
// MessageChannel. Nothing here loads a model: with no page holding an engine, v1/ answers 503.
// <base> is where this script sits (the site's root: `/`, or a sub-path such as `/a/b/`); every
// path below is relative to it.
//
// Cross-origin isolation on any static host: the site's files it answers (its pages and worker
// scripts among them) get COOP `same-origin`, COEP `require-corp` and CORP `same-origin` unless
// the host sent those headers itself. A page it controls is then crossOriginIsolated (threads,
// SharedArrayBuffer) on a host that sends no such headers; the first load, before it controls the
// page, is not (web/isolation.js reloads the page once then).
//
// It also keeps the site for offline use: the app shell and runtime that site-manifest.json lists
// (written by buildtools/site/assemble.py, which stamps SITE_VERSION below) are stored when a version
// installs, in the cache "csi-site-<version>", and answered from it first; the files it lists as
// "lazy" (the language data, the wheels of the packages skills import) are stored there once
// fetched. Models are not stored here: the worker's transformers.js keeps every model file it
// loads in "transformers-cache".
//
// Host protocol (page <-> here, on the page's port):
//   here -> page  {type: "request", id, method, path, body}   path: "/v1/...", from <base>; body: the request's text
//   here -> page  {type: "abort", id}                          the HTTP request was aborted
//   page -> here  {type: "head", id, status, headers}
//   page -> here  {type: "data", id, text}                     part of the body (SSE events)
//   page -> here  {type: "end", id}

/** @type {ServiceWorkerGlobalScope} */
const sw = /** @type {any} */ (self);

/** How long a request waits for a page to offer its engine before the 503. */
const HOST_WAIT_MS = 3000;
/** How often a request under way checks that its host page is still open. */
const HOST_CHECK_MS = 2000;

/** @type {Map<string, MessagePort>} the hosting pages' ports, by client id */
const hosts = new Map();
/** @type {Map<string, {host: string, head: (h: any) => void, controller: ReadableStreamDefaultController<Uint8Array>|null, ended: boolean, sse: boolean}>} */
const pending = new Map();
/** @type {Array<() => void>} requests waiting for a host */
const waiting = [];
const encoder = new TextEncoder();

/** The site's version; buildtools/site/assemble.py stamps it (the digest of site-manifest.json's files). */
const SITE_VERSION = "dev";
const SITE_PREFIX = "csi-site-";
const SITE_CACHE = SITE_PREFIX + SITE_VERSION;
/** The site's root (the service worker sits at it), and the manifest's key in a version's cache. */
const BASE = new URL("./", sw.location.href);
const MANIFEST_KEY = new URL("site-manifest.json", BASE).href;
/** The paths site-manifest.json can list, the site's pages among them; other requests (models, bench
 * pages) go to the network untouched. */
const SITE_PATHS = /^(|index\.html|(web|app|worker|vendor|wheels|lang|skills)\/.+|models\/models\.json)$/;
/** Files fetched at once while a version installs. */
const PARALLEL = 4;
/** The headers that make a page cross-origin isolated, set where the host did not send them. */
const ISOLATION = [["Cross-Origin-Opener-Policy", "same-origin"], ["Cross-Origin-Embedder-Policy", "require-corp"],
  ["Cross-Origin-Resource-Policy", "same-origin"]];
/** The requests whose responses need COEP of their own to run in an isolated page (besides navigations). */
const OWN_POLICY = new Set(["worker", "sharedworker"]);

/** @typedef {{version: string, files: Record<string, string>, lazy: Record<string, string>}} SiteManifest */
/** @type {Promise<SiteManifest|null>|null} this version's manifest, read once from its cache */
let manifest = null;

sw.addEventListener("install", (event) => {
  sw.skipWaiting();
  event.waitUntil(precache().catch(async (err) => {
    // an update that cannot store its files fails (the version before stays); a first install
    // goes on without them, so that /v1/ works
    if ((await earlierVersions()).length) throw err;
    console.warn(`csi-web will not work offline: ${err}`);
  }));
});
sw.addEventListener("activate", (event) => event.waitUntil(takeOver()));

sw.addEventListener("message", (event) => {
  const source = /** @type {Client|null} */ (event.source);
  if (!source) return;
  if (event.data?.type === "csi-v1-host" && event.ports[0]) {
    const port = event.ports[0];
    hosts.set(source.id, port);
    port.onmessage = (e) => fromHost(e.data);
    for (const wake of waiting.splice(0)) wake();
  } else if (event.data?.type === "csi-v1-leave") {
    dropHost(source.id, "the page holding the engine left");
  } else if (event.data?.type === "csi-site-version") {
    // isolates: the pages it controls get the isolation headers (web/isolation.js may reload for them)
    source.postMessage({ type: "csi-site-version", version: SITE_VERSION, isolates: true });
  }
});

sw.addEventListener("fetch", (event) => {
  const request = event.request;
  const url = new URL(request.url);
  // other origins (the Hub) and this origin's other sites pass untouched
  if (url.origin !== sw.location.origin || !url.pathname.startsWith(BASE.pathname)) return;
  const path = decodeURIComponent(url.pathname.slice(BASE.pathname.length));
  if (path.startsWith("v1/")) {
    event.respondWith(answer(request, `/${path}${url.search}`));
    return;
  }
  // other paths pass untouched: models and the like need no header to load in an isolated page,
  // and pages that are not this site's (another site under this scope) are not ours to change
  if (request.method !== "GET" || !SITE_PATHS.test(path)) return;
  if (SITE_VERSION !== "dev") {
    const key = new URL(path || "index.html", BASE).href; // query strings name the same file
    event.respondWith(fromSite(event, key).then(isolated));
  } else if (request.mode === "navigate" || OWN_POLICY.has(request.destination)) {
    event.respondWith(fetch(request).then(isolated));
  }
});

/**
 * `response` with the isolation headers the host did not send. Opaque responses (status 0: another
 * origin's, or a redirect a navigation follows itself) are returned as they are; the body streams.
 * @param {Response} response @returns {Response}
 */
function isolated(response) {
  if (response.status === 0) return response;
  const missing = ISOLATION.filter(([name]) => !response.headers.has(name));
  if (!missing.length) return response;
  const headers = new Headers(response.headers);
  for (const [name, value] of missing) headers.set(name, value);
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
}

/** Store this version's files: unchanged ones are copied from an earlier version's cache, the rest fetched. */
async function precache() {
  if (SITE_VERSION === "dev") return; // not built by buildtools/site/assemble.py: nothing to keep
  const response = await fetch(new URL(`site-manifest.json?v=${SITE_VERSION}`, BASE), { cache: "no-store" });
  if (!response.ok) throw new Error(`site-manifest.json: HTTP ${response.status}`);
  /** @type {SiteManifest} */
  const site = await response.json();
  if (site.version !== SITE_VERSION) throw new Error(`site-manifest.json is version ${site.version}, not ${SITE_VERSION}`);
  const cache = await caches.open(SITE_CACHE);
  const earlier = await earlierVersions();
  const todo = Object.entries(site.files);
  const worker = async () => {
    for (let item = todo.pop(); item; item = todo.pop()) {
      const key = new URL(item[0], BASE).href;
      if (await cache.match(key)) continue; // an install that was interrupted
      const kept = await keptFile(earlier, item[0], item[1]);
      const r = kept ?? (await fetch(key, { cache: "no-cache" }));
      if (!r.ok) throw new Error(`${item[0]}: HTTP ${r.status}`);
      await cache.put(key, r);
    }
  };
  await Promise.all(Array.from({ length: PARALLEL }, worker));
  for (const [path, digest] of Object.entries(site.lazy)) { // kept once fetched: keep them across versions
    const kept = await keptFile(earlier, path, digest);
    if (kept) await cache.put(new URL(path, BASE).href, kept);
  }
  await cache.put(MANIFEST_KEY, Response.json(site)); // last: a cache with a manifest is complete
}

/** @returns {Promise<Array<{cacheName: string, site: SiteManifest}>>} the earlier versions still stored */
async function earlierVersions() {
  const found = [];
  for (const cacheName of await caches.keys()) {
    if (!cacheName.startsWith(SITE_PREFIX) || cacheName === SITE_CACHE) continue;
    const site = await (await caches.match(MANIFEST_KEY, { cacheName }))?.json();
    if (site) found.push({ cacheName, site });
  }
  return found;
}

/**
 * The file `path` as an earlier version stored it, when its digest is `digest`.
 * @param {Array<{cacheName: string, site: SiteManifest}>} earlier @param {string} path @param {string} digest
 */
async function keptFile(earlier, path, digest) {
  for (const { cacheName, site } of earlier) {
    if ((site.files[path] ?? site.lazy[path]) !== digest) continue;
    const hit = await caches.match(new URL(path, BASE).href, { cacheName });
    if (hit) return hit;
  }
  return null;
}

/** Drop earlier versions, control the open pages, and tell them when this version replaced one. */
async function takeOver() {
  const earlier = (await caches.keys()).filter((n) => n.startsWith(SITE_PREFIX) && n !== SITE_CACHE);
  for (const name of earlier) await caches.delete(name);
  await sw.clients.claim();
  if (!earlier.length || SITE_VERSION === "dev") return;
  for (const client of await sw.clients.matchAll({ type: "window", includeUncontrolled: true })) {
    client.postMessage({ type: "csi-site-updated", version: SITE_VERSION });
  }
}

/** @returns {Promise<SiteManifest|null>} */
function siteManifest() {
  manifest ??= caches.match(MANIFEST_KEY, { cacheName: SITE_CACHE }).then((r) => r?.json() ?? null);
  return manifest.then((site) => {
    if (!site) manifest = null; // not stored yet: read it again next time
    return site;
  });
}

/**
 * A site file: from this version's cache, else from the network (then stored, if the manifest lists it).
 * @param {FetchEvent} event @param {string} key the file's URL without query
 */
async function fromSite(event, key) {
  const range = event.request.headers.get("range");
  // (caches.open would make the cache again when a newer version deleted it)
  const hit = await caches.match(key, { cacheName: SITE_CACHE });
  if (hit) return range ? partial(hit, range) : hit;
  const response = await fetch(event.request);
  if (response.status === 200 && !range) {
    const path = key.slice(BASE.href.length);
    const site = await siteManifest();
    if (site && (path in site.files || path in site.lazy)) event.waitUntil(keep(key, response.clone()));
  }
  return response;
}

/** Store a response in this version's cache, unless a newer version deleted it. @param {string} key @param {Response} response */
async function keep(key, response) {
  if (await caches.has(SITE_CACHE)) await (await caches.open(SITE_CACHE)).put(key, response);
}

/**
 * The bytes a Range header asks for (one range, as `bytes=a-b`, `bytes=a-` or `bytes=-n`) of a stored file.
 * @param {Response} whole @param {string} range
 */
async function partial(whole, range) {
  const body = await whole.blob();
  const m = /^bytes=(\d*)-(\d*)$/.exec(range.trim());
  let start = m?.[1] ? Number(m[1]) : NaN;
  let end = m?.[2] ? Number(m[2]) : body.size - 1;
  if (m && !m[1] && m[2]) [start, end] = [Math.max(0, body.size - Number(m[2])), body.size - 1];
  if (!m || !(start >= 0) || start > end || start >= body.size) {
    return new Response(null, { status: 416, headers: { "content-range": `bytes */${body.size}` } });
  }
  end = Math.min(end, body.size - 1);
  const headers = new Headers(whole.headers);
  headers.set("content-range", `bytes ${start}-${end}/${body.size}`);
  headers.set("content-length", String(end - start + 1));
  return new Response(body.slice(start, end + 1), { status: 206, headers });
}

/** @param {any} msg */
function fromHost(msg) {
  const p = pending.get(msg?.id);
  if (!p) return;
  if (msg.type === "head") {
    p.sse = String(msg.headers?.["content-type"] ?? "").startsWith("text/event-stream");
    p.head(msg);
  }
  else if (msg.type === "data" && p.controller && !p.ended) p.controller.enqueue(encoder.encode(msg.text));
  else if (msg.type === "end") finish(msg.id);
}

/** @param {string} id */
function finish(id) {
  const p = pending.get(id);
  if (!p) return;
  pending.delete(id);
  if (!p.ended) {
    p.ended = true;
    try {
      p.controller?.close();
    } catch {
      // the reader is gone
    }
  }
}

/** @param {string} hostId @param {string} why */
function dropHost(hostId, why) {
  hosts.delete(hostId);
  for (const [id, p] of pending) {
    if (p.host !== hostId) continue;
    p.head({ status: 503, headers: { "content-type": "application/json" } }); // no effect once a head was sent
    const text = JSON.stringify(errorBody(why, "engine_unavailable"));
    if (!p.ended) p.controller?.enqueue(encoder.encode(p.sse ? `data: ${text}\n\n` : text));
    finish(id);
  }
}

/** A live host: the first whose page is still open; pages are asked to offer one if there is none. */
async function findHost() {
  for (let attempt = 0; attempt < 2; attempt++) {
    for (const id of [...hosts.keys()]) {
      if (await sw.clients.get(id)) return id;
      dropHost(id, "the page holding the engine closed");
    }
    if (attempt) break;
    const arrived = new Promise((resolve) => {
      waiting.push(() => resolve(true));
      setTimeout(() => resolve(false), HOST_WAIT_MS);
    });
    for (const client of await sw.clients.matchAll({ type: "window" })) client.postMessage({ type: "csi-v1-need-host" });
    await arrived;
  }
  return null;
}

/**
 * @param {string} message @param {string} code @param {string|null} [param]
 * @returns {{error: {message: string, type: string, param: string|null, code: string}}}
 */
function errorBody(message, code, param = null) {
  return { error: { message, type: "server_error", param, code } };
}

/**
 * A request to v1/, answered by a page's engine.
 * @param {Request} request @param {string} path its path and query from the base, as "/v1/..."
 * @returns {Promise<Response>}
 */
async function answer(request, path) {
  const hostId = await findHost();
  if (!hostId) {
    return Response.json(errorBody("no page of this site holds an engine: open one (index.html, or a page that "
      + "calls serveV1(engine)) and retry", "engine_unavailable"), { status: 503 });
  }
  const port = /** @type {MessagePort} */ (hosts.get(hostId));
  const id = crypto.randomUUID();
  const body = request.method === "GET" || request.method === "HEAD" ? "" : await request.text();
  /** @type {Promise<any>} */
  const head = new Promise((resolve) => {
    pending.set(id, { host: hostId, head: resolve, controller: null, ended: false, sse: false });
  });
  const abort = () => {
    if (pending.has(id)) port.postMessage({ type: "abort", id });
  };
  request.signal?.addEventListener("abort", abort, { once: true });
  const stream = new ReadableStream({
    start(controller) {
      const p = pending.get(id);
      if (p) p.controller = controller;
    },
    cancel() {
      abort();
      const p = pending.get(id);
      if (p) p.ended = true;
    },
  });
  port.postMessage({ type: "request", id, method: request.method, path, body });
  // a host page closed mid-request never answers: end the request with a 503 instead
  const watch = setInterval(async () => {
    if (!pending.has(id)) clearInterval(watch);
    else if (!(await sw.clients.get(hostId))) dropHost(hostId, "the page holding the engine closed");
  }, HOST_CHECK_MS);
  const h = await head;
  return new Response(stream, { status: h.status, headers: h.headers });
}
