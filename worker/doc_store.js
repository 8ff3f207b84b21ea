// The document index's store (csi.index.store.IndexStore for the worker): collections, indexes,
// documents and chunks in IndexedDB, each write one transaction acknowledged once committed, and
// every index loaded into memory (a VectorIndex) on first use and kept in step with the writes.
// Structured arguments and results cross to Python as JSON text; metadata stays the JSON text
// Python wrote, so integers and floats keep their types. Vectors cross as raw float32 bytes.

import { prefixRange, result, transact } from "./idb.js";
import { VectorIndex } from "./vector_index.js";

const CHANNEL = "csi-web-documents";
const WRITE_LOCK = "csi-web-index-writes";

/**
 * An index's configuration as Python writes it (csi.index.store.IndexConfig), stored beside its key.
 * @typedef {{namespace: string, collection: string, index: string, model: string, max_tokens: number,
 *            overlap: number, hybrid: boolean, dims: number}} IndexConfig
 */

/** @param {Uint8Array} bytes @param {number} offset floats @param {number} count floats */
function floats(bytes, offset, count) {
  const out = new Float32Array(count);
  new Uint8Array(out.buffer).set(bytes.subarray(offset * 4, (offset + count) * 4));
  return out;
}

/** @param {string[]} key */
const id = (key) => JSON.stringify(key);

export class DocStore {
  constructor() {
    /** @type {Map<string, {loaded: Promise<VectorIndex>|null}>} by index key */
    this.loaded = new Map();
    this.generation = 0;
    this.lastLoadMs = 0;
    // Another tab wrote to a collection: forget what is loaded from it.
    this.channel = typeof BroadcastChannel === "function" ? new BroadcastChannel(CHANNEL) : null;
    if (this.channel) this.channel.onmessage = (e) => this.forget(e.data.namespace, e.data.collection);
  }

  /** @param {string} namespace @param {string} collection */
  forget(namespace, collection) {
    for (const [k, slot] of this.loaded) {
      const key = JSON.parse(k);
      if (key[0] === namespace && key[1] === collection) slot.loaded = null;
    }
  }

  /** @param {string} namespace @param {string} collection */
  changed(namespace, collection) {
    this.channel?.postMessage({ namespace, collection });
  }

  // ---- reads of configuration -------------------------------------------------------------------

  async collections() {
    const keys = await transact(["collections"], "readonly", (tx) => result(tx.objectStore("collections").getAllKeys()));
    return JSON.stringify(keys);
  }

  /** @param {string|null|undefined} namespace @param {string|null|undefined} collection */
  async indexes(namespace, collection) {
    return JSON.stringify(await this.configs(namespace, collection));
  }

  /**
   * @param {string|null|undefined} namespace @param {string|null|undefined} collection
   * @returns {Promise<IndexConfig[]>}
   */
  async configs(namespace, collection) {
    // Python's None arrives as undefined
    const prefix = namespace == null ? [] : collection == null ? [namespace] : [namespace, collection];
    return transact(["indexes"], "readonly", (tx) =>
      result(tx.objectStore("indexes").getAll(prefix.length ? prefixRange(prefix) : undefined)),
    ).then((rows) => rows.map(({ key, ...config }) => config));
  }

  /**
   * The index configurations of each collection of `paths` ([namespace, collection, ...]), by `id([ns, coll])`.
   * @param {string[][]} paths @returns {Promise<Map<string, IndexConfig[]>>}
   */
  async configsOf(paths) {
    const out = new Map();
    for (const [namespace, collection] of paths) {
      const c = id([namespace, collection]);
      if (!out.has(c)) out.set(c, await this.configs(namespace, collection));
    }
    return out;
  }

  /** @param {string} namespace @param {string} collection @returns {Promise<string[]>} */
  async names(namespace, collection) {
    const keys = await transact(["documents"], "readonly", (tx) =>
      result(tx.objectStore("documents").getAllKeys(prefixRange([namespace, collection]))));
    return keys.map((k) => /** @type {string[]} */ (k)[2]);
  }

  /** @param {string} namespace @param {string} collection */
  async documentNames(namespace, collection) {
    return JSON.stringify(await this.names(namespace, collection));
  }

  /**
   * Names of the collection's documents with no chunks in `index`.
   * @param {string} namespace @param {string} collection @param {string} index
   */
  async unindexed(namespace, collection, index) {
    const [docs, done] = await transact(["documents", "chunks"], "readonly", (tx) => Promise.all([
      result(tx.objectStore("documents").getAllKeys(prefixRange([namespace, collection]))),
      result(tx.objectStore("chunks").getAllKeys(prefixRange([namespace, collection, index]))),
    ]));
    const indexed = new Set(done.map((k) => /** @type {string[]} */ (k)[3]));
    return JSON.stringify(docs.map((k) => /** @type {string[]} */ (k)[2]).filter((n) => !indexed.has(n)));
  }

  // ---- writes ------------------------------------------------------------------------------------

  /** @param {string} configJson an {@link IndexConfig} */
  async createIndex(configJson) {
    const c = JSON.parse(configJson);
    await transact(["collections", "indexes"], "readwrite", (tx) => {
      tx.objectStore("collections").put({ key: [c.namespace, c.collection] });
      tx.objectStore("indexes").put({ key: [c.namespace, c.collection, c.index], ...c });
    });
    this.changed(c.namespace, c.collection);
  }

  /** @param {string} namespace @param {string} collection @param {string} index */
  async dropIndex(namespace, collection, index) {
    await transact(["indexes", "chunks"], "readwrite", (tx) => {
      tx.objectStore("indexes").delete([namespace, collection, index]);
      tx.objectStore("chunks").delete(prefixRange([namespace, collection, index]));
    });
    this.loaded.delete(id([namespace, collection, index]));
    this.forget(namespace, collection);
    this.changed(namespace, collection);
  }

  /** @param {string} namespace @param {string} collection */
  async dropCollection(namespace, collection) {
    const range = prefixRange([namespace, collection]);
    await transact(["collections", "indexes", "documents", "chunks"], "readwrite", (tx) => {
      tx.objectStore("collections").delete([namespace, collection]);
      for (const s of ["indexes", "documents", "chunks"]) tx.objectStore(s).delete(range);
    });
    for (const k of [...this.loaded.keys()]) {
      const key = JSON.parse(k);
      if (key[0] === namespace && key[1] === collection) this.loaded.delete(k);
    }
    this.forget(namespace, collection);
    this.changed(namespace, collection);
  }

  /**
   * Take the site-wide lock on index writes (a Web Lock, so other tabs' workers wait for it too);
   * resolves to the function that releases it. A worker that dies releases it with it.
   * @returns {Promise<() => void>}
   */
  lockWrites() {
    return new Promise((resolve, reject) => {
      navigator.locks.request(WRITE_LOCK, () => new Promise((release) => resolve(() => release(undefined))))
        .catch(reject);
    });
  }

  /**
   * Write documents with their chunks for every index of their collections, in one transaction.
   * docs: [{namespace, collection, name, body, metadata, chunks: [{index, items, starts, ends,
   * texts, terms, offset}]}] where body is the JSON text of {contents, metadata}, metadata its
   * metadata's JSON text, offset where the chunks' vectors start in `vectors` (floats).
   * @param {string} docsJson @param {Uint8Array} vectors
   */
  async putDocuments(docsJson, vectors) {
    /** @type {any[]} */
    const docs = JSON.parse(docsJson);
    const configs = await this.configsOf(docs.map((d) => [d.namespace, d.collection]));
    /** @type {[string[], string, any, Float32Array][]} applied to loaded indexes once committed */
    const applied = [];
    /** @type {string[][]} */
    const removed = [];
    await transact(["collections", "documents", "chunks"], "readwrite", (tx) => {
      const chunks = tx.objectStore("chunks");
      for (const d of docs) {
        tx.objectStore("collections").put({ key: [d.namespace, d.collection] });
        tx.objectStore("documents").put({ key: [d.namespace, d.collection, d.name], body: d.body, metadata: d.metadata });
        const given = new Map(d.chunks.map((/** @type {any} */ cs) => [cs.index, cs]));
        for (const config of /** @type {IndexConfig[]} */ (configs.get(id([d.namespace, d.collection])))) {
          const key = [d.namespace, d.collection, config.index, d.name];
          const cs = given.get(config.index);
          if (!cs) {
            chunks.delete(key);
            removed.push(key);
            continue;
          }
          const v = floats(vectors, cs.offset, cs.texts.length * config.dims);
          chunks.put({ key, metadata: d.metadata, items: cs.items, starts: cs.starts, ends: cs.ends,
            texts: cs.texts, terms: cs.terms, vectors: v });
          applied.push([key, d.metadata, cs, v]);
        }
      }
    });
    await this.apply(applied, removed);
    for (const c of configs.keys()) this.changed(.../** @type {[string, string]} */ (JSON.parse(c)));
  }

  /**
   * Write one index's chunks of existing documents: [{name, items, ..., offset}].
   * @param {string} namespace @param {string} collection @param {string} index
   * @param {string} chunksJson @param {Uint8Array} vectors
   */
  async addChunks(namespace, collection, index, chunksJson, vectors) {
    /** @type {any[]} */
    const sets = JSON.parse(chunksJson);
    const [config] = (await this.configs(namespace, collection)).filter((c) => c.index === index);
    if (!config) throw new Error(`no index ${index}`);
    const docs = await transact(["documents"], "readonly", (tx) =>
      Promise.all(sets.map((cs) => result(tx.objectStore("documents").get([namespace, collection, cs.name])))));
    /** @type {[string[], string, any, Float32Array][]} */
    const applied = [];
    await transact(["chunks"], "readwrite", (tx) => {
      for (const [i, cs] of sets.entries()) {
        if (!docs[i]) throw new Error(`document ${cs.name} vanished`);
        cs.metadata = docs[i].metadata;
        const key = [namespace, collection, index, cs.name];
        const v = floats(vectors, cs.offset, cs.texts.length * config.dims);
        tx.objectStore("chunks").put({ key, metadata: cs.metadata, items: cs.items, starts: cs.starts,
          ends: cs.ends, texts: cs.texts, terms: cs.terms, vectors: v });
        applied.push([key, cs.metadata, cs, v]);
      }
    });
    await this.apply(applied, []);
    this.changed(namespace, collection);
  }

  /** @param {string} pathsJson [[namespace, collection, name]] @returns {Promise<string>} JSON [existed] */
  async deleteDocuments(pathsJson) {
    /** @type {string[][]} */
    const paths = JSON.parse(pathsJson);
    const configs = await this.configsOf(paths);
    // a document's chunks sit under every index of its collection
    const removed = paths.flatMap((p) => /** @type {IndexConfig[]} */ (configs.get(id([p[0], p[1]]))).map((c) => [p[0], p[1], c.index, p[2]]));
    const existed = await transact(["documents", "chunks"], "readwrite", (tx) => {
      const docs = tx.objectStore("documents");
      const found = paths.map((p) => result(docs.count(p)));
      for (const p of paths) docs.delete(p);
      for (const k of removed) tx.objectStore("chunks").delete(k);
      return Promise.all(found);
    });
    await this.apply([], removed);
    for (const c of configs.keys()) this.changed(.../** @type {[string, string]} */ (JSON.parse(c)));
    const seen = new Set();
    return JSON.stringify(existed.map((n, i) => {
      const first = !seen.has(id(paths[i]));
      seen.add(id(paths[i]));
      return first && n > 0;
    }));
  }

  /**
   * Apply committed writes to the indexes in memory (or have them reloaded).
   * @param {[string[], string, import("./vector_index.js").ChunkSet, Float32Array][]} puts
   *   [chunks key, metadata JSON, chunk set, vectors]
   * @param {string[][]} removes chunks keys
   */
  async apply(puts, removes) {
    /** @param {string[]} key @param {(index: VectorIndex) => void} change */
    const touch = async (key, change) => {
      const k = id(key.slice(0, 3));
      const slot = this.loaded.get(k);
      if (!slot?.loaded) return; // not in memory: it will load what was committed
      let index;
      try {
        index = await slot.loaded;
      } catch {
        this.loaded.delete(k); // its load failed: the next search loads it afresh
        return;
      }
      change(index);
      index.generation = ++this.generation;
      // replaced and deleted chunks stay in memory as dead rows: past a point, reload the live ones
      if (index.rows - index.live > Math.max(4096, index.live)) this.loaded.delete(k);
    };
    for (const [key, metadata, cs, v] of puts) await touch(key, (index) => index.put(key[3], metadata, cs, v));
    for (const key of removes) await touch(key, (index) => index.remove(key[3]));
  }

  // ---- reads of documents and search --------------------------------------------------------------

  /** @param {string} pathsJson @returns {Promise<string>} JSON list of documents or null */
  async documents(pathsJson) {
    /** @type {string[][]} */
    const paths = JSON.parse(pathsJson);
    const rows = await transact(["documents"], "readonly", (tx) =>
      Promise.all(paths.map((p) => result(tx.objectStore("documents").get(p)))));
    const parts = rows.map((row, i) => {
      if (!row) return "null";
      const [namespace, collection, name] = paths[i];
      return `{"namespace":${JSON.stringify(namespace)},"collection":${JSON.stringify(collection)},`
        + `"name":${JSON.stringify(name)},"body":${row.body}}`;
    });
    return `[${parts.join(",")}]`;
  }

  /**
   * The index in memory, loaded on first use. Writes that commit while it loads are applied to it
   * once loaded (putting or removing a document twice is harmless).
   * @param {string[]} key @returns {Promise<VectorIndex>}
   */
  async index(key) {
    const k = id(key);
    let slot = this.loaded.get(k);
    if (!slot) this.loaded.set(k, (slot = { loaded: null }));
    if (!slot.loaded) {
      const pending = this.load(key);
      slot.loaded = pending;
      pending.catch(() => {
        if (slot.loaded === pending) slot.loaded = null;
      });
    }
    return slot.loaded;
  }

  /** @param {string[]} key */
  async load(key) {
    const t0 = performance.now();
    const [ns, coll, name] = key;
    const [config] = (await this.configs(ns, coll)).filter((c) => c.index === name);
    if (!config) throw Object.assign(new Error(`no index ${name}`), { name: "NoIndex" });
    const rows = await transact(["chunks"], "readonly", (tx) => result(tx.objectStore("chunks").getAll(prefixRange(key))));
    let total = 0;
    for (const row of rows) total += row.texts.length;
    const index = new VectorIndex(config.dims, config.hybrid, total);
    for (const row of rows) index.put(row.key[3], row.metadata, row, row.vectors);
    index.generation = ++this.generation;
    this.lastLoadMs = performance.now() - t0;
    return index;
  }

  /**
   * Document name -> index -> chunk count, for a collection.
   * @param {string} namespace @param {string} collection
   */
  async chunkCounts(namespace, collection) {
    /** @type {Record<string, Record<string, number>>} */
    const out = {};
    for (const n of await this.names(namespace, collection)) out[n] = {};
    for (const c of await this.configs(namespace, collection)) {
      const index = await this.index([namespace, collection, c.index]);
      for (const [n, count] of Object.entries(index.counts())) (out[n] ??= {})[c.index] = count;
    }
    return JSON.stringify(out);
  }

  /**
   * The catalog of a loaded index, or null when `known` is its current generation.
   * @param {string} namespace @param {string} collection @param {string} name @param {number} known
   */
  async catalog(namespace, collection, name, known) {
    const index = await this.index([namespace, collection, name]);
    if (index.generation === known) return null;
    return `{"generation":${index.generation},"names":${JSON.stringify(index.names)},`
      + `"metadata":[${index.metadata.map((m) => m ?? "null").join(",")}]}`;
  }

  /**
   * Run the kernel. `optionsJson`: {k, min_score, terms, semantic_weight, k1, b, generation}.
   * @param {string} namespace @param {string} collection @param {string} name
   * @param {Uint8Array} queryBytes float32 @param {string} optionsJson
   * @param {Uint8Array|null} allowed one byte per ordinal
   * @returns {Promise<string>} JSON [[name, item, start, end, content, score]]
   */
  async search(namespace, collection, name, queryBytes, optionsJson, allowed) {
    const o = JSON.parse(optionsJson);
    const index = await this.index([namespace, collection, name]);
    if (allowed && index.generation !== o.generation) {
      const err = new Error("the index changed since its catalog was read");
      err.name = "StaleCatalog";
      throw err;
    }
    const q = floats(queryBytes, 0, queryBytes.length / 4);
    const hits = index.search(q, { k: o.k, minScore: o.min_score, terms: o.terms, semanticWeight: o.semantic_weight,
      k1: o.k1, b: o.b, allowed });
    return JSON.stringify(hits.map((h) => [h.name, h.item, h.start, h.end, h.content, h.score]));
  }
}
