"""The document index in `python3 build.py bench`: search latency, IndexedDB load and ingestion.

Indexes of 10k and 100k chunks are filled synthetically (random unit vectors, short texts of
real words) straight into IndexedDB from the page with the worker's own store code
(worker/doc_store.js); the worker then loads them from the shared database on first use and
searches them with real query embeddings. Ingestion through `engine.index.put` embeds real text
with the built-in model. Runs in a persistent browser profile in a temporary directory, so
IndexedDB lives on disk (an incognito context would keep it in memory).
"""

from __future__ import annotations

import random
import re
import statistics
import sys
import tempfile
from collections import Counter
from typing import Any

NAMESPACE = "bench"
MODEL = "all-minilm-l6-v2"
DIMS = 384
TOP_K = 10
QUERIES = 30
FILTERED_QUERIES = 10
CHUNKS_PER_DOCUMENT = 10
DOCUMENTS_PER_WRITE = 100  # one putDocuments call (one transaction): 1000 chunks per index
WORDS_PER_CHUNK = 12
GROUPS = 10  # metadata {"group": i % GROUPS}: the filtered search keeps one group (10%)
INGEST_CHARS = 200_000
INGEST_DOCUMENT_CHARS = 4_000
INGEST_EMBED_SAMPLE = 128  # chunks embedded alone (engine.embeddings.create) for the breakdown
# (collection, chunks, indexes): both indexes of a collection hold the same chunks and vectors
SIZES = [("c10k", 10_000, ["semantic", "hybrid"]), ("c100k", 100_000, ["semantic", "hybrid"])]

# Shared helpers, defined once on the page.
SETUP_SCRIPT = """
async () => {
  const { DocStore } = await import('/worker/doc_store.js');
  const { transact, result, prefixRange } = await import('/worker/idb.js');
  const { CreateWebWorkerEngine } = await import('/web/engine.js');
  const pct = (xs, p) => {  // nearest rank
    const s = [...xs].sort((a, b) => a - b);
    return s[Math.max(0, Math.ceil(p * s.length) - 1)];
  };
  const stats = (xs) => ({median_ms: pct(xs, 0.5), p95_ms: pct(xs, 0.95), min_ms: Math.min(...xs),
                          max_ms: Math.max(...xs), runs: xs.length});
  // mulberry32: the same synthetic data every run
  const rng = (seed) => () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const unit = (out, at, dims, rand) => {
    let n = 0;
    for (let j = 0; j < dims; j++) { const x = rand() * 2 - 1; out[at + j] = x; n += x * x; }
    n = Math.sqrt(n);
    for (let j = 0; j < dims; j++) out[at + j] /= n;
  };
  window.__bench = {DocStore, CreateWebWorkerEngine, transact, result, prefixRange, stats, rng, unit, engine: null};
  return true;
}
"""

FILL_SCRIPT = """
async ([spec, vocab]) => {
  const {DocStore, rng, unit} = window.__bench;
  const {namespace, collection, indexes, chunks, perDoc, perWrite, words, groups, dims, model} = spec;
  const store = new DocStore();
  for (const index of indexes) {
    await store.createIndex(JSON.stringify({namespace, collection, index, model, max_tokens: 128, overlap: 0,
                                            hybrid: index === 'hybrid', dims}));
  }
  const rand = rng(chunks);
  const word = () => vocab[Math.floor(vocab.length * rand() ** 3)];  // skewed: common words are common
  const nDocs = chunks / perDoc;
  let genMs = 0;
  const t0 = performance.now();
  for (let d0 = 0; d0 < nDocs; d0 += perWrite) {
    const g0 = performance.now();
    const n = Math.min(perWrite, nDocs - d0);
    const vectors = new Float32Array(n * perDoc * dims);
    const docs = [];
    for (let i = 0; i < n; i++) {
      const d = d0 + i;
      const texts = [], terms = [], items = [], starts = [], ends = [];
      let at = 0;
      for (let c = 0; c < perDoc; c++) {
        const ws = Array.from({length: words}, word);
        const text = ws.join(' ');
        texts.push(text); terms.push(ws.join(' ')); items.push(0); starts.push(at); ends.push(at + text.length - 1);
        at += text.length + 1;
        unit(vectors, (i * perDoc + c) * dims, dims, rand);
      }
      const metadata = {group: d % groups, doc: d};
      const offset = i * perDoc * dims;  // every index of the collection gets the same chunks
      docs.push({namespace, collection, name: `doc-${d}`,
                 body: JSON.stringify({contents: [{text: texts.join(' ')}], metadata}),
                 metadata: JSON.stringify(metadata),
                 chunks: indexes.map((index) => ({index, items, starts, ends, texts,
                                                  terms: index === 'hybrid' ? terms : [], offset}))});
    }
    const json = JSON.stringify(docs);
    genMs += performance.now() - g0;
    await store.putDocuments(json, new Uint8Array(vectors.buffer));
  }
  const totalMs = performance.now() - t0;
  store.channel?.close();
  return {documents: nDocs, chunks_per_index: chunks, indexes: indexes.length, total_ms: totalMs,
          generate_ms: genMs, write_ms: totalMs - genMs};
}
"""

# In the page: a fresh DocStore loads the index from IndexedDB; then the kernel alone on it.
LOAD_SCRIPT = """
async ([key, queryTerms, rounds]) => {
  const {DocStore, transact, result, prefixRange, stats, rng, unit} = window.__bench;
  const loads = [];
  // the IndexedDB read alone (what DocStore.load does before building the VectorIndex)
  const t0 = performance.now();
  let rows = await transact(['chunks'], 'readonly', (tx) => result(tx.objectStore('chunks').getAll(prefixRange(key))));
  const getAllMs = performance.now() - t0;
  const records = rows.length;
  rows = null;
  let index = null, store = null;
  for (let r = 0; r < rounds; r++) {
    store?.channel?.close();
    index = null;
    store = new DocStore();
    const t = performance.now();
    index = await store.index(key);
    loads.push({ms: performance.now() - t, last_load_ms: store.lastLoadMs});
  }
  const rand = rng(7);
  const q = new Float32Array(index.dims);
  const kernel = [];
  for (let i = 0; i < queryTerms.length + 10; i++) {
    unit(q, 0, index.dims, rand);
    const terms = index.hybrid ? queryTerms[i % queryTerms.length] : null;
    const t = performance.now();
    const hits = index.search(q, {k: 10, minScore: null, terms, semanticWeight: 0.5, k1: 1.2, b: 0.75, allowed: null});
    if (i >= 10) kernel.push(performance.now() - t);  // the first ten warm the JIT up
    if (hits.length !== 10) throw new Error(`kernel gave ${hits.length} hits`);
  }
  const allowed = new Uint8Array(index.names.length);
  for (let d = 0; d < allowed.length; d++) allowed[d] = JSON.parse(index.metadata[d]).group === 3 ? 1 : 0;
  const filtered = [];
  for (let i = 0; i < queryTerms.length; i++) {
    unit(q, 0, index.dims, rand);
    const terms = index.hybrid ? queryTerms[i % queryTerms.length] : null;
    const t = performance.now();
    index.search(q, {k: 10, minScore: null, terms, semanticWeight: 0.5, k1: 1.2, b: 0.75, allowed});
    filtered.push(performance.now() - t);
  }
  const chunks = index.rows;
  store.channel?.close();
  return {rows: chunks, records, get_all_ms: getAllMs, loads, kernel: stats(kernel),
          kernel_filtered: stats(filtered)};
}
"""

BOOT_SCRIPT = """
async ([model, queries]) => {
  const b = window.__bench;
  const t0 = performance.now();
  b.engine = await b.CreateWebWorkerEngine(new Worker('/worker/worker.js', {type: 'module'}), model, {device: 'wasm'});
  const bootMs = performance.now() - t0;
  for (let i = 0; i < 3; i++) await b.engine.embeddings.create({input: queries[i]});  // warm-up
  const embed = [];
  for (const q of queries) {
    const t = performance.now();
    await b.engine.embeddings.create({input: q});
    embed.push(performance.now() - t);
  }
  return {boot_ms: bootMs, query_embedding: b.stats(embed)};
}
"""

SEARCH_SCRIPT = """
async ([path, queries, filtered, filters]) => {
  const {engine, stats} = window.__bench;
  const search = async (query, f = []) => {
    const t = performance.now();
    const [hits] = await engine.csi.search([{index_path: path, query, max_results: 10, min_score: null, filters: f}]);
    const ms = performance.now() - t;
    if (hits.length !== 10) throw new Error(`search gave ${hits.length} hits`);
    return [ms, hits];
  };
  const [firstMs] = await search(queries[0]);  // loads the index from IndexedDB into the worker
  const times = [], embed = [];
  for (const q of queries) {
    times.push((await search(q))[0]);
    const t = performance.now();  // the query's embedding alone, for the breakdown
    await engine.embeddings.create({input: q});
    embed.push(performance.now() - t);
  }
  const [firstFilteredMs] = await search(queries[0], filters);  // also reads the catalog
  const ft = [];
  let filteredError = null;
  for (const q of queries.slice(0, filtered)) {
    let ms, hits;
    try {
      [ms, hits] = await search(q, filters);
    } catch (err) {  // reported, so that the rest of the bench still runs
      filteredError = `${err.name}: ${err.message}`;
      break;
    }
    if (hits.some((h) => !h.document_path.name.endsWith('3'))) throw new Error('the filter let another group through');
    ft.push(ms);
  }
  return {first_search_ms: firstMs, search: stats(times), embed: stats(embed),
          first_filtered_search_ms: firstFilteredMs, filtered_search: ft.length ? stats(ft) : null,
          filtered_search_error: filteredError};
}
"""

INGEST_SCRIPT = """
async ([namespace, collection, model, documents, embedSample]) => {
  const {engine} = window.__bench;
  await engine.index.createIndex({namespace, collection, index: 'semantic', model, max_tokens: 128, overlap: 0,
                                  hybrid: false});
  // warm-up: one small document in another collection
  await engine.index.createIndex({namespace, collection: collection + '-warm', index: 'semantic', model,
                                  max_tokens: 128, overlap: 0, hybrid: false});
  await engine.index.put([{path: {namespace, collection: collection + '-warm', name: 'w'},
                           contents: [{text: documents[0].slice(0, 2000)}], metadata: null}]);
  const t = performance.now();
  const r = await engine.index.put(documents.map((text, i) => ({path: {namespace, collection, name: `d${i}`},
                                                                 contents: [{text}], metadata: {i}})));
  const ms = performance.now() - t;
  // where the time goes: chunking alone, then embedding some of those chunks alone (batches of 32, as put does)
  const t1 = performance.now();
  const chunks = (await engine.csi.chunk(documents.map((text) => ({text, params: {model, max_tokens: 128,
                                                                                   overlap: 0}})))).flat();
  const chunkMs = performance.now() - t1;
  const sample = chunks.slice(0, embedSample);
  const t2 = performance.now();
  for (let i = 0; i < sample.length; i += 32) await engine.embeddings.create({input: sample.slice(i, i + 32)});
  const embedMs = performance.now() - t2;
  return {...r, ms, chunk_ms: chunkMs, chunks_cut: chunks.length, embed_ms: embedMs, embedded: sample.length};
}
"""


def _vocabulary(text: str, size: int = 2000) -> list[str]:
    """The corpus's most common words, most common first (lowercase ASCII: their own BM25 terms)."""
    return [w for w, _ in Counter(re.findall(r"[a-z]+", text.lower())).most_common(size)]


def _queries(vocab: list[str], n: int) -> list[str]:
    rng = random.Random(1)
    return [" ".join(vocab[int(len(vocab) * rng.random() ** 2)] for _ in range(rng.randint(3, 7))) for _ in range(n)]


def _documents(text: str) -> list[str]:
    """``text`` cut at paragraph ends into documents of about INGEST_DOCUMENT_CHARS characters."""
    docs, cur = [], ""
    for para in text.split("\n\n"):
        cur = f"{cur}\n\n{para}" if cur else para
        if len(cur) >= INGEST_DOCUMENT_CHARS:
            docs.append(cur)
            cur = ""
    if cur:
        docs.append(cur)
    return docs


def _log(msg: str) -> None:
    print(f"[bench] document index: {msg}", file=sys.stderr, flush=True)


def index_bench(playwright: Any, url: str, chromium: str, args: list[str]) -> dict[str, Any]:
    """The ``document_index`` part of the bench JSON."""
    from .text import english_text

    corpus = english_text(INGEST_CHARS)
    vocab = _vocabulary(english_text(1_000_000))
    queries = _queries(vocab, QUERIES)
    query_terms = [q.split() for q in queries]
    filters = [{"with_all": [{"field": "group", "condition": {"equal_to": 3}}]}]
    out: dict[str, Any] = {
        "dims": DIMS, "model": MODEL, "max_results": TOP_K, "queries": QUERIES,
        "note": ("synthetic chunks (random unit vectors, 12-word texts) written to IndexedDB with the worker's "
                 "store code, 10 chunks per document; search_top10: engine.csi.search round trips timed on the "
                 "page (query embedding included), the first one per index loading it from IndexedDB into the "
                 "worker; in_page: DocStore.index() load and the VectorIndex kernel alone on the page; "
                 "p95 is nearest-rank; the filter keeps 10% of documents"),
    }
    with tempfile.TemporaryDirectory(prefix="csi-bench-profile-") as profile:
        context = playwright.chromium.launch_persistent_context(profile, executable_path=chromium, args=args)
        try:
            page = context.new_page()
            page.set_default_timeout(1_800_000)
            page.goto(url + "web/engine.js")
            page.evaluate(SETUP_SCRIPT)

            fill = {}
            for collection, chunks, indexes in SIZES:
                _log(f"writing {chunks} synthetic chunks x {len(indexes)} indexes")
                spec = {"namespace": NAMESPACE, "collection": collection, "indexes": indexes, "chunks": chunks,
                        "perDoc": CHUNKS_PER_DOCUMENT, "perWrite": DOCUMENTS_PER_WRITE, "words": WORDS_PER_CHUNK,
                        "groups": GROUPS, "dims": DIMS, "model": MODEL}
                r = page.evaluate(FILL_SCRIPT, [spec, vocab])
                written = r["chunks_per_index"] * r["indexes"]
                fill[collection] = {"documents": r["documents"], "chunks_per_index": r["chunks_per_index"],
                                    "indexes": r["indexes"], "chunks_written": written, "total_ms": r["total_ms"],
                                    "write_ms": r["write_ms"],
                                    "write_chunks_per_s": written / (r["write_ms"] / 1000),
                                    "write_mb_per_s": written * DIMS * 4 / 1e6 / (r["write_ms"] / 1000)}

            page_side: dict[str, Any] = {}
            for collection, _chunks, indexes in SIZES:
                for index in indexes:
                    _log(f"loading {collection}/{index} in the page")
                    r = page.evaluate(LOAD_SCRIPT, [[NAMESPACE, collection, index], query_terms, 3])
                    loads = [x["ms"] for x in r["loads"]]
                    page_side[f"{collection}_{index}"] = {
                        "chunks": r["rows"], "indexeddb_load_first_ms": loads[0],
                        "indexeddb_load_median_ms": statistics.median(loads), "indexeddb_loads_ms": loads,
                        "indexeddb_get_all_alone_ms": r["get_all_ms"], "records_read": r["records"],
                        "kernel_top10_ms": r["kernel"], "kernel_top10_filtered_ms": r["kernel_filtered"]}

            _log("booting the worker engine")
            boot = page.evaluate(BOOT_SCRIPT, [MODEL, queries])
            worker: dict[str, Any] = {}
            for collection, chunks, indexes in SIZES:
                for index in indexes:
                    _log(f"searching {collection}/{index} in the worker")
                    path = {"namespace": NAMESPACE, "collection": collection, "index": index}
                    r = page.evaluate(SEARCH_SCRIPT, [path, queries, FILTERED_QUERIES, filters])
                    kernel = page_side[f"{collection}_{index}"]["kernel_top10_ms"]["median_ms"]
                    worker[f"{collection}_{index}"] = {
                        "chunks": chunks, "hybrid": index == "hybrid",
                        "search_median_ms": r["search"]["median_ms"], "search_p95_ms": r["search"]["p95_ms"],
                        "search_max_ms": r["search"]["max_ms"],
                        "first_search_loading_index_ms": r["first_search_ms"],
                        "indexeddb_load_estimate_ms": r["first_search_ms"] - r["search"]["median_ms"],
                        "first_filtered_search_ms": r["first_filtered_search_ms"],
                        **({"filtered_search_median_ms": r["filtered_search"]["median_ms"],
                            "filtered_search_p95_ms": r["filtered_search"]["p95_ms"]} if r["filtered_search"]
                           else {"filtered_search_error": r["filtered_search_error"]}),
                        "breakdown_median_ms": {
                            "query_embedding_round_trip": r["embed"]["median_ms"],
                            "kernel_in_page": kernel,
                            "rest": r["search"]["median_ms"] - r["embed"]["median_ms"] - kernel},
                    }

            _log("ingesting real text with the built-in model")
            documents = _documents(corpus)
            r = page.evaluate(INGEST_SCRIPT, [NAMESPACE, "ingest", MODEL, documents, INGEST_EMBED_SAMPLE])
            embed_rate = r["embedded"] / (r["embed_ms"] / 1000)
            ingest = {"text_chars": sum(len(d) for d in documents), "documents": r["documents"],
                      "chunks": r["chunks"], "max_tokens": 128, "overlap": 0, "ms": r["ms"],
                      "chunks_per_s": r["chunks"] / (r["ms"] / 1000),
                      "documents_per_s": r["documents"] / (r["ms"] / 1000),
                      "chars_per_s": sum(len(d) for d in documents) / (r["ms"] / 1000),
                      "embedding_alone_chunks_per_s": embed_rate,
                      "breakdown_ms": {"chunking_alone": r["chunk_ms"],
                                       "embedding_alone_estimate": r["chunks"] / embed_rate * 1000,
                                       "rest": r["ms"] - r["chunk_ms"] - r["chunks"] / embed_rate * 1000}}
            page.evaluate("() => window.__bench.engine.worker.terminate()")
        finally:
            context.close()

    target = worker.get("c100k_semantic", {}).get("search_p95_ms")
    out.update({
        "worker_boot_ms": boot["boot_ms"],
        "query_embedding_round_trip_ms": boot["query_embedding"],
        "search_top10": worker,
        "in_page": page_side,
        "synthetic_fill": fill,
        "ingestion": ingest,
        "target_100k_search_ms": 150,
        "target_100k_met_by_p95": target is not None and target <= 150,
    })
    return out
