"""The document index's store in the worker, over worker/doc_store.js (IndexedDB, vectors and the
scoring kernel in JS)."""

from __future__ import annotations

from array import array
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from json import dumps, loads
from typing import Any

from pyodide.ffi import JsException, to_js

from ...errors import InternalError, NotFoundError
from ...index.store import Catalog, ChunkSet, Hit, IndexConfig, Key, ScoreQuery, StaleCatalogError, StoredDocument


class PyodideIndexStore:
    """``IndexStore`` over worker/doc_store.js (IndexedDB, vectors and the kernel in JS)."""

    def __init__(self, store: Any) -> None:
        self._js = store

    @asynccontextmanager
    async def writing(self) -> AsyncIterator[None]:
        release = await self._js.lockWrites()  # a Web Lock: writers in every tab of the site take turns
        try:
            yield
        finally:
            release()

    async def collections(self) -> list[tuple[str, str]]:
        return [(ns, coll) for ns, coll in loads(await self._js.collections())]

    async def indexes(self, namespace: str | None = None, collection: str | None = None) -> list[IndexConfig]:
        return [IndexConfig.from_json(d) for d in loads(await self._js.indexes(namespace, collection))]

    async def create_index(self, config: IndexConfig) -> None:
        await self._js.createIndex(dumps(config.to_json()))

    async def drop_index(self, key: Key) -> None:
        await self._js.dropIndex(*key)

    async def drop_collection(self, namespace: str, collection: str) -> None:
        await self._js.dropCollection(namespace, collection)

    async def document_names(self, namespace: str, collection: str) -> list[str]:
        return loads(await self._js.documentNames(namespace, collection))

    async def unindexed(self, key: Key) -> list[str]:
        return loads(await self._js.unindexed(*key))

    async def put_documents(self, docs: list[StoredDocument]) -> None:
        vectors = array("f")
        wire = []
        for d in docs:
            chunks = []
            for index, cs in d.chunks.items():
                chunks.append({"index": index, **cs.to_json(), "offset": len(vectors)})
                vectors.extend(cs.vectors)
            wire.append({"namespace": d.namespace, "collection": d.collection, "name": d.name,
                         "body": dumps({"contents": d.contents, "metadata": d.metadata}),
                         "metadata": dumps(d.metadata), "chunks": chunks})
        await self._js.putDocuments(dumps(wire), to_js(vectors.tobytes()))

    async def add_chunks(self, key: Key, chunks: dict[str, ChunkSet]) -> None:
        vectors = array("f")
        wire = []
        for name, cs in chunks.items():
            wire.append({"name": name, **cs.to_json(), "offset": len(vectors)})
            vectors.extend(cs.vectors)
        await self._js.addChunks(*key, dumps(wire), to_js(vectors.tobytes()))

    async def delete_documents(self, paths: list[tuple[str, str, str]]) -> list[bool]:
        return loads(await self._js.deleteDocuments(dumps(paths)))

    async def documents(self, paths: list[tuple[str, str, str]]) -> list[dict[str, Any] | None]:
        out = loads(await self._js.documents(dumps(paths)))
        return [None if d is None else {"namespace": d["namespace"], "collection": d["collection"],
                                        "name": d["name"], **d["body"]} for d in out]

    async def chunk_counts(self, namespace: str, collection: str) -> dict[str, dict[str, int]]:
        return loads(await self._js.chunkCounts(namespace, collection))

    async def catalog(self, key: Key, known_generation: int | None) -> Catalog | None:
        try:
            raw = await self._js.catalog(*key, known_generation)
        except JsException as exc:
            raise _store_error(exc, key) from None
        if not isinstance(raw, str):  # JS null
            return None
        d = loads(raw)
        return Catalog(d["generation"], d["names"], d["metadata"])

    async def search(self, key: Key, query: ScoreQuery) -> list[Hit]:
        options = {"k": query.k, "min_score": query.min_score, "terms": query.terms,
                   "semantic_weight": query.semantic_weight, "k1": query.k1, "b": query.b,
                   "generation": query.generation}
        allowed = None if query.allowed is None else to_js(query.allowed)
        try:
            raw = await self._js.search(*key, to_js(query.vector.tobytes()), dumps(options), allowed)
        except JsException as exc:
            if exc.name == "StaleCatalog":
                raise StaleCatalogError from None
            raise _store_error(exc, key) from None
        return [Hit(*h) for h in loads(raw)]


def _store_error(exc: JsException, key: Key) -> Exception:
    if exc.name == "NoIndex":  # dropped while a search was on its way
        return NotFoundError(f"index {key[2]!r} does not exist in collection {key[1]!r}", "index_path.index")
    return InternalError(f"the document store failed: {exc.message}")
