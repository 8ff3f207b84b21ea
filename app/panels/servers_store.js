// The OpenAI-compatible servers the playground sends models to, kept in localStorage: each server's
// base URL, its models with their policy, and its API key only when the person chose to keep it
// (otherwise the key lives in this tab's memory until it closes). Also the form's own checks, which
// catch typos early; the engine checks again and names the field it refuses.

/**
 * @typedef {import("csi-web").RemoteServer} RemoteServer
 * @typedef {"remote"|"prefer-local"} Policy
 * @typedef {{id: string, policy: Policy, serverModel: string}} ServerModel
 *   `serverModel` its name on the server ("" for the same as `id`)
 * @typedef {{baseURL: string, apiKey: string, keepKey: boolean, models: ServerModel[]}} SavedServer
 *   `apiKey` "" for none
 */

/** The localStorage key of the servers list. */
export const SERVERS_KEY = "csi-web.servers";

/** csi-web's model ids, as the engine checks them (py/csi/core/aliases.py's MODEL_ID). */
const MODEL_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,95}(\/[A-Za-z0-9][A-Za-z0-9._-]{0,95})?$/;

/** Why `url` is no server's base URL, or null. @param {string} url */
export function urlProblem(url) {
  if (!url) return "Enter the server's base URL, e.g. http://127.0.0.1:8080/v1.";
  let parsed;
  try {
    parsed = new URL(url);
  } catch {
    return `${url} is not a URL: write it whole, e.g. http://127.0.0.1:8080/v1.`;
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return `${url} is not an http or https URL.`;
  return null;
}

/** Why `id` is no model id the engine takes, or null. @param {string} id */
export function modelIdProblem(id) {
  if (!id) return "Enter the model's id.";
  if (!MODEL_ID.test(id) || id.includes("..")) {
    return `${id} is not a model id: letters, digits, '-', '_', '.', at most one '/'.`;
  }
  return null;
}

/** @param {unknown} v @returns {v is Record<string, unknown>} */
const isRecord = (v) => typeof v === "object" && v !== null && !Array.isArray(v);

/** A stored model, or null when it is not one. @param {unknown} m @returns {ServerModel|null} */
function storedModel(m) {
  if (!isRecord(m) || typeof m.id !== "string") return null;
  return { id: m.id, policy: m.policy === "prefer-local" ? "prefer-local" : "remote",
    serverModel: typeof m.serverModel === "string" ? m.serverModel : "" };
}

/** The servers this browser keeps (what does not read as one is left out). @param {Storage} [storage] */
export function readServers(storage = localStorage) {
  /** @type {unknown} */
  let raw;
  try {
    raw = JSON.parse(storage.getItem(SERVERS_KEY) ?? "[]");
  } catch {
    return [];
  }
  /** @type {SavedServer[]} */
  const out = [];
  for (const s of Array.isArray(raw) ? raw : []) {
    if (!isRecord(s) || typeof s.baseURL !== "string" || !Array.isArray(s.models)) continue;
    const models = s.models.map(storedModel).filter((m) => m !== null);
    const keepKey = s.keepKey === true;
    out.push({ baseURL: s.baseURL, apiKey: keepKey && typeof s.apiKey === "string" ? s.apiKey : "", keepKey, models });
  }
  return out;
}

/** Keep `servers`, each key only where `keepKey`. @param {SavedServer[]} servers @param {Storage} [storage] */
export function writeServers(servers, storage = localStorage) {
  storage.setItem(SERVERS_KEY, JSON.stringify(servers.map((s) => ({ ...s, apiKey: s.keepKey ? s.apiKey : "" }))));
}

/** The engine's `remotes` for `servers`. @param {SavedServer[]} servers @returns {RemoteServer[]} */
export function toRemotes(servers) {
  return servers.map((s) => ({
    baseURL: s.baseURL,
    apiKey: s.apiKey || null,
    models: s.models.map((m) => ({ id: m.id, policy: m.policy, ...(m.serverModel ? { serverModel: m.serverModel } : {}) })),
  }));
}
