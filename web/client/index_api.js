// @ts-check
// The document index's writes on the page client: collections of documents with named search
// indexes, kept in IndexedDB (the CSI's `search` and `documents` read them).

import { requestCall } from "./calls.js";

/** The `index` namespace of an engine. @param {import("./worker_client.js").WorkerClient} client */
export function indexApi(client) {
  return {
    /**
     * `{namespace, collection, index, model = "all-minilm-l6-v2", max_tokens = 128, overlap = 0, hybrid = false}`
     * -> the index's configuration and `created`; existing documents are indexed (progress as `put`)
     */
    createIndex: requestCall(client, "index_create"),
    /**
     * `[{path: {namespace, collection, name}, contents: [{text} | "image"], metadata}]` -> `{documents, chunks}`.
     * Replaces documents with the same path. `progress({loaded, total, documents, chunks})` follows each commit.
     */
    put: requestCall(client, "index_put"),
    /** `[{namespace, collection, name}]` -> whether each existed */
    delete: requestCall(client, "index_delete"),
    /** `{namespace?, collection?}` -> `{collections: [{namespace, collection, indexes}], documents?: [{name, chunks}]}` */
    list: requestCall(client, "index_list", {}),
    /** `{namespace, collection, index}` drops an index; `{namespace, collection}` the whole collection */
    drop: requestCall(client, "index_drop"),
  };
}
