// The worker's HTTP for the servers of remote models (py/csi/backends/pyodide/http.py): one fetch
// per request with its own AbortController, the body read as it arrives. Aborting drops the
// connection, so the server sees the request cancelled.

/**
 * @typedef {{status: number, read: () => Promise<Uint8Array|undefined>, close: () => void}} HttpResponse
 *   `read` resolves to `undefined` at the end (Python sees `None`; a JS `null` would reach it as `jsnull`).
 */

/**
 * Send a request; resolves once the status and headers have come.
 * @param {string} method @param {string} url @param {string} headersJson @param {string|null} body
 * @returns {Promise<HttpResponse>}
 */
export async function httpOpen(method, url, headersJson, body) {
  const controller = new AbortController();
  const response = await fetch(url, {
    method, headers: JSON.parse(headersJson), body: body ?? undefined, signal: controller.signal, cache: "no-store",
  });
  const reader = response.body ? response.body.getReader() : null;
  return {
    status: response.status,
    async read() {
      if (!reader) return undefined;
      const { done, value } = await reader.read();
      return done ? undefined : value;
    },
    close() {
      controller.abort();
    },
  };
}
