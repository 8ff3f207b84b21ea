// @ts-check
// Serve this page's engine at the site's v1/ endpoint (OpenAI's HTTP API, at `<base>v1/`, beside
// the site's service worker `<base>sw.js`): any tab or iframe of the site — or the `openai` client
// with `baseURL: new URL("v1", document.baseURI)` from a page at the site's root — then talks to
// the model loaded here.
//
//   import { serveV1 } from "./web/v1_host.js";
//   await serveV1(engine);

import { registerSiteWorker, v1Url } from "./site_worker.js";

/** HTTP status and OpenAI error `type` per engine error name. @type {Record<string, [number, string]>} */
const STATUS = {
  InvalidInputError: [400, "invalid_request_error"],
  ContextWindowExceededError: [400, "invalid_request_error"],
  ModelNotSupportedError: [404, "invalid_request_error"],
  NotFoundError: [404, "invalid_request_error"],
  ModelLoadError: [503, "server_error"],
  WorkerCrashedError: [503, "server_error"],
  NotSupportedError: [400, "invalid_request_error"],
};

/**
 * Whether this tab serves v1/, for the endpoint panel.
 * @typedef {{hosting: boolean, serviceWorker: boolean, models: string[], error: string|null, url: string}} V1Status
 *   `serviceWorker`: the site's service worker controls this page (its fetches of v1/ reach it);
 *   `url`: the endpoint's base URL (`<base>v1`, what the `openai` client takes as `baseURL`)
 */
/** @type {{engine: import("./engine.js").WebWorkerEngine|null, error: string|null, url: string|null}} */
const host = { engine: null, error: null, url: null };

/** This tab's part in /v1/ now: hosting (its engine is offered), the service worker's state, the models served. */
export function v1Status() {
  const container = typeof navigator !== "undefined" ? navigator.serviceWorker : undefined;
  /** @type {V1Status} */
  const status = {
    hosting: host.engine !== null,
    serviceWorker: Boolean(container?.controller),
    models: host.engine ? [...host.engine.modelIds] : [],
    error: host.error,
    url: host.url ?? v1Url(),
  };
  return status;
}

/** Error codes OpenAI uses, where one fits. */
const CODE = { ContextWindowExceededError: "context_length_exceeded", ModelNotSupportedError: "model_not_found" };

/**
 * The OpenAI error JSON of an engine error (or anything thrown).
 * @param {any} err @returns {{status: number, body: {error: {message: string, type: string, param: string|null, code: string|null}}}}
 */
export function httpError(err) {
  const name = err?.name ?? "InternalError";
  const [status, type] = STATUS[name] ?? [500, "server_error"];
  return {
    status,
    body: { error: { message: String(err?.message ?? err), type, param: err?.param ?? null,
      code: /** @type {Record<string, string>} */ (CODE)[name] ?? name } },
  };
}

/**
 * The call serving a stored response's route (`GET`/`DELETE /v1/responses/{id}`, `GET
 * .../input_items?after&limit&order`, `POST .../cancel`), or null for other routes.
 * @param {import("./engine.js").WebWorkerEngine} engine @param {string} route @param {string} search
 * @returns {(() => Promise<any>)|null}
 */
function storedResponseCall(engine, route, search) {
  const found = /^(GET|DELETE|POST) \/v1\/responses\/([^/]+)(\/input_items|\/cancel)?$/.exec(route);
  if (!found) return null;
  const [, method, raw, tail] = found;
  const id = decodeURIComponent(raw);
  const query = Object.fromEntries(new URLSearchParams(search));
  if (method === "GET" && tail === "/input_items") {
    const { after, order } = query;
    const limit = query.limit === undefined ? undefined : Number(query.limit);
    return () => engine.responses.inputItems.list(id, { after, limit, order: /** @type {any} */ (order) });
  }
  if (method === "GET" && !tail) return () => engine.responses.retrieve(id);
  if (method === "DELETE" && !tail) return () => engine.responses.delete(id);
  if (method === "POST" && tail === "/cancel") {
    return () => Promise.reject(Object.assign(new Error("only background responses can be cancelled, and csi-web "
      + "runs none (abort the request instead)"), { name: "InvalidInputError", param: "response_id" }));
  }
  return null;
}

/**
 * Register the site's service worker and offer `engine` to it. Resolves once v1/ is served by it.
 * @param {import("./engine.js").WebWorkerEngine} engine
 * @param {{serviceWorkerUrl?: string|URL}} [options] `serviceWorkerUrl`: default `<base>sw.js` (beside
 *   this module's folder); the endpoint is `v1/` beside it
 * @returns {Promise<{stop: () => void}>}
 */
export async function serveV1(engine, options = {}) {
  const container = navigator.serviceWorker;
  host.engine = null;
  if (!container) {
    host.error = "this page cannot use a service worker (it needs http://127.0.0.1, localhost or https)";
    throw new Error(host.error);
  }
  let registration;
  host.url = v1Url(options.serviceWorkerUrl);
  try {
    await registerSiteWorker(container, options.serviceWorkerUrl);
    registration = await container.ready;
  } catch (err) {
    host.error = String(/** @type {any} */ (err)?.message ?? err);
    throw err;
  }
  host.engine = engine;
  host.error = null;
  /** @type {Map<string, AbortController>} */
  const running = new Map();
  /** @type {MessagePort|null} */
  let port = null;

  const offer = () => {
    const worker = container.controller ?? registration.active;
    if (!worker) return;
    // an earlier port stays open: requests under way on it still answer through it
    const channel = new MessageChannel();
    port = channel.port1;
    port.onmessage = (e) => handle(e.data);
    worker.postMessage({ type: "csi-v1-host" }, [channel.port2]);
  };
  /** @param {MessageEvent} e */
  const onMessage = (e) => {
    if (e.data?.type === "csi-v1-need-host") offer();
  };
  container.addEventListener("message", onMessage);
  container.addEventListener("controllerchange", offer);
  offer();

  /** @param {any} msg */
  async function handle(msg) {
    if (msg?.type === "abort") {
      running.get(msg.id)?.abort();
      return;
    }
    if (msg?.type !== "request") return;
    const reply = port;
    if (!reply) return;
    const id = msg.id;
    /** @param {number} status @param {Record<string, string>} headers */
    const head = (status, headers) => reply.postMessage({ type: "head", id, status, headers });
    const data = (/** @type {string} */ text) => reply.postMessage({ type: "data", id, text });
    const end = () => reply.postMessage({ type: "end", id });
    const json = (/** @type {number} */ status, /** @type {any} */ body) => {
      head(status, { "content-type": "application/json" });
      data(JSON.stringify(body));
      end();
    };
    const ctrl = new AbortController();
    running.set(id, ctrl);
    let streaming = false;
    let sent = 0;
    const events = String(msg.path).split("?")[0].replace(/\/+$/, "").endsWith("/v1/responses");
    try {
      // the path from the site's base (the service worker strips it): "/v1/...", wherever the site is
      const route = `${msg.method} ${String(msg.path).split("?")[0].replace(/\/+$/, "")}`;
      if (route === "GET /v1/models") {
        json(200, { object: "list", data: engine.modelIds.map((m) => ({ id: m, object: "model", created: 0,
          owned_by: "csi-web" })) });
        return;
      }
      const stored = storedResponseCall(engine, route, String(msg.path).split("?")[1] ?? "");
      if (stored) {
        json(200, await stored());
        return;
      }
      const call = {
        "POST /v1/chat/completions": (/** @type {any} */ b) => engine.chat.completions.create(b, { signal: ctrl.signal }),
        "POST /v1/completions": (/** @type {any} */ b) => engine.completions.create(b, { signal: ctrl.signal }),
        "POST /v1/embeddings": (/** @type {any} */ b) => engine.embeddings.create(b),
        "POST /v1/responses": (/** @type {any} */ b) => engine.responses.create(b, { signal: ctrl.signal }),
      }[route];
      if (!call) {
        json(404, { error: { message: `no route ${route}`, type: "invalid_request_error", param: null,
          code: "unknown_url" } });
        return;
      }
      let body;
      try {
        body = JSON.parse(msg.body);
      } catch (err) {
        json(400, { error: { message: `the body is not JSON: ${err}`, type: "invalid_request_error", param: null,
          code: "invalid_json" } });
        return;
      }
      /** @type {any} what the route answers: a whole reply, or (streamed) its chunks */
      const result = await call(body);
      if (body?.stream && result && typeof result[Symbol.asyncIterator] === "function") {
        streaming = true;
        head(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
        for await (const chunk of result) {
          // the Responses API names each event and ends with its last one; chat and completions end with [DONE]
          data(events ? `event: ${chunk.type}\ndata: ${JSON.stringify(chunk)}\n\n` : `data: ${JSON.stringify(chunk)}\n\n`);
          sent++;
        }
        if (!events) data("data: [DONE]\n\n");
        end();
      } else {
        json(200, result);
      }
    } catch (err) {
      const e = httpError(err);
      if (streaming && events) {
        const { message, param, code } = e.body.error;
        data(`event: error\ndata: ${JSON.stringify({ type: "error", code, message, param, sequence_number: sent })}\n\n`);
        end();
      } else if (streaming) {
        data(`data: ${JSON.stringify(e.body)}\n\n`);
        end();
      } else {
        json(e.status, e.body);
      }
    } finally {
      running.delete(id);
    }
  }

  return {
    stop() {
      container.removeEventListener("message", onMessage);
      container.removeEventListener("controllerchange", offer);
      (container.controller ?? registration.active)?.postMessage({ type: "csi-v1-leave" });
      port = null;
      if (host.engine === engine) host.engine = null;
    },
  };
}
