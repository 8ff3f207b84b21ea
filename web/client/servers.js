// @ts-check
// The engine config's `remotes` (models on OpenAI-compatible servers) and their form on the wire.

/**
 * @typedef {{id: string, policy?: "remote"|"prefer-local", serverModel?: string}} RemoteModelSpec
 *   A model of a server: the id requests use; `policy` "remote" (the default: always the server) or
 *   "prefer-local" (loaded in the browser; the server when that load fails); its name on the server.
 * @typedef {{baseURL: string, apiKey?: string|null, timeoutMs?: number, deadlineMs?: number,
 *            models: Array<string|RemoteModelSpec>}} RemoteServer
 *   A server: where its API is (e.g. `http://127.0.0.1:8080/v1`), its key, how long to wait for
 *   progress (the answer to begin, its next token, a whole JSON answer; keep-alives and trickled
 *   bytes do not count; default 120 s), the longest one request may take (default 600 s), and its models.
 */

/**
 * The worker's form of `remotes` (snake_case); what is not of the documented shape goes as it is,
 * for the worker to refuse by field.
 * @param {RemoteServer[]} remotes @returns {any}
 */
export function remotesWire(remotes) {
  /** @param {any} x */
  const isObject = (x) => typeof x === "object" && x !== null && !Array.isArray(x);
  /** @type {any} */
  const given = remotes;
  return !Array.isArray(given) ? given : given.map((/** @type {any} */ r) => !isObject(r) ? r : {
    base_url: r.baseURL, api_key: r.apiKey ?? null,
    ...(r.timeoutMs === undefined ? {} : { timeout_s: r.timeoutMs / 1000 }),
    ...(r.deadlineMs === undefined ? {} : { deadline_s: r.deadlineMs / 1000 }),
    models: !Array.isArray(r.models) ? r.models : r.models.map((/** @type {any} */ m) => !isObject(m) ? m
      : { id: m.id, policy: m.policy ?? "remote", server_model: m.serverModel ?? null }),
  });
}
