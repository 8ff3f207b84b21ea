// What the worker holds in memory, as far as JS can see it: the bytes of every WebAssembly memory
// (Pyodide's, onnxruntime-web's, any other module's), and on WebGPU the bytes of the GPU buffers
// created and not yet destroyed. Installed once, before Pyodide and ORT instantiate their modules:
// it watches `WebAssembly.instantiate*` for the memories they import or export, and wraps
// `GPUDevice.prototype.createBuffer` / `GPUBuffer.prototype.destroy`. It only counts: nothing
// here frees, destroys or keeps alive what it sees (buffers and memories are held weakly).

/** @typedef {import("./protocol.js").WorkerMemory} WorkerMemory */
/** @typedef {"pyodide"|"onnxruntime"|"other"} Owner */

/** @type {Array<{ref: WeakRef<WebAssembly.Memory>, owner: Owner}>} every memory seen, once */
const memories = [];
/** @type {WeakSet<WebAssembly.Memory>} */
const seen = new WeakSet();
/** @param {unknown} value @param {Owner} owner @param {number} depth */
function noteMemories(value, owner, depth = 0) {
  if (value instanceof WebAssembly.Memory) {
    if (!seen.has(value)) {
      seen.add(value);
      memories.push({ ref: new WeakRef(value), owner });
    }
    return;
  }
  // an import object is {module: {name: value}}; exports are flat
  if (depth < 2 && value && typeof value === "object" && !ArrayBuffer.isView(value) && !(value instanceof ArrayBuffer)) {
    for (const v of Object.values(value)) noteMemories(v, owner, depth + 1);
  }
}

/** @param {string} url @returns {Owner} */
function ownerOfUrl(url) {
  if (/\/pyodide\.asm\.wasm(\?|$)/.test(url)) return "pyodide";
  if (/\/ort-wasm[^/]*\.wasm(\?|$)/.test(url)) return "onnxruntime";
  return "other";
}

/** Python's interpreter (a module compiled from a snapshot or a cache has no URL to tell it by). */
function isPython(/** @type {WebAssembly.Module} */ module) {
  return WebAssembly.Module.exports(module).some((e) => e.name === "Py_Initialize");
}

/** @param {unknown} source bytes or a compiled module @returns {Owner} */
function ownerOfSource(source) {
  // ORT streams its module (by URL: ownerOfUrl); Pyodide's may come compiled, known by its exports
  return source instanceof WebAssembly.Module && isPython(source) ? "pyodide" : "other";
}

/** @param {any} result an Instance, or {instance, module} @param {Owner} owner */
function noteResult(result, owner) {
  const instance = result instanceof WebAssembly.Instance ? result : result?.instance;
  if (owner === "other" && result?.module instanceof WebAssembly.Module && isPython(result.module)) owner = "pyodide";
  if (instance) noteMemories(instance.exports, owner);
  return result;
}

function watchWebAssembly() {
  /** @type {any} */
  const instantiate = WebAssembly.instantiate;
  /** @type {any} */ (WebAssembly).instantiate = function (/** @type {any} */ source, /** @type {any} */ imports) {
    const owner = ownerOfSource(source);
    noteMemories(imports, owner);
    return instantiate.call(this, source, imports).then((/** @type {any} */ r) => noteResult(r, owner));
  };
  const streaming = WebAssembly.instantiateStreaming;
  if (streaming) {
    WebAssembly.instantiateStreaming = function (source, imports) {
      /** @type {Owner} */
      let owner = "other";
      const labelled = Promise.resolve(source).then((response) => {
        owner = ownerOfUrl(response.url);
        return response;
      });
      return streaming.call(this, labelled, imports).then((r) => {
        noteMemories(imports, owner);
        return noteResult(r, owner);
      });
    };
  }
}

// ---- GPU buffers ----------------------------------------------------------------------------------

/** @typedef {{size: number, live: boolean}} BufferRecord */
/** @type {WeakMap<object, BufferRecord>} */
const buffers = new WeakMap();
let gpuBytes = 0;
let gpuCount = 0;
/** A buffer collected without `destroy()` frees its memory with it: count it out then. */
const collected = new FinalizationRegistry((/** @type {BufferRecord} */ record) => release(record));
let gpuWatched = false;

/** @param {BufferRecord} record */
function release(record) {
  if (!record.live) return;
  record.live = false;
  gpuBytes -= record.size;
  gpuCount -= 1;
}

function watchGpuBuffers() {
  const G = /** @type {any} */ (globalThis);
  if (typeof G.GPUDevice !== "function" || typeof G.GPUBuffer !== "function") return;
  gpuWatched = true;
  const create = G.GPUDevice.prototype.createBuffer;
  G.GPUDevice.prototype.createBuffer = function (/** @type {any} */ descriptor) {
    const buffer = create.call(this, descriptor);
    const record = { size: Number(buffer.size ?? descriptor?.size ?? 0), live: true };
    buffers.set(buffer, record);
    collected.register(buffer, record, record);
    gpuBytes += record.size;
    gpuCount += 1;
    return buffer;
  };
  const destroy = G.GPUBuffer.prototype.destroy;
  G.GPUBuffer.prototype.destroy = function () {
    const record = buffers.get(this);
    if (record) {
      collected.unregister(record);
      release(record);
    }
    return destroy.call(this);
  };
}

let installed = false;

/** Start watching (once per worker, before any wasm module this should see is instantiated). */
export function installMemoryProbes() {
  if (installed) return;
  installed = true;
  watchWebAssembly();
  watchGpuBuffers();
}

/** @returns {WorkerMemory} */
export function workerMemory() {
  /** @type {Record<Owner, number|null>} */
  const bytes = { pyodide: null, onnxruntime: null, other: 0 };
  for (const { ref, owner } of memories) {
    const memory = ref.deref();
    if (memory) bytes[owner] = (bytes[owner] ?? 0) + memory.buffer.byteLength;
  }
  return {
    pyodide_wasm_bytes: bytes.pyodide,
    ort_wasm_bytes: bytes.onnxruntime,
    other_wasm_bytes: bytes.other ?? 0,
    gpu_buffer_bytes: gpuWatched ? gpuBytes : null,
    gpu_buffers: gpuWatched ? gpuCount : null,
  };
}
