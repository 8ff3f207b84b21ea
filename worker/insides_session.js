// A chat model's insides for RemoteLLM's GenerationalGuts: a second inference session of the
// model whose graph also outputs the tensors Python names (csi.core.insides.find_tensors), made on
// first use from the model file and freed with the model; ordinary decoding never touches it.
// The numbers are shaped here, on typed arrays: the DFT's real part, truncation, the rotary table,
// the top-k next tokens.

import { env, Tensor } from "../vendor/transformers/transformers.js";
import { EXPANDED_DATA, expandBlocks } from "./gguf_blocks.js";
import { graphSummary, withOutputs } from "./onnx_graph.js";
import { logprobs } from "./sampling/index.js";

/**
 * @typedef {{hidden: string, token_embedding: string, positional: string|null, logits: string,
 *   rotary_inv_freq: number[]|null, fft: boolean, keep: number, top_k: number}} InsidesPlan
 */

/**
 * The bytes of one of a model's files, as transformers.js loaded it: the site's own copy for a
 * built-in model, else the browser cache transformers.js keeps (the Hub only if it is not there).
 * @param {string} id @param {string} file @param {boolean} builtin
 */
async function modelFile(id, file, builtin) {
  if (builtin) {
    const url = new URL(`${env.localModelPath}${id}/${file}`, new URL("../", import.meta.url));
    return fetchBytes(url.href);
  }
  const url = `${env.remoteHost}${env.remotePathTemplate.replaceAll("{model}", id).replaceAll("{revision}", "main")}${file}`;
  if (env.useBrowserCache && typeof caches !== "undefined") {
    const hit = await (await caches.open(env.cacheKey)).match(url);
    if (hit) return new Uint8Array(await hit.arrayBuffer());
  }
  return fetchBytes(url);
}

/** @param {string} url */
async function fetchBytes(url) {
  const r = await fetch(url);
  if (!r.ok) throw new Error(`could not read ${url}: HTTP ${r.status}`);
  return new Uint8Array(await r.arrayBuffer());
}

/** The shortest decimal that reads back as the same float32 (proto3 JSON's `float`). @param {number} x */
function float32Shortest(x) {
  const f = Math.fround(x);
  for (let p = 6; p < 9; p++) {
    const y = Number(f.toPrecision(p));
    if (Math.fround(y) === f) return y;
  }
  return Number(f.toPrecision(9));
}

/** @type {Map<number, Float64Array>} */
const cosTables = new Map();
/** cos(2 pi j / n) for j < n. @param {number} n */
function cosTable(n) {
  let t = cosTables.get(n);
  if (!t) {
    t = Float64Array.from({ length: n }, (_, j) => Math.cos((2 * Math.PI * j) / n));
    cosTables.set(n, t);
  }
  return t;
}

/**
 * Shape `rows` vectors of width `width` (read from `src` at row stride `width`) into `out` at
 * `offset`, `keep` values each: the real part of each vector's DFT if `fft`
 * (sum_j x_j cos(2 pi k j / width), in float64), else the vector itself.
 * @param {ArrayLike<number>} src @param {number} rows @param {number} width @param {boolean} fft
 * @param {number} keep @param {Float64Array} out @param {number} offset
 */
function shape(src, rows, width, fft, keep, out, offset) {
  const cos = fft ? cosTable(width) : null;
  for (let r = 0; r < rows; r++) {
    const base = r * width;
    for (let k = 0; k < keep; k++) {
      let v;
      if (cos) {
        let acc = 0;
        let idx = 0;
        for (let j = 0; j < width; j++) {
          acc += src[base + j] * cos[idx];
          idx += k;
          if (idx >= width) idx -= width;
        }
        v = acc;
      } else {
        v = src[base + k];
      }
      out[offset + r * keep + k] = float32Shortest(v);
    }
  }
}

/** @param {any} t an onnxruntime tensor @returns {Float32Array} */
function float32(t) {
  return t.type === "float32" ? t.data : new Tensor(t).to("float32").data;
}

export class PromptInsides {
  /**
   * @param {any} chat the ChatModel @param {string[]} files the ONNX files transformers.js loaded
   * @param {boolean} builtin
   */
  constructor(chat, files, builtin) {
    this.chat = chat;
    this.files = files;
    this.builtin = builtin;
    /** @type {Uint8Array|null} the model file, kept from `graph()` until the session is made */
    this.bytes = null;
    /** @type {any} */
    this.session = null;
  }

  /** The main ONNX file of the decoder (`onnx/model*.onnx`). */
  mainFile() {
    const file = this.files.find((f) => /(^|\/)model[^/]*\.onnx$/.test(f));
    if (!file) throw new Error(`no decoder ONNX file among those loaded (${this.files.join(", ") || "none"})`);
    return file;
  }

  /** The decoder's graph, as `onnx_graph.graphSummary` lists it. */
  async graph() {
    this.bytes ??= await modelFile(this.chat.id, this.mainFile(), this.builtin);
    return graphSummary(this.bytes);
  }

  /** @param {InsidesPlan} plan */
  async ensureSession(plan) {
    if (this.session) return;
    const file = this.mainFile();
    let bytes = this.bytes ?? (await modelFile(this.chat.id, file, this.builtin));
    this.bytes = null;
    const names = [plan.hidden, plan.token_embedding, plan.positional].filter((n) => typeof n === "string");
    const externalData = [];
    const expanded = expandBlocks(bytes); // a model imported from a GGUF: its weights expanded here
    if (expanded) {
      bytes = expanded.graph;
      externalData.push({ path: EXPANDED_DATA, data: expanded.data });
    }
    for (const f of this.files.filter((x) => x.startsWith(`${file}_data`))) {
      externalData.push({ path: f.split("/").at(-1), data: await modelFile(this.chat.id, f, this.builtin) });
    }
    const main = this.chat.model.sessions.model ?? Object.values(this.chat.model.sessions)[0];
    // the same onnxruntime as transformers.js; on the CPU, where a run is one synchronous wasm call
    // and cannot interleave with the decoder's runs
    this.session = await main.constructor.create(withOutputs(bytes, names), {
      executionProviders: ["wasm"],
      logSeverityLevel: 3,
      ...(externalData.length ? { externalData } : {}),
    });
  }

  /**
   * Run `ids` from an empty cache and shape what comes out.
   * @param {Int32Array|number[]} ids @param {InsidesPlan} plan
   * @returns {Promise<{rows: number, width: number, posWidth: number, data: Float64Array,
   *   top: Array<[number, number, number]>}>}
   */
  async run(ids, plan) {
    await this.ensureSession(plan);
    const n = ids.length;
    /** @type {Record<string, any>} */
    const feeds = {
      input_ids: new Tensor("int64", BigInt64Array.from(ids, (x) => BigInt(x)), [1, n]).ort_tensor,
      attention_mask: new Tensor("int64", new BigInt64Array(n).fill(1n), [1, n]).ort_tensor,
      position_ids: new Tensor("int64", BigInt64Array.from({ length: n }, (_, i) => BigInt(i)), [1, n]).ort_tensor,
    };
    for (const [name, t] of Object.entries(this.chat.emptyCache())) feeds[name] = /** @type {any} */ (t).ort_tensor;
    const inputs = Object.fromEntries(this.session.inputNames.filter((/** @type {string} */ k) => k in feeds).map((/** @type {string} */ k) => [k, feeds[k]]));
    const fetches = [plan.logits, plan.hidden, plan.token_embedding, ...(plan.positional ? [plan.positional] : [])];
    const out = await this.session.run(inputs, fetches);
    const hidden = float32(out[plan.hidden]);
    const width = hidden.length / n;
    const token = float32(out[plan.token_embedding]);
    const positional = plan.positional ? float32(out[plan.positional]) : rotaryTable(n, plan.rotary_inv_freq ?? []);
    const posWidth = positional.length / n;
    const keep = Math.min(plan.keep || Infinity, width);
    const posKeep = Math.min(plan.keep || Infinity, posWidth);
    // one buffer: token embeddings, then positional embeddings, then hidden states
    const data = new Float64Array(n * (2 * keep + posKeep));
    shape(token, n, width, plan.fft, keep, data, 0);
    shape(positional, n, posWidth, plan.fft, posKeep, data, n * keep);
    shape(hidden, n, width, plan.fft, keep, data, n * (keep + posKeep));
    const logits = float32(out[plan.logits]);
    const vocab = logits.length / n;
    const last = logits.subarray((n - 1) * vocab, n * vocab);
    const { top } = logprobs(last, 0, plan.top_k);
    for (const t of Object.values(out)) t.dispose?.();
    return {
      rows: n, width: keep, posWidth: posKeep, data,
      top: top.map(([i, lp]) => [i, float32Shortest(last[i]), Math.exp(lp)]),
    };
  }

  async dispose() {
    this.bytes = null;
    await this.session?.release?.();
    this.session = null;
  }
}

/**
 * The rotary table of positions 0..n-1: cos(p f_i) for each frequency, then sin(p f_i), with the
 * angle rounded to float32 as the model computes it.
 * @param {number} n @param {number[]} invFreq
 */
function rotaryTable(n, invFreq) {
  const half = invFreq.length;
  const out = new Float64Array(n * 2 * half);
  const inv = invFreq.map((f) => Math.fround(f));
  for (let p = 0; p < n; p++) {
    for (let i = 0; i < half; i++) {
      const angle = Math.fround(p * inv[i]);
      out[p * 2 * half + i] = Math.cos(angle);
      out[p * 2 * half + half + i] = Math.sin(angle);
    }
  }
  return out;
}
