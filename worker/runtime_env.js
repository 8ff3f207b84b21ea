// transformers.js / onnxruntime-web settings shared by everything that runs models on this site:
// models and the ORT runtime come from the site itself, never from a CDN.

import { env } from "../vendor/transformers/transformers.js";
import { EXPANDED_GRAPHS, graphResponse } from "./gguf_blocks.js";
import { hubFetch } from "./hub_fetch.js";

const SITE = new URL("../", import.meta.url);

/** Point transformers.js at /models/ and at the site's own ORT runtime files; pick threads. */
export function configureRuntime() {
  env.allowLocalModels = true;
  env.localModelPath = new URL("models/", SITE).pathname;
  env.fetch = hubFetch; // cancellable downloads, the Hub's 404s remembered for offline loads
  if (typeof caches !== "undefined") {
    // transformers.js's Cache API bucket, keyed by absolute URLs: its keys for the site's own
    // models are paths, which a worker started from a blob: URL cannot resolve
    const bucket = () => caches.open(env.cacheKey);
    const absolute = (/** @type {RequestInfo|URL} */ key) => (typeof key === "string" ? new URL(key, SITE).href : key);
    env.customCache = {
      match: async (/** @type {RequestInfo|URL} */ key) => {
        const graph = EXPANDED_GRAPHS.get(String(absolute(key)));
        return graph ? graphResponse(graph) : (await bucket()).match(absolute(key));
      },
      put: async (/** @type {RequestInfo|URL} */ key, /** @type {Response} */ response) =>
        (await bucket()).put(absolute(key), response),
    };
    env.useCustomCache = true;
  }
  env.backends.onnx.wasm.wasmPaths = {
    mjs: new URL("vendor/ort/ort-wasm-simd-threaded.asyncify.mjs", SITE).href,
    wasm: new URL("vendor/ort/ort-wasm-simd-threaded.asyncify.wasm", SITE).href,
  };
  // Threads need cross-origin isolation; leave one core to the page and to Python.
  env.backends.onnx.wasm.numThreads = self.crossOriginIsolated
    ? Math.max(1, Math.min(4, (navigator.hardwareConcurrency || 2) - 1))
    : 1;
  return env;
}
