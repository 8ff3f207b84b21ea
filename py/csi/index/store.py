"""Where documents, indexes and chunk embeddings live, and the whole-corpus scoring kernel.

``IndexStore`` is what ``csi.index.service`` needs: durable writes (one transaction per call, returning
only once committed) and a search kernel over every chunk of an index. The worker's store is
worker/doc_store.js (IndexedDB, embeddings in one Float32Array per index); ``MemoryIndexStore``
serves CPython with the same semantics in plain Python.

The kernel's scores: ``cos`` is the dot product of the query with a chunk's unit vector. A chunk
passes the semantic part when ``min_score`` is ``None`` or ``cos >= min_score``. Semantic indexes
return passing chunks scored ``cos``. Hybrid indexes also score chunks with BM25 over their terms
(``k1``, ``b``; ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))`` over the index's live chunks; each
distinct query term once), normalize it by the best BM25 score among the allowed chunks, and return
chunks that pass the semantic part or match a term, scored
``w * (cos if passing else 0) + (1 - w) * bm25 / best``. Ties keep storage order.
"""

from __future__ import annotations

import asyncio
import heapq
import math
from array import array
from collections import Counter
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import InternalError, NotFoundError

Key = tuple[str, str, str]


@dataclass(frozen=True)
class IndexConfig:
    """A named search index of a collection: which model embeds, how chunks are cut, hybrid or not."""

    namespace: str
    collection: str
    index: str
    model: str
    max_tokens: int
    overlap: int
    hybrid: bool
    dims: int

    @property
    def key(self) -> Key:
        return (self.namespace, self.collection, self.index)

    def to_json(self) -> dict[str, Any]:
        return {"namespace": self.namespace, "collection": self.collection, "index": self.index,
                "model": self.model, "max_tokens": self.max_tokens, "overlap": self.overlap,
                "hybrid": self.hybrid, "dims": self.dims}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> IndexConfig:
        return cls(d["namespace"], d["collection"], d["index"], d["model"], int(d["max_tokens"]),
                   int(d["overlap"]), bool(d["hybrid"]), int(d["dims"]))


@dataclass
class ChunkSet:
    """One document's chunks in one index: item number, inclusive character span, text, BM25 terms
    (space-joined; empty for semantic indexes) and the unit embeddings, flat, ``dims`` per chunk."""

    items: list[int] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    terms: list[str] = field(default_factory=list)
    vectors: array = field(default_factory=lambda: array("f"))

    def __len__(self) -> int:
        return len(self.texts)

    def to_json(self) -> dict[str, Any]:
        """Everything but the vectors (which cross as bytes)."""
        return {"items": self.items, "starts": self.starts, "ends": self.ends, "texts": self.texts,
                "terms": self.terms}


@dataclass
class StoredDocument:
    """A document as written: wire-form contents (``{"text": ...}`` or ``"image"``), metadata, and its
    chunks for every index of its collection (index name -> chunks)."""

    namespace: str
    collection: str
    name: str
    contents: list[Any]
    metadata: Any
    chunks: dict[str, ChunkSet] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"namespace": self.namespace, "collection": self.collection, "name": self.name,
                "contents": self.contents, "metadata": self.metadata}


@dataclass(frozen=True)
class ScoreQuery:
    """One run of the kernel. ``allowed`` (one byte per catalog ordinal, of catalog ``generation``)
    restricts the documents; ``terms`` is ``None`` for a purely semantic search."""

    vector: array
    k: int
    min_score: float | None = None
    terms: list[str] | None = None
    semantic_weight: float = 0.5
    k1: float = 1.2
    b: float = 0.75
    allowed: bytes | None = None
    generation: int = 0


@dataclass(frozen=True)
class Hit:
    name: str
    item: int
    start: int
    end: int
    content: str
    score: float


@dataclass(frozen=True)
class Catalog:
    """The documents of a loaded index by ordinal (``None`` where one was deleted), for filtering."""

    generation: int
    names: list[str | None]
    metadata: list[Any]


class StaleCatalogError(Exception):
    """The index changed since the catalog a query's ``allowed`` mask was computed from."""


class IndexStore(Protocol):
    def writing(self) -> AbstractAsyncContextManager[None]:
        """Held around each write operation (read configurations, chunk and embed, commit), so writers
        sharing this store — other tabs of the site too — take turns instead of racing."""
        ...

    async def collections(self) -> list[tuple[str, str]]:
        """Every collection that has a document or an index."""
        ...

    async def indexes(self, namespace: str | None = None, collection: str | None = None) -> list[IndexConfig]: ...

    async def create_index(self, config: IndexConfig) -> None:
        """Record an index (and its collection); durable on return."""
        ...

    async def drop_index(self, key: Key) -> None:
        """Forget an index and its chunks."""
        ...

    async def drop_collection(self, namespace: str, collection: str) -> None:
        """Forget a collection: its documents, indexes and chunks."""
        ...

    async def document_names(self, namespace: str, collection: str) -> list[str]: ...

    async def unindexed(self, key: Key) -> list[str]:
        """Names of the collection's documents that have no chunks in this index."""
        ...

    async def put_documents(self, docs: list[StoredDocument]) -> None:
        """Write documents and their chunks in one transaction, replacing what was there (chunks of
        indexes a document's ``chunks`` does not name are removed)."""
        ...

    async def add_chunks(self, key: Key, chunks: dict[str, ChunkSet]) -> None:
        """Write the chunks of existing documents (name -> chunks) for one index, in one transaction."""
        ...

    async def delete_documents(self, paths: list[tuple[str, str, str]]) -> list[bool]:
        """Delete documents and their chunks in one transaction; whether each existed."""
        ...

    async def documents(self, paths: list[tuple[str, str, str]]) -> list[dict[str, Any] | None]:
        """Documents in ``StoredDocument.to_json`` form, ``None`` where missing."""
        ...

    async def chunk_counts(self, namespace: str, collection: str) -> dict[str, dict[str, int]]:
        """Document name -> index name -> number of chunks."""
        ...

    async def catalog(self, key: Key, known_generation: int | None) -> Catalog | None:
        """The index's catalog, or ``None`` if ``known_generation`` is still current."""
        ...

    async def search(self, key: Key, query: ScoreQuery) -> list[Hit]:
        """The ``k`` best chunks by the kernel's score, best first (``StaleCatalogError`` if
        ``query.generation`` is not the current one while ``allowed`` is given)."""
        ...


# --- the kernel, in plain Python (the worker's is in worker/vector_index.js) ---------------------


@dataclass
class _Row:
    name: str
    ordinal: int
    item: int
    start: int
    end: int
    text: str
    tf: Counter[str]
    vector: array


def score_rows(rows: list[_Row], query: ScoreQuery) -> list[tuple[float, int]]:
    """(score, row number) of the ``k`` best rows, best first; rows are the index's live chunks."""
    q = query.vector
    allowed = query.allowed
    sem: list[float | None] = []
    for row in rows:
        if allowed is not None and not allowed[row.ordinal]:
            sem.append(None)
            continue
        sem.append(math.fsum(a * b for a, b in zip(row.vector, q, strict=True)))
    min_score = query.min_score
    scored: list[tuple[float, int]] = []
    if query.terms is None:
        for r, cos in enumerate(sem):
            if cos is not None and (min_score is None or cos >= min_score):
                scored.append((cos, r))
    else:
        n = len(rows)
        lengths = [sum(row.tf.values()) for row in rows]
        avgdl = sum(lengths) / n if n else 0.0
        bm25 = [0.0] * n
        for term in dict.fromkeys(query.terms):
            df = sum(1 for row in rows if term in row.tf)
            if not df:
                continue
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            for r, row in enumerate(rows):
                tf = row.tf.get(term, 0)
                if tf and sem[r] is not None:
                    norm = 1 - query.b + query.b * lengths[r] / avgdl
                    bm25[r] += idf * tf * (query.k1 + 1) / (tf + query.k1 * norm)
        best = max((bm25[r] for r in range(n) if sem[r] is not None), default=0.0)
        w = query.semantic_weight
        for r, cos in enumerate(sem):
            if cos is None:
                continue
            passing = min_score is None or cos >= min_score
            lex = bm25[r] / best if best > 0 else 0.0
            if passing or lex > 0:
                scored.append((w * (cos if passing else 0.0) + (1 - w) * lex, r))
    return heapq.nsmallest(query.k, scored, key=lambda s: (-s[0], s[1]))


def _tf(terms: str) -> Counter[str]:
    return Counter(terms.split())


class MemoryIndexStore:
    """``IndexStore`` in memory, for CPython (tests, ``csi.local``)."""

    def __init__(self) -> None:
        self._lock = asyncio.Lock()
        self._collections: set[tuple[str, str]] = set()
        self._indexes: dict[Key, IndexConfig] = {}
        self._docs: dict[tuple[str, str, str], dict[str, Any]] = {}
        self._chunks: dict[Key, dict[str, ChunkSet]] = {}  # index -> document name -> chunks
        self._generation = 0
        self._loaded: dict[Key, tuple[int, list[_Row], Catalog]] = {}

    def writing(self) -> AbstractAsyncContextManager[None]:
        return self._lock

    def _changed(self, namespace: str, collection: str) -> None:
        self._generation += 1
        for key in [k for k in self._loaded if k[:2] == (namespace, collection)]:
            del self._loaded[key]

    async def collections(self) -> list[tuple[str, str]]:
        return sorted(self._collections)

    async def indexes(self, namespace: str | None = None, collection: str | None = None) -> list[IndexConfig]:
        return [c for k, c in sorted(self._indexes.items())
                if namespace in (None, k[0]) and collection in (None, k[1])]

    async def create_index(self, config: IndexConfig) -> None:
        self._collections.add((config.namespace, config.collection))
        self._indexes[config.key] = config
        self._chunks.setdefault(config.key, {})
        self._changed(config.namespace, config.collection)

    async def drop_index(self, key: Key) -> None:
        self._indexes.pop(key, None)
        self._chunks.pop(key, None)
        self._changed(key[0], key[1])

    async def drop_collection(self, namespace: str, collection: str) -> None:
        self._collections.discard((namespace, collection))
        for key in [k for k in self._indexes if k[:2] == (namespace, collection)]:
            await self.drop_index(key)
        for path in [p for p in self._docs if p[:2] == (namespace, collection)]:
            del self._docs[path]
        self._changed(namespace, collection)

    async def document_names(self, namespace: str, collection: str) -> list[str]:
        return sorted(p[2] for p in self._docs if p[:2] == (namespace, collection))

    async def unindexed(self, key: Key) -> list[str]:
        done = self._chunks.get(key, {})
        return [n for n in await self.document_names(key[0], key[1]) if n not in done]

    async def put_documents(self, docs: list[StoredDocument]) -> None:
        for doc in docs:
            self._collections.add((doc.namespace, doc.collection))
            self._docs[(doc.namespace, doc.collection, doc.name)] = doc.to_json()
            for key, by_name in self._chunks.items():
                if key[:2] == (doc.namespace, doc.collection):
                    by_name.pop(doc.name, None)
                    if key[2] in doc.chunks:
                        by_name[doc.name] = doc.chunks[key[2]]
            self._changed(doc.namespace, doc.collection)

    async def add_chunks(self, key: Key, chunks: dict[str, ChunkSet]) -> None:
        if key not in self._chunks:
            raise InternalError(f"no index {key}")
        self._chunks[key].update(chunks)
        self._changed(key[0], key[1])

    async def delete_documents(self, paths: list[tuple[str, str, str]]) -> list[bool]:
        existed = []
        for path in paths:
            existed.append(self._docs.pop(path, None) is not None)
            for key, by_name in self._chunks.items():
                if key[:2] == path[:2]:
                    by_name.pop(path[2], None)
            self._changed(path[0], path[1])
        return existed

    async def documents(self, paths: list[tuple[str, str, str]]) -> list[dict[str, Any] | None]:
        return [self._docs.get(p) for p in paths]

    async def chunk_counts(self, namespace: str, collection: str) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {n: {} for n in await self.document_names(namespace, collection)}
        for key, by_name in self._chunks.items():
            if key[:2] == (namespace, collection):
                for name, chunks in by_name.items():
                    out.setdefault(name, {})[key[2]] = len(chunks)
        return out

    def _load(self, key: Key) -> tuple[int, list[_Row], Catalog]:
        if key not in self._loaded:
            if key not in self._chunks:
                raise NotFoundError(f"index {key[2]!r} does not exist in collection {key[1]!r}", "index_path.index")
            rows: list[_Row] = []
            names: list[str | None] = []
            metadata: list[Any] = []
            dims = self._indexes[key].dims
            for name, cs in self._chunks[key].items():
                ordinal = len(names)
                names.append(name)
                metadata.append(self._docs[(key[0], key[1], name)]["metadata"])
                for i in range(len(cs)):
                    rows.append(_Row(name, ordinal, cs.items[i], cs.starts[i], cs.ends[i], cs.texts[i],
                                     _tf(cs.terms[i]) if cs.terms else Counter(),
                                     cs.vectors[i * dims:(i + 1) * dims]))
            self._loaded[key] = (self._generation, rows, Catalog(self._generation, names, metadata))
        return self._loaded[key]

    async def catalog(self, key: Key, known_generation: int | None) -> Catalog | None:
        generation, _, catalog = self._load(key)
        return None if generation == known_generation else catalog

    async def search(self, key: Key, query: ScoreQuery) -> list[Hit]:
        generation, rows, _ = self._load(key)
        if query.allowed is not None and query.generation != generation:
            raise StaleCatalogError
        return [Hit(rows[r].name, rows[r].item, rows[r].start, rows[r].end, rows[r].text, score)
                for score, r in score_rows(rows, query)]
