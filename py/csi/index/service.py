"""The document index: collections of documents with named search indexes, kept by an
``IndexStore`` (IndexedDB in the worker).

Writing a document chunks each text item with the CSI chunker (the index's model, ``max_tokens``,
``overlap``), embeds the chunks with that model and stores document and chunks in one transaction.
Searching embeds the query, evaluates metadata filters here against the index's catalog, and
leaves the whole-corpus scoring to the store's kernel (see ``csi.index.store``).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import InternalError, InvalidInputError, ModelNotSupportedError, NotFoundError, blame
from . import lexical
from .cancel import WriteGuard, writing
from .filters import CompiledFilter, parse_filters
from .ingest import Ingest, batches, size_guess
from .store import Catalog, IndexConfig, IndexStore, Key, ScoreQuery, StaleCatalogError, StoredDocument
from .types import (
    CollectionInfo,
    CollectionRef,
    Collections,
    CreateIndex,
    Document,
    DocumentChunks,
    DocumentIn,
    DocumentPath,
    Dropped,
    IndexCreated,
    IndexInfo,
    IndexPath,
    ListRequest,
    PutResult,
    SearchRequest,
    SearchResult,
    SectionBound,
)

if TYPE_CHECKING:
    from ..core.backend import ModelInfo
    from ..core.engine import Engine
    from ..core.scope import Scope
    from ..text.services import TextServices

Progress = Callable[[dict[str, Any]], None]

# A write transaction holds about this many chunks (fewer, larger commits ingest faster: 60 small
# documents took 74 s in one Chromium run at 32, 36-45 s at 128; every committed batch is reported, so an
# interrupted ingest loses at most one batch; a stop ends a batch half-way, see csi.index.cancel).
COMMIT_CHUNKS = 128
COMMIT_DOCUMENTS = 64
SEMANTIC_WEIGHT = 0.5


def _path_json(key: tuple[str, str, str]) -> dict[str, str]:
    return {"namespace": key[0], "collection": key[1], "name": key[2]}


def _path(namespace: str, collection: str, name: str) -> DocumentPath:
    return DocumentPath(namespace=namespace, collection=collection, name=name)


def _info(config: IndexConfig) -> IndexInfo:
    return IndexInfo.model_validate(config.to_json())


class DocumentIndex:
    """Writes (``engine.index.*``) and the seed's reads (``search``, ``documents``, ``document_metadata``).

    It embeds with the engine's embedding models, chunks with the text services and keeps
    everything in ``store``. Errors name fields of the request models it takes.
    """

    def __init__(self, engine: Engine, text: TextServices, store: IndexStore) -> None:
        self.engine = engine
        self.text = text
        self.store = store
        self.ingest = Ingest(engine, text)
        self._catalogs: dict[Key, Catalog] = {}

    # ---- lookups ---------------------------------------------------------------------------------

    async def _check_collection(self, namespace: str, collection: str) -> None:
        known = await self.store.collections()
        if (namespace, collection) in known:
            return
        if all(ns != namespace for ns, _ in known):
            raise NotFoundError(f"namespace {namespace!r} does not exist", "namespace")
        raise NotFoundError(f"collection {collection!r} does not exist in namespace {namespace!r}", "collection")

    async def _config(self, path: IndexPath) -> IndexConfig:
        for config in await self.store.indexes(path.namespace, path.collection):
            if config.index == path.index:
                return config
        await self._check_collection(path.namespace, path.collection)
        raise NotFoundError(f"index {path.index!r} does not exist in collection {path.collection!r}", "index")

    # ---- writes ----------------------------------------------------------------------------------

    async def create_index(self, req: CreateIndex, scope: Scope | None = None) -> IndexCreated:
        """Create an index of a collection (creating the collection), indexing its documents;
        ``scope.progress`` reports each committed batch; a cancel or ``interruptGenerate()`` stops it
        at its next step, dropping the batch under way (``AbortError``; calling it again finishes the work)."""
        progress = scope.progress if scope else None
        if req.overlap >= req.max_tokens:
            raise InvalidInputError("`overlap` must be less than `max_tokens`", "overlap")
        model = await self.engine.embedding_model(req.model)
        self.engine.runner(model.model_id).needs_tokenizer(
            f"{req.model!r} runs on a server: an index chunks by its tokenizer, which is not here (name an "
            "embedding model of this engine)", "model", ModelNotSupportedError)
        if req.max_tokens > model.context_length - 2:
            raise InvalidInputError(f"`max_tokens` is {req.max_tokens}; {req.model!r} embeds at most "
                                    f"{model.context_length - 2} tokens per chunk", "max_tokens")
        dims = (await self.engine.embed(model, ["dimensions"], scope)).dims
        config = IndexConfig(req.namespace, req.collection, req.index, req.model, req.max_tokens, req.overlap,
                             req.hybrid, dims)
        async with writing(self.store.writing(), self.engine, scope, "index.createIndex"):
            created = True
            for existing in await self.store.indexes(req.namespace, req.collection):
                if existing.index == req.index:
                    if existing != config:
                        raise InvalidInputError(f"index {req.index!r} exists with another configuration "
                                                f"({existing.to_json()}); drop it first", "index")
                    created = False
            if created:
                await self.store.create_index(config)
            # documents without chunks in this index: all of them for a new index, those an
            # interrupted earlier call did not reach for an existing one
            names = await self.store.unindexed(config.key)
            guard = WriteGuard(self.engine, scope, "index.createIndex", len(names))
            for at in range(0, len(names), COMMIT_DOCUMENTS):
                await guard.pause()
                page = names[at:at + COMMIT_DOCUMENTS]
                stored = await self.store.documents([(req.namespace, req.collection, n) for n in page])
                docs = [DocumentIn.model_validate(d) for d in (_as_document_in(s) for s in stored)]
                for group in batches([size_guess(d) for d in docs], COMMIT_CHUNKS, COMMIT_DOCUMENTS):
                    batch = [page[i] for i in group]
                    params = [f"documents[{n!r}]" for n in batch]
                    sets = (await self.ingest.chunk_all([docs[i] for i in group], [(config, model)], params, scope,
                                                        guard))[config.index]
                    guard.check()
                    await self.store.add_chunks(config.key, dict(zip(batch, sets, strict=True)))
                    guard.commit(batch, sum(len(cs) for cs in sets))
                    if progress:
                        progress({"stage": "index", "file": None, "loaded": len(guard.committed), "total": len(names),
                                  "model": req.model, "documents": batch})
                    await guard.let_in()  # a cancel in between two batches
        return IndexCreated.model_validate({**config.to_json(), "created": created})

    async def put(self, docs: list[DocumentIn], scope: Scope | None = None) -> PutResult:
        """Store documents (replacing any with the same path), chunked and embedded for every index
        of their collections. Commits in batches; ``scope.progress`` reports each committed batch. A
        cancel of the message or ``interruptGenerate()`` stops it at its next step, dropping the batch
        under way: an ``AbortError`` that says what was committed (those documents whole, the others
        not at all).
        Errors name ``documents[i]...``."""
        progress = scope.progress if scope else None
        seen: dict[tuple[str, str, str], int] = {}
        for i, doc in enumerate(docs):
            if doc.path.key in seen:
                raise InvalidInputError(f"documents[{seen[doc.path.key]}] and documents[{i}] have the same path",
                                        f"documents[{i}].path")
            seen[doc.path.key] = i
        guard = WriteGuard(self.engine, scope, "index.put", len(docs))
        async with writing(self.store.writing(), self.engine, scope, "index.put"):
            configs: dict[tuple[str, str], list[tuple[IndexConfig, ModelInfo]]] = {}
            for doc in docs:
                key = (doc.path.namespace, doc.path.collection)
                if key not in configs:
                    configs[key] = [(c, await self.engine.embedding_model(c.model))
                                    for c in await self.store.indexes(*key)]
            # a large document commits alone (in a collection without indexes too: its text is written)
            sizes = [max(1, len(configs[(d.path.namespace, d.path.collection)])) * size_guess(d) for d in docs]
            for pending in batches(sizes, COMMIT_CHUNKS, COMMIT_DOCUMENTS):
                await guard.pause()
                group = [docs[i] for i in pending]
                stored = [StoredDocument(d.path.namespace, d.path.collection, d.path.name,
                                         [c if isinstance(c, str) else {"text": c.text} for c in d.contents],
                                         d.metadata) for d in group]
                by_collection: dict[tuple[str, str], list[int]] = {}
                group_chunks = 0
                for j, d in enumerate(group):
                    by_collection.setdefault((d.path.namespace, d.path.collection), []).append(j)
                for key, members in by_collection.items():
                    by_index = await self.ingest.chunk_all([group[j] for j in members], configs[key],
                                                           [f"documents[{pending[j]}]" for j in members], scope, guard)
                    for index, sets in by_index.items():
                        for j, cs in zip(members, sets, strict=True):
                            stored[j].chunks[index] = cs
                            group_chunks += len(cs)
                guard.check()
                await self.store.put_documents(stored)
                guard.commit([d.path.name for d in group], group_chunks)
                if progress:
                    progress({"stage": "index", "file": None, "loaded": len(guard.committed), "total": len(docs),
                              "model": None, "documents": [d.path.name for d in group], "chunks": guard.chunks})
                await guard.let_in()  # a cancel in between two batches
        return PutResult(documents=len(docs), chunks=guard.chunks)

    async def delete(self, paths: list[DocumentPath]) -> list[bool]:
        """Delete documents; whether each existed."""
        async with self.store.writing():
            return await self.store.delete_documents([p.key for p in paths])

    async def drop(self, req: CollectionRef) -> Dropped:
        """Drop one index (``index`` given) or a whole collection with its documents."""
        async with self.store.writing():
            if req.index is None:
                await self._check_collection(req.namespace, req.collection)
                await self.store.drop_collection(req.namespace, req.collection)
                for key in [k for k in self._catalogs if k[:2] == (req.namespace, req.collection)]:
                    del self._catalogs[key]
                return Dropped(dropped="collection")
            config = await self._config(IndexPath(namespace=req.namespace, collection=req.collection,
                                                  index=req.index))
            await self.store.drop_index(config.key)
            self._catalogs.pop(config.key, None)
            return Dropped(dropped="index")

    async def list_collections(self, req: ListRequest) -> Collections:
        """Collections with their indexes; with ``namespace`` and ``collection``, also its documents
        and their chunk counts per index."""
        configs = await self.store.indexes(req.namespace, req.collection)
        collections = []
        for ns, coll in await self.store.collections():
            if req.namespace not in (None, ns) or req.collection not in (None, coll):
                continue
            collections.append(CollectionInfo(namespace=ns, collection=coll, indexes=[
                _info(c) for c in configs if (c.namespace, c.collection) == (ns, coll)]))
        if req.namespace is None or req.collection is None:
            return Collections(collections=collections)
        await self._check_collection(req.namespace, req.collection)
        counts = await self.store.chunk_counts(req.namespace, req.collection)
        return Collections(collections=collections,
                           documents=[DocumentChunks(name=name, chunks=counts[name]) for name in sorted(counts)])

    # ---- the seed's reads ------------------------------------------------------------------------

    async def _allowed(self, key: Key, compiled: CompiledFilter) -> tuple[bytes, int]:
        catalog = self._catalogs.get(key)
        fresh = await self.store.catalog(key, catalog.generation if catalog else None)
        if fresh is not None:
            catalog = self._catalogs[key] = fresh
        assert catalog is not None
        mask = bytes(1 if name is not None and compiled.matches(md) else 0
                     for name, md in zip(catalog.names, catalog.metadata, strict=True))
        return mask, catalog.generation

    async def search(self, req: SearchRequest, scope: Scope | None = None) -> list[SearchResult]:
        """``document-index.search`` of one request: the best sections first."""
        with blame("index_path"):
            config = await self._config(req.index_path)
        compiled = parse_filters(req.filters)
        if req.max_results == 0:
            return []
        with blame("index_path.index", model=""):
            model = await self.engine.embedding_model(config.model)
        embedded = await self.engine.embed(model, [req.query], scope)
        if embedded.dims != config.dims:
            raise InvalidInputError(f"model {config.model!r} now gives {embedded.dims}-dimensional embeddings, "
                                    f"the index holds {config.dims}", "index_path.index")
        vector = array("f", embedded.vectors[0])
        terms = lexical.terms(req.query) if config.hybrid else None
        for _attempt in range(3):
            try:
                allowed, generation = (None, 0) if not req.filters else await self._allowed(config.key, compiled)
                query = ScoreQuery(vector, req.max_results, req.min_score, terms, SEMANTIC_WEIGHT,
                                   allowed=allowed, generation=generation)
                hits = await self.store.search(config.key, query)
                break
            except StaleCatalogError:
                continue
            except NotFoundError as exc:  # dropped while this search was on its way
                raise NotFoundError(exc.message, "index_path.index") from None
        else:
            raise InternalError("the index kept changing during the search; try again")
        ns, coll = config.namespace, config.collection
        # float32 rounding can put a unit vector's cosine a hair outside the seed's [-1, 1]
        return [SearchResult(document_path=_path(ns, coll, h.name), content=h.content,
                             score=max(-1.0, min(1.0, h.score)), start=SectionBound(item=h.item, position=h.start),
                             end=SectionBound(item=h.item, position=h.end))
                for h in hits]

    async def _documents(self, paths: list[DocumentPath]) -> list[dict[str, Any] | None]:
        for i, p in enumerate(paths):
            with blame(f"[{i}]"):
                await self._check_collection(p.namespace, p.collection)
        return await self.store.documents([p.key for p in paths])

    async def documents(self, paths: list[DocumentPath]) -> list[Document]:
        """``document-index.documents``: whole documents; a missing one is a ``NotFoundError`` (``[i].name``)."""
        out = []
        for i, doc in enumerate(await self._documents(paths)):
            if doc is None:
                raise NotFoundError(f"document {paths[i].name!r} does not exist", f"[{i}].name")
            out.append(Document.model_validate({"path": _path_json((doc["namespace"], doc["collection"], doc["name"])),
                                                "contents": doc["contents"], "metadata": doc["metadata"]}))
        return out

    async def document_metadata(self, paths: list[DocumentPath]) -> list[Any]:
        """``document-index.document-metadata``: metadata per path, ``None`` for a missing document."""
        return [None if doc is None else doc["metadata"] for doc in await self._documents(paths)]


def _as_document_in(stored: dict[str, Any] | None) -> dict[str, Any]:
    if stored is None:
        raise NotFoundError("a document vanished while the index was being built")
    return {"path": _path_json((stored["namespace"], stored["collection"], stored["name"])),
            "contents": stored["contents"], "metadata": stored["metadata"]}
