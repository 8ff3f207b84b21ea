// transformers.js / onnxruntime-web settings shared by everything that runs models on this site:
// models and the ORT runtime come from the site itself, never from a CDN.

import { env } from "../vendor/transformers/transformers.js";
import { EXPANDED_GRAPHS, graphResponse } from "./gguf_blocks.js";
import { hubFetch } from "./hub_fetch.js";

const SITE = new URL("../", import.meta.url);

/**
 * onnxruntime-web's two builds: the plain SIMD one runs the WASM device (half the size of the other,
 * ~0.5 s sooner ready and ~20 % faster per token here), the asyncify one is the one with WebGPU.
 * A worker runs one build, chosen by its first load ({@link useRuntimeFor}).
 */
export const ORT_BUILDS = { plain: "ort-wasm-simd-threaded", asyncify: "ort-wasm-simd-threaded.asyncify" };

/** @typedef {keyof typeof ORT_BUILDS} OrtBuild */

/** @type {OrtBuild|null} the build this worker's ORT started with, once a model loads */
let started = null;

/** @param {OrtBuild} build */
function ortPaths(build) {
  return { mjs: new URL(`vendor/ort/${ORT_BUILDS[build]}.mjs`, SITE).href,
           wasm: new URL(`vendor/ort/${ORT_BUILDS[build]}.wasm`, SITE).href };
}

/**
 * Make sure ORT runs a build that serves `device` ("wasm" or "webgpu"): the first call picks it (before
 * ORT starts); later ones throw when it cannot serve the device (WebGPU after a WASM start).
 * @param {string} device
 */
export function useRuntimeFor(device) {
  if (useOrtBuild(device === "webgpu" ? "asyncify" : "plain") === "plain" && device === "webgpu") {
    throw new Error("this engine's ONNX runtime started on the WASM device, without WebGPU: load WebGPU "
      + "models in a new engine (CreateWebWorkerEngine(new Worker(...), model, {device: \"webgpu\"}))");
  }
}

/**
 * Run ORT on `build` if it has not started yet; returns the build it runs.
 * @param {OrtBuild} build @returns {OrtBuild}
 */
export function useOrtBuild(build) {
  if (started === null) {
    started = build;
    env.backends.onnx.wasm.wasmPaths = ortPaths(build);
  }
  return started;
}

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
  // ORT fetches its WebAssembly itself, streaming: compiled off this thread, and on later visits
  // from the browser's code cache (transformers.js's own cache hands ORT bytes to compile each time)
  env.useWasmCache = false;
  env.backends.onnx.wasm.wasmPaths = ortPaths("plain");
  // Threads need cross-origin isolation; leave one core to the page and to Python.
  env.backends.onnx.wasm.numThreads = self.crossOriginIsolated
    ? Math.max(1, Math.min(4, (navigator.hardwareConcurrency || 2) - 1))
    : 1;
  return env;
}
