// The fetch transformers.js downloads models with: stopped by `abortLoads()` (an unload or a new
// load while files are coming), and with the Hub's "no such file" answers remembered, so a model
// whose optional files (preprocessor_config.json, ...) do not exist loads again with no network.
// The 404s of a load are remembered once it succeeds (a required file that is missing fails the
// load, so it is never remembered), and answered from memory until the model's cache is deleted
// (web/model_cache.js's deleteModelAllInfoInCache).

import { EXPANDED_GRAPHS, graphResponse } from "./gguf_blocks.js";

export const HUB = "https://huggingface.co/";
/** The site's root: what the site's own paths (`/models/...`) are relative to. */
const SITE = new URL("../", import.meta.url);
/** The Cache API bucket that remembers the Hub's 404s (next to transformers.js's own cache). */
export const MISSES_CACHE = "csi-hub-misses";

/** Models served by the site alone: what they lack locally is missing, never asked of the Hub. */
export const SITE_ONLY = new Set();

/** @type {Set<AbortController>} the downloading loads under way */
const loads = new Set();
/** @type {string} the base URL remote files come from: the Hub or a mirror */
let remoteHost = HUB;
/** @type {Set<string>} URLs the Hub answered 404 for during the loads under way */
const misses = new Set();

/**
 * Start a load of a model from the Hub (or a mirror): until `done()`, its downloads belong to it,
 * and `abortLoads()` stops them.
 * @param {string|null} host the Hub's base URL or a mirror's; null for a model the site serves
 */
export function beginLoad(host) {
  if (host !== null) remoteHost = host;
  const controller = new AbortController();
  loads.add(controller);
  return {
    signal: controller.signal,
    /** @param {boolean} ok whether the load succeeded: then its 404s are remembered */
    done: async (ok) => {
      loads.delete(controller);
      if (ok && misses.size) {
        const cache = await missesCache();
        for (const url of misses) await cache?.put(url, new Response(null, { status: 200, statusText: "remembered 404" }));
      }
      if (!loads.size) misses.clear();
    },
  };
}

/** Stop every download of the loads under way; their loads fail. */
export function abortLoads() {
  for (const c of loads) c.abort(new DOMException("the load was cancelled by an unload or another load", "AbortError"));
  loads.clear();
}

/** @returns {Promise<Cache|null>} */
async function missesCache() {
  return typeof caches === "undefined" ? null : caches.open(MISSES_CACHE);
}

/**
 * `fetch` for transformers.js (its `env.fetch`).
 * @param {RequestInfo|URL} input @param {RequestInit} [init]
 * @returns {Promise<Response>}
 */
export async function hubFetch(input, init = {}) {
  if (typeof input === "string" && input.startsWith("/")) input = new URL(input, SITE).href; // a blob: worker has no base
  const url = String(input instanceof Request ? input.url : input);
  const expanded = EXPANDED_GRAPHS.get(url);
  if (expanded) return graphResponse(expanded);
  const remote = url.startsWith(remoteHost);
  if (remote && SITE_ONLY.has(url.slice(remoteHost.length).split("/resolve/")[0])) {
    return new Response(null, { status: 404 });
  }
  const signals = [...loads].map((c) => c.signal);
  const signal = signals.length ? AbortSignal.any(signals) : undefined;
  if (remote && (await (await missesCache())?.match(url))) return new Response(null, { status: 404 });
  try {
    const response = await fetch(input, { ...init, signal });
    if (remote && response.status === 404 && (init.method ?? "GET") === "GET") misses.add(url);
    return response;
  } catch (err) {
    throw signal?.aborted ? signal.reason : err;
  }
}
