// What a model weighs before it is downloaded: the site's models from models/models.json, a Hub
// model from the sizes its files report (HEAD requests through the same Hub or mirror the worker
// loads from), and whether that fits the browser's storage quota.

/**
 * @typedef {{id: string, kind: string, bytes: number, source: string}} SiteModel
 *   a model the site serves (dist/models/models.json): source "built-in" or "imported"
 * @typedef {{bytes: number|null, files: Record<string, number>, note: string}} HubSize
 *   `bytes` null when the weights' size is unknown
 */

/** The Hub's base URL (the worker's default when no mirror is set). */
export const HUB = "https://huggingface.co/";

/** The Hub mirror the page's loads come from: `?hub=<base URL>` (the Hub itself without it). */
export function hubMirror() {
  const hub = new URLSearchParams(location.search).get("hub");
  return hub ? (hub.endsWith("/") ? hub : `${hub}/`) : null;
}

/** "40.4 MB", "1.25 GB", "512 B". @param {number} n bytes */
export function formatBytes(n) {
  if (n >= 1e9) return `${(n / 1e9).toFixed(2)} GB`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)} MB`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(1)} kB`;
  return `${n} B`;
}

/** The chat models the site serves, built-ins first (in the site's order), then imported ones. */
export async function siteModels() {
  const r = await fetch("models/models.json");
  if (!r.ok) throw new Error(`models/models.json: HTTP ${r.status}`);
  /** @type {SiteModel[]} */
  const models = (await r.json()).models ?? [];
  const chat = models.filter((m) => m.kind === "chat");
  return [...chat.filter((m) => m.source === "built-in"), ...chat.filter((m) => m.source !== "built-in")];
}

/** @param {string} base @param {string} id @param {string} file */
const fileUrl = (base, id, file) => `${base}${id}/resolve/main/${file}`;

/** The size a HEAD request reports for a file, or null when it is missing. @param {string} url */
async function headSize(url) {
  const r = await fetch(url, { method: "HEAD" });
  if (!r.ok) return null;
  const n = Number(r.headers.get("x-linked-size") ?? r.headers.get("content-length"));
  return Number.isFinite(n) && n >= 0 ? n : null;
}

/**
 * The weights file transformers.js picks for `device`, as its get_model_files does: the dtype the
 * repo's `transformers.js_config` names (with its `device_config` for `device`), else q8 on WASM and fp32 elsewhere.
 * @param {any} config the repo's config.json @param {string} device
 */
export function weightsFiles(config, device) {
  const base = config?.["transformers.js_config"] ?? {};
  const custom = { ...base, ...base.device_config?.[device] };
  const dtype = typeof custom.dtype === "string" && custom.dtype !== "auto" ? custom.dtype : device === "wasm" ? "q8" : "fp32";
  /** @type {Record<string, string>} */
  const suffix = { fp32: "", fp16: "_fp16", int8: "_int8", uint8: "_uint8", q8: "_quantized", q4: "_q4",
    q4f16: "_q4f16", bnb4: "_bnb4" };
  const name = `model${suffix[dtype] ?? ""}.onnx`;
  const external = custom.use_external_data_format;
  const chunks = external === true ? 1 : typeof external === "number" ? external
    : typeof external === "object" && external ? Number(external[name] ?? external.model ?? 0) : 0;
  const data = Array.from({ length: chunks }, (_, i) => `onnx/${name}_data${i ? `_${i}` : ""}`);
  return [`onnx/${name}`, ...data];
}

/**
 * What a Hub model's download weighs: its config, tokenizer and the weights for `device`.
 * @param {string} id `org/name` @param {string|null} mirror the Hub mirror's base URL (null: the Hub)
 * @param {string} device "wasm" | "webgpu"
 * @returns {Promise<HubSize>}
 */
export async function hubSize(id, mirror, device) {
  const base = mirror ?? HUB;
  const configResponse = await fetch(fileUrl(base, id, "config.json"));
  if (!configResponse.ok) {
    return { bytes: null, files: {}, note: `${id} has no config.json there (HTTP ${configResponse.status})` };
  }
  const configText = await configResponse.text();
  const weights = weightsFiles(JSON.parse(configText), device);
  const others = ["generation_config.json", "tokenizer.json", "tokenizer_config.json"];
  const sizes = await Promise.all([...weights, ...others].map((f) => headSize(fileUrl(base, id, f))));
  /** @type {Record<string, number>} */
  const files = { "config.json": new TextEncoder().encode(configText).length };
  [...weights, ...others].forEach((f, i) => {
    const size = sizes[i];
    if (size !== null) files[f] = size;
  });
  if (sizes.slice(0, weights.length).some((s) => s === null)) {
    return { bytes: null, files, note: `${weights.join(", ")}: not found, so its size is unknown` };
  }
  const bytes = Object.values(files).reduce((a, b) => a + b, 0);
  return { bytes, files, note: Object.keys(files).join(", ") };
}

/**
 * The storage estimate, and how `bytes` more would fit.
 * @param {number|null} bytes
 * @returns {Promise<{usage: number, quota: number, fits: boolean|null}|null>} null when the browser gives no estimate
 */
export async function storageFit(bytes) {
  if (!navigator.storage?.estimate) return null;
  const { usage = 0, quota = 0 } = await navigator.storage.estimate();
  return { usage, quota, fits: bytes === null || !quota ? null : bytes <= quota - usage };
}
