// @ts-check
// The document index's writes on the page client: collections of documents with named search
// indexes, kept in IndexedDB (the CSI's `search` and `documents` read them).

import { cancelOnAbort, deadline, requestCall } from "./calls.js";

/**
 * @typedef {import("./calls.js").CallOptions} CallOptions
 * @typedef {import("../../worker/protocol.js").Progress} Progress
 * @typedef {{documents: string[], chunks: number}} Committed
 *   what an index write committed before it was stopped: the documents' names, their chunks
 * @typedef {import("./worker_client.js").Handlers} Handlers
 */

/**
 * @template {import("./calls.js").RequestType} K
 * @typedef {import("./calls.js").RequestOf<K>} RequestOf
 */

/**
 * An index write that `options.signal` (an AbortSignal) can stop: the worker ends it at its next
 * step (between two chunks, two embedding calls), dropping the batch not yet committed, and it
 * rejects with an `AbortError` whose message, and `committed`, say which documents went in (each
 * whole; the others not at all). `interruptGenerate()` stops it too.
 * @template R, T
 * @param {import("./worker_client.js").WorkerClient} client
 * @param {(request: R, handlers: Handlers) => Promise<T>} send sends the write with these handlers
 * @returns {(request: R, options?: CallOptions) => Promise<T>}
 */
function stoppableWrite(client, send) {
  return (request, options = {}) => {
    const id = client.newId();
    const cancel = () => client.cancel(id);
    const release = cancelOnAbort(options?.signal, cancel);
    const { timeoutMs, progress } = deadline(options);
    /** @type {Committed} */
    const committed = { documents: [], chunks: 0 };
    /** @param {Progress} p */
    const follow = (p) => {
      const q = /** @type {any} */ (p);
      if (q.stage === "index") { // each committed batch, in order
        committed.documents.push(...(q.documents ?? []));
        if (typeof q.chunks === "number") committed.chunks = q.chunks;
      }
      progress?.(p);
    };
    return send(request, { id, timeoutMs, progress: follow }).finally(release).catch((err) => {
      if (err?.name === "AbortError") err.committed = committed;
      throw err;
    });
  };
}

/** The `index` namespace of an engine. @param {import("./worker_client.js").WorkerClient} client */
export function indexApi(client) {
  return {
    /**
     * `{namespace, collection, index, model = "all-minilm-l6-v2", max_tokens = 128, overlap = 0, hybrid = false}`
     * -> the index's configuration and `created`; existing documents are indexed (progress as `put`).
     * `{signal}` stops the indexing within about a second (`AbortError`; calling it again finishes it).
     */
    createIndex: stoppableWrite(client, (/** @type {RequestOf<"index_create">} */ request, handlers) =>
      client.send("index_create", { request }, handlers)),
    /**
     * `[{path: {namespace, collection, name}, contents: [{text} | "image"], metadata}]` -> `{documents, chunks}`.
     * Replaces documents with the same path. `progress({loaded, total, documents, chunks})` follows each commit.
     * `{signal}` (or `interruptGenerate()`) stops it at its next step: it rejects with an
     * `AbortError` whose `committed` is `{documents: names, chunks}` of what went in.
     */
    put: stoppableWrite(client, (/** @type {RequestOf<"index_put">} */ request, handlers) =>
      client.send("index_put", { request }, handlers)),
    /** `[{namespace, collection, name}]` -> whether each existed */
    delete: requestCall(client, "index_delete"),
    /** `{namespace?, collection?}` -> `{collections: [{namespace, collection, indexes}], documents?: [{name, chunks}]}` */
    list: requestCall(client, "index_list", {}),
    /** `{namespace, collection, index}` drops an index; `{namespace, collection}` the whole collection */
    drop: requestCall(client, "index_drop"),
  };
}
