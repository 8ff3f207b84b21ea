// The worker's HTTP for the servers of remote models (py/csi/backends/pyodide/http.py): one fetch
// per request with its own AbortController, the body read as it arrives. Aborting drops the
// connection, so the server sees the request cancelled.

/**
 * @typedef {{status: number, headers: string, read: (timeoutMs: number) => Promise<Uint8Array|undefined>, close: () => void}} HttpResponse
 *   `headers`: a JSON object of the headers the page may read (names in lower case; CORS hides the
 *   others of a cross-origin answer unless the server exposes them).
 *   `read` resolves to `undefined` at the end (Python sees `None`; a JS `null` would reach it as
 *   `jsnull`), and rejects with a `TimeoutError` when nothing came within `timeoutMs`.
 */

/**
 * @typedef {{response: Promise<HttpResponse>, abort: () => void}} HttpStart
 *   A request under way: `response` resolves once the status and headers have come; `abort()` drops
 *   it before then too (Python calls it when the request is cancelled or times out while it waits).
 */

/**
 * Send a request.
 * @param {string} method @param {string} url @param {string} headersJson @param {string|null} body
 * @returns {HttpStart}
 */
export function httpStart(method, url, headersJson, body) {
  const controller = new AbortController();
  const response = open(controller, method, url, headersJson, body);
  response.catch(() => {});  // a request Python gave up on may still fail: that is not unhandled
  return { response, abort: () => controller.abort() };
}

/**
 * @param {AbortController} controller @param {string} method @param {string} url
 * @param {string} headersJson @param {string|null} body @returns {Promise<HttpResponse>}
 */
async function open(controller, method, url, headersJson, body) {
  const response = await fetch(url, {
    method, headers: JSON.parse(headersJson), body: body ?? undefined, signal: controller.signal, cache: "no-store",
  });
  const reader = response.body ? response.body.getReader() : null;
  return {
    status: response.status,
    headers: JSON.stringify(Object.fromEntries(response.headers)),
    async read(timeoutMs) {
      if (!reader) return undefined;
      /** @type {ReturnType<typeof setTimeout>|undefined} */
      let timer;
      const late = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new DOMException(`nothing within ${timeoutMs} ms`, "TimeoutError")), timeoutMs);
      });
      try {
        const { done, value } = await Promise.race([reader.read(), late]);
        return done ? undefined : value;
      } finally {
        clearTimeout(timer);
      }
    },
    close() {
      controller.abort();
    },
  };
}
