// Prompt caches that outlive the page: the keys and values of a model's tokens, kept in the origin
// private file system (OPFS) so the next visit, or another tab, starts a prompt that shares them
// without running them again. One entry is two files: `<id>.kv` (every cache tensor's bytes, one
// after the other) and `<id>.json` (what they are: the model key, the token ids, the tensors' shapes,
// the payload's size and SHA-256). The payload is written first and the description last, so an
// entry without its description was never finished; one whose payload has another size or hash is
// deleted when found. Entries of another model key (another file, device or form) are never read.

const DIR = "csi-prompt-cache";
const VERSION = 1;
/** A payload without its description this long after its last write was abandoned. */
const ORPHAN_MS = 3_600_000;

/** The defaults of `configure`: on, 512 MiB, prefixes of 64 tokens and more. */
export const PROMPT_CACHE_DEFAULTS = Object.freeze({ enabled: true, budget_bytes: 512 * 2 ** 20, min_tokens: 64 });

/**
 * One cache tensor: [1, heads, tokens, headDim] values of `type`.
 * @typedef {{name: string, type: string, dims: number[], data: Float32Array|Uint16Array}} CacheTensor
 * @typedef {{version: number, id: string, model_key: string, model: string, ids: number[], bytes: number,
 *            sha256: string, created: number, last_used: number,
 *            tensors: Array<{name: string, type: string, dims: number[]}>}} EntryMeta
 * @typedef {{id: string, model: string, tokens: number, bytes: number, created: number, last_used: number}} EntryInfo
 */

/**
 * Write a file whole, flushed to storage before this resolves. A dedicated worker writes in place
 * through a sync access handle: a writable stream's swap file is renamed later, and a worker ended
 * soon after (a reload) could leave the file empty for the next visit.
 * @param {FileSystemDirectoryHandle} dir @param {string} name @param {Uint8Array} bytes
 */
async function writeFile(dir, name, bytes) {
  const handle = /** @type {any} */ (await dir.getFileHandle(name, { create: true }));
  if (typeof handle.createSyncAccessHandle === "function") {
    const access = await handle.createSyncAccessHandle();
    try {
      access.truncate(0);
      let at = 0;
      while (at < bytes.byteLength) at += access.write(bytes.subarray(at), { at });
      access.flush();
    } finally {
      access.close();
    }
    return;
  }
  const out = await handle.createWritable();
  await out.write(bytes);
  await out.close();
}

/** @param {ArrayBuffer|ArrayBufferView} bytes */
async function sha256(bytes) {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", /** @type {BufferSource} */ (bytes)));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The length of the common prefix of two id lists. @param {ArrayLike<number>} a @param {ArrayLike<number>} b */
export function commonPrefix(a, b) {
  const limit = Math.min(a.length, b.length);
  let n = 0;
  while (n < limit && a[n] === b[n]) n++;
  return n;
}

/**
 * An entry's tensors, as views of its payload (laid out as `meta.tensors` says).
 * @param {ArrayBuffer} payload @param {EntryMeta} meta @returns {CacheTensor[]}
 */
function tensorsOf(payload, meta) {
  let offset = 0;
  return meta.tensors.map(({ name, type, dims }) => {
    const Data = type === "float16" ? Uint16Array : Float32Array;
    const data = new Data(payload, offset, dims.reduce((a, b) => a * b, 1));
    offset += data.byteLength;
    return { name, type, dims, data };
  });
}

export class PromptCaches {
  constructor() {
    this.settings = { ...PROMPT_CACHE_DEFAULTS };
    /** @type {Map<string, EntryMeta>} the descriptions read so far, by entry id */
    this.metas = new Map();
    /** @type {Promise<unknown>} writes run one after the other */
    this.writes = Promise.resolve();
  }

  /** @param {Partial<typeof PROMPT_CACHE_DEFAULTS>} changes */
  configure(changes) {
    for (const [k, v] of Object.entries(changes)) {
      if (v !== null && v !== undefined && k in this.settings) /** @type {any} */ (this.settings)[k] = v;
    }
    return { ...this.settings };
  }

  /** The folder, or null where the browser has no OPFS. @returns {Promise<FileSystemDirectoryHandle|null>} */
  async #dir() {
    try {
      const root = await navigator.storage.getDirectory();
      return await root.getDirectoryHandle(DIR, { create: true });
    } catch {
      return null;
    }
  }

  /** Every finished entry's description, read from the folder (another tab's writes included). */
  async #scan() {
    const dir = await this.#dir();
    if (!dir) return [];
    /** @type {Set<string>} */
    const seen = new Set();
    for await (const [name, handle] of /** @type {any} */ (dir).entries()) {
      if (!name.endsWith(".json") || handle.kind !== "file") continue;
      const id = name.slice(0, -5);
      seen.add(id);
      if (this.metas.has(id)) continue;
      try {
        const meta = JSON.parse(await (await handle.getFile()).text());
        if (meta?.version === VERSION && meta.id === id && Array.isArray(meta.ids)) this.metas.set(id, meta);
      } catch {
        // being written, or not ours: skipped
      }
    }
    for (const id of [...this.metas.keys()]) if (!seen.has(id)) this.metas.delete(id);
    return [...this.metas.values()];
  }

  /**
   * The entry of `modelKey` sharing the longest prefix with `ids`, and that prefix's length.
   * @param {string} modelKey @param {ArrayLike<number>} ids @returns {Promise<{meta: EntryMeta, common: number}|null>}
   */
  async best(modelKey, ids) {
    let found = null;
    for (const meta of await this.#scan()) {
      if (meta.model_key !== modelKey) continue;
      const common = commonPrefix(meta.ids, ids);
      if (common > (found?.common ?? 0)) found = { meta, common };
    }
    return found;
  }

  /**
   * An entry's tensors, or null when its payload is missing or is not what its description says
   * (the entry is then deleted).
   * @param {EntryMeta} meta @returns {Promise<CacheTensor[]|null>}
   */
  async read(meta) {
    const dir = await this.#dir();
    if (!dir) return null;
    let payload;
    try {
      payload = await (await (await dir.getFileHandle(`${meta.id}.kv`)).getFile()).arrayBuffer();
    } catch {
      payload = null;
    }
    if (!payload || payload.byteLength !== meta.bytes || (await sha256(payload)) !== meta.sha256) {
      await this.#remove(dir, meta.id);
      return null;
    }
    meta.last_used = Date.now();
    this.#queue(() => writeFile(dir, `${meta.id}.json`, new TextEncoder().encode(JSON.stringify(meta))));
    return tensorsOf(payload, meta);
  }

  /**
   * Keep `ids`' cache tensors as a new entry (in the background: writes run one at a time), unless it
   * is too short or an entry of the same key already holds all of `ids`. Entries whose tokens are a
   * prefix of `ids` are replaced; the least recently used go past the budget.
   * @param {string} modelKey @param {string} model @param {number[]} ids @param {CacheTensor[]} tensors
   * @returns {Promise<unknown>}
   */
  save(modelKey, model, ids, tensors) {
    if (!this.settings.enabled || ids.length < this.settings.min_tokens) return Promise.resolve();
    return this.#queue(async () => {
      const dir = await this.#dir();
      if (!dir) return;
      const metas = (await this.#scan()).filter((m) => m.model_key === modelKey);
      if (metas.some((m) => m.ids.length >= ids.length && commonPrefix(m.ids, ids) === ids.length)) return;
      const bytes = tensors.reduce((sum, t) => sum + t.data.byteLength, 0);
      if (bytes > this.settings.budget_bytes) return;
      const payload = new Uint8Array(bytes);
      let offset = 0;
      for (const t of tensors) {
        payload.set(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength), offset);
        offset += t.data.byteLength;
      }
      const now = Date.now();
      /** @type {EntryMeta} */
      const meta = { version: VERSION, id: crypto.randomUUID(), model_key: modelKey, model, ids, bytes,
        sha256: await sha256(payload), created: now, last_used: now,
        tensors: tensors.map(({ name, type, dims }) => ({ name, type, dims })) };
      await writeFile(dir, `${meta.id}.kv`, payload);
      await writeFile(dir, `${meta.id}.json`, new TextEncoder().encode(JSON.stringify(meta)));
      this.metas.set(meta.id, meta);
      for (const m of metas) if (commonPrefix(m.ids, ids) === m.ids.length) await this.#remove(dir, m.id);
      await this.#evict(dir);
    });
  }

  /** The entries, most recently used first. @returns {Promise<EntryInfo[]>} */
  async list() {
    await this.settled();
    return (await this.#scan())
      .sort((a, b) => b.last_used - a.last_used)
      .map(({ id, model, ids, bytes, created, last_used }) => ({ id, model, tokens: ids.length, bytes, created, last_used }));
  }

  /** Delete these entries (all when `ids` is null); resolves to how many were deleted. @param {string[]|null} ids */
  async delete(ids) {
    return /** @type {Promise<number>} */ (this.#queue(async () => {
      const dir = await this.#dir();
      if (!dir) return 0;
      const known = new Set((await this.#scan()).map((m) => m.id));
      const doomed = ids === null ? [...known] : ids.filter((id) => known.has(id));
      for (const id of doomed) await this.#remove(dir, id);
      if (ids === null) { // payloads whose writing never finished go too
        const names = [];
        for await (const name of /** @type {any} */ (dir).keys()) names.push(name);
        for (const name of names) await dir.removeEntry(name).catch(() => {});
      }
      return doomed.length;
    }));
  }

  /** Delete the least recently used entries past the budget (after the writes queued before). */
  evict() {
    return this.#queue(async () => {
      const dir = await this.#dir();
      if (dir) await this.#evict(dir);
    });
  }

  /** Wait for the writes queued so far. */
  async settled() {
    await this.writes.catch(() => {});
  }

  /** @template T @param {() => Promise<T>} job @returns {Promise<T|undefined>} */
  #queue(job) {
    const run = this.writes.catch(() => {}).then(job).catch(() => undefined); // a failed write is a miss, later
    this.writes = run;
    return run;
  }

  /** @param {FileSystemDirectoryHandle} dir @param {string} id */
  async #remove(dir, id) {
    this.metas.delete(id);
    for (const name of [`${id}.json`, `${id}.kv`]) {
      try {
        await dir.removeEntry(name);
      } catch {
        // gone already (another tab)
      }
    }
  }

  /**
   * Delete the least recently used entries until the rest fit the budget, and the payloads whose
   * description never came (a page closed while writing) once they are an hour old.
   * @param {FileSystemDirectoryHandle} dir
   */
  async #evict(dir) {
    const metas = (await this.#scan()).sort((a, b) => b.last_used - a.last_used);
    let total = 0;
    for (const m of metas) {
      total += m.bytes;
      if (total > this.settings.budget_bytes) await this.#remove(dir, m.id);
    }
    const described = new Set(metas.map((m) => `${m.id}.kv`));
    /** @type {Array<[string, any]>} */
    const files = [];
    for await (const pair of /** @type {any} */ (dir).entries()) files.push(pair);
    for (const [name, handle] of files) {
      if (!name.endsWith(".kv") || described.has(name)) continue;
      const file = await handle.getFile().catch(() => null);
      if (file && Date.now() - file.lastModified > ORPHAN_MS) await this.#remove(dir, name.slice(0, -3));
    }
  }
}

/**
 * The key a model's kept caches are filed under: the model's identity (its files' hash) with what
 * changes the values of its cache (the device's kernels, the weights' form).
 * @param {string} identity @param {string} device @param {string} form
 */
export async function modelCacheKey(identity, device, form) {
  return sha256(new TextEncoder().encode(JSON.stringify([VERSION, identity, device, form])));
}

/** Bytes of a GGUF file its fingerprint reads besides the start: this many slices of SLICE bytes. */
const SLICES = 32;
const SLICE = 64 * 1024;

/**
 * A GGUF file's identity, read in a few milliseconds: the SHA-256 of its size, its first MiB (the
 * header: names, shapes, types) and 32 slices of 64 KiB spread over its weights, with the ONNX graph
 * it runs as (so the weights' form counts). Any re-quantization or fine-tune changes the slices.
 * @param {Blob} file @param {Uint8Array} graph
 */
export async function ggufIdentity(file, graph) {
  /** @type {Uint8Array[]} */
  const parts = [new TextEncoder().encode(String(file.size)), new Uint8Array(await file.slice(0, 2 ** 20).arrayBuffer())];
  for (let i = 0; i < SLICES; i++) {
    const at = Math.floor(((file.size - SLICE) * i) / (SLICES - 1));
    parts.push(new Uint8Array(await file.slice(Math.max(0, at), Math.max(0, at) + SLICE).arrayBuffer()));
  }
  parts.push(graph);
  const all = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let offset = 0;
  for (const p of parts) {
    all.set(p, offset);
    offset += p.byteLength;
  }
  return sha256(all);
}
