// The WebGPU adapter the browser offers, described for a person: vendor, architecture and
// description from `adapter.info`, or that there is none (WASM always works).

/** @typedef {{available: boolean, text: string}} AdapterInfo */

/** @returns {Promise<AdapterInfo>} */
export async function describeAdapter() {
  /** @type {any} WebGPU is not in TypeScript's DOM library */
  const gpu = /** @type {any} */ (navigator).gpu;
  let adapter = null;
  try {
    adapter = gpu ? await gpu.requestAdapter() : null;
  } catch {
    adapter = null;
  }
  if (!adapter) return { available: false, text: "WebGPU not available: models run on WASM (auto picks WASM)." };
  /** @type {{vendor?: string, architecture?: string, description?: string}} */
  const info = adapter.info ?? {};
  const parts = [info.vendor, info.architecture, info.description].filter((p) => typeof p === "string" && p);
  return { available: true, text: `WebGPU adapter: ${parts.join(" · ") || "(no details given)"}` };
}
