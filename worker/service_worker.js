// @ts-check
// The site's service worker: an OpenAI-compatible HTTP endpoint at /v1/ for every tab and iframe
// of the site, answered by an engine that runs in one of its pages (web/v1_host.js), over a
// MessageChannel. Nothing here loads a model: with no page holding an engine, /v1/ answers 503.
//
// Host protocol (page <-> here, on the page's port):
//   here -> page  {type: "request", id, method, path, body}   body: the request's text
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

sw.addEventListener("install", () => sw.skipWaiting());
sw.addEventListener("activate", (event) => event.waitUntil(sw.clients.claim()));

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
  }
});

sw.addEventListener("fetch", (event) => {
  const url = new URL(event.request.url);
  if (url.origin !== sw.location.origin || !url.pathname.startsWith("/v1/")) return;
  event.respondWith(answer(event.request, url));
});

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

/** @param {Request} request @param {URL} url @returns {Promise<Response>} */
async function answer(request, url) {
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
  port.postMessage({ type: "request", id, method: request.method, path: url.pathname + url.search, body });
  // a host page closed mid-request never answers: end the request with a 503 instead
  const watch = setInterval(async () => {
    if (!pending.has(id)) clearInterval(watch);
    else if (!(await sw.clients.get(hostId))) dropHost(hostId, "the page holding the engine closed");
  }, HOST_CHECK_MS);
  const h = await head;
  return new Response(stream, { status: h.status, headers: h.headers });
}
