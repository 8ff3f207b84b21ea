// @ts-check
// The models kept in the browser's Cache API: what the worker's transformers.js stored while
// loading (by the file's URL: `<hub>/<org>/<name>/resolve/<revision>/<file>` for Hub models,
// `/models/<id>/<file>` for built-in ones). WebLLM's cache helpers, and csi-web's `listCachedModels`.
// They need no engine: the page and its worker share the origin's caches.

import { EngineError } from "./engine_error.js";

/** transformers.js's cache (its `env.cacheKey`). */
export const MODEL_CACHE = "transformers-cache";
/** The Hub's 404s the worker remembered, so optional files stay missing offline (worker/hub_fetch.js). */
export const MISSES_CACHE = "csi-hub-misses";

const WEIGHTS = /\.onnx(_data(_\d+)?)?$/;

/**
 * The model id and file of a cached URL, or null for other entries. `repo` is the URL's path up to
 * the file (a mirror may put a prefix before the id); `model` is its last two segments (one for
 * ids such as `gpt2`).
 * @param {string} url
 * @returns {{model: string, repo: string, file: string}|null}
 */
export function cachedFileOf(url) {
  const path = decodeURIComponent(new URL(url, location.href).pathname);
  const hub = /^(.*)\/resolve\/[^/]+\/(.+)$/.exec(path);
  if (hub) {
    const segments = hub[1].split("/").filter(Boolean);
    return { model: segments.slice(-2).join("/"), repo: hub[1], file: hub[2] };
  }
  const builtin = /\/models\/([^/]+)\/(.+)$/.exec(path);
  return builtin ? { model: builtin[1], repo: `/models/${builtin[1]}`, file: builtin[2] } : null;
}

/**
 * Whether a cached URL's repo path holds `modelId`: `/models/<id>` (built in), `/<id>` (the Hub),
 * or, for `org/name` ids, a mirror's path ending in `/org/name`.
 * @param {string} repo @param {string} modelId
 */
function isRepoOf(repo, modelId) {
  return repo === `/${modelId}` || repo === `/models/${modelId}` || (modelId.includes("/") && repo.endsWith(`/${modelId}`));
}

/** @param {string} name @returns {Promise<Cache|null>} */
async function open(name) {
  return typeof caches === "undefined" ? null : caches.open(name);
}

/**
 * The cached requests of `modelId` in the cache `name` (every model's when `modelId` is null).
 * @param {string} name @param {string|null} modelId
 */
async function entries(name, modelId) {
  const cache = await open(name);
  if (!cache) return { cache, found: [] };
  const found = [];
  for (const request of await cache.keys()) {
    const at = cachedFileOf(request.url);
    if (at && (modelId === null || isRepoOf(at.repo, modelId))) found.push({ request, ...at });
  }
  return { cache, found };
}

/**
 * @param {unknown} modelId
 * @returns {string}
 */
function checkId(modelId) {
  if (typeof modelId !== "string" || !modelId) {
    throw new EngineError({ name: "InvalidInputError", message: "a model id must be a non-empty string", param: "modelId" });
  }
  return modelId;
}

/**
 * Whether `modelId` can load without the network: its `config.json` and its weights are cached.
 * (WebLLM's second argument, an app config, has no effect: files are cached by their URL.)
 * @param {string} modelId @param {unknown} [appConfig]
 * @returns {Promise<boolean>}
 */
export async function hasModelInCache(modelId, appConfig) {
  const { found } = await entries(MODEL_CACHE, checkId(modelId));
  return found.some((e) => e.file === "config.json") && found.some((e) => WEIGHTS.test(e.file));
}

/**
 * Delete the cached files of `modelId` that `which` selects.
 * @param {string} modelId @param {(file: string) => boolean} which
 * @returns {Promise<number>} how many files were deleted
 */
async function deleteFiles(modelId, which) {
  const { cache, found } = await entries(MODEL_CACHE, checkId(modelId));
  let deleted = 0;
  for (const e of found) {
    if (which(e.file) && (await cache?.delete(e.request))) deleted++;
  }
  return deleted;
}

/** Delete every cached file of `modelId` (weights, configs, tokenizer) and its remembered 404s. */
export async function deleteModelAllInfoInCache(/** @type {string} */ modelId, /** @type {unknown} */ appConfig) {
  await deleteFiles(modelId, () => true);
  const { cache, found } = await entries(MISSES_CACHE, modelId);
  for (const e of found) await cache?.delete(e.request);
}

/** Delete the cached weights (`.onnx` files and their external data) of `modelId`. */
export async function deleteModelInCache(/** @type {string} */ modelId, /** @type {unknown} */ appConfig) {
  await deleteFiles(modelId, (f) => WEIGHTS.test(f));
}

/** Delete the cached configuration of `modelId` (`config.json`, `generation_config.json`, tokenizer files). */
export async function deleteChatConfigInCache(/** @type {string} */ modelId, /** @type {unknown} */ appConfig) {
  await deleteFiles(modelId, (f) => f.endsWith(".json"));
}

/**
 * WebLLM deletes a model's compiled WebGPU library here; csi-web's models have none (one ONNX
 * runtime serves them all), so there is nothing to delete.
 */
export async function deleteModelWasmInCache(/** @type {string} */ modelId, /** @type {unknown} */ appConfig) {
  checkId(modelId);
}

/**
 * Every model with files in the cache: `[{model, files, bytes}]`, files sorted.
 * @returns {Promise<Array<{model: string, files: string[], bytes: number}>>}
 */
export async function listCachedModels() {
  const { cache, found } = await entries(MODEL_CACHE, null);
  /** @type {Map<string, {model: string, files: string[], bytes: number}>} */
  const models = new Map();
  for (const e of found) {
    const m = models.get(e.model) ?? { model: e.model, files: [], bytes: 0 };
    models.set(e.model, m);
    m.files.push(e.file);
    const response = await cache?.match(e.request);
    const length = Number(response?.headers.get("content-length"));
    m.bytes += Number.isFinite(length) && length > 0 ? length : (await response?.blob())?.size ?? 0;
  }
  for (const m of models.values()) m.files.sort();
  return [...models.values()].sort((a, b) => a.model.localeCompare(b.model));
}
