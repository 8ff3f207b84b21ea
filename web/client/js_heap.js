// @ts-check
// The JS heap of this page and of its workers, by the browser's own measurement
// (`performance.measureUserAgentSpecificMemory()`: cross-origin-isolated pages only). A worker's
// heap includes its ArrayBuffers (tensors, logits) but not its WebAssembly memories.

/**
 * @typedef {{page_bytes: number, workers_bytes: number, total_bytes: number}} JsHeap
 *   `workers_bytes`: every dedicated worker of this page (an engine's, and any other);
 *   `total_bytes`: all the browser attributes to the page, shared and DOM memory included.
 */

/**
 * The JS heap now, or null where the browser cannot measure it. The measurement is of live
 * objects (garbage is not counted), and may take a while: Chromium answers with its next garbage
 * collection (up to ~20 s) unless started with `--enable-blink-features=ForceEagerMeasureMemory`.
 * @returns {Promise<JsHeap|null>}
 */
export async function measureJsHeap() {
  /** @type {any} */
  const perf = globalThis.performance;
  if (!globalThis.crossOriginIsolated || typeof perf?.measureUserAgentSpecificMemory !== "function") return null;
  const result = await perf.measureUserAgentSpecificMemory();
  let page = 0;
  let workers = 0;
  for (const entry of result.breakdown) {
    for (const a of entry.attribution ?? []) {
      if (a.scope === "Window") page += entry.bytes / entry.attribution.length;
      else if (a.scope === "DedicatedWorkerGlobalScope") workers += entry.bytes / entry.attribution.length;
    }
  }
  return { page_bytes: Math.round(page), workers_bytes: Math.round(workers), total_bytes: result.bytes };
}
