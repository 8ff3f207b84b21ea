"""The document index's faces: the seed's ``document-index`` reads (``search``, ``documents``,
``document_metadata``) and csi-web's writes (``create``, ``put``, ``delete``, ``list``, ``drop``),
each taking its parsed request."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core.scope import Scope
from ...errors import blame
from ...index.types import (
    CollectionRef,
    Collections,
    CreateIndex,
    Deleted,
    DocumentBatch,
    DocumentMetadata,
    Documents,
    Dropped,
    IndexCreated,
    ListRequest,
    PathBatch,
    PutResult,
    SearchBatch,
    SearchResults,
)

if TYPE_CHECKING:
    from ...index.service import DocumentIndex


async def search(index: DocumentIndex, batch: SearchBatch, scope: Scope | None = None) -> SearchResults:
    """``document-index.search``: per request the best sections first."""
    out = []
    for i, req in enumerate(batch.requests):
        with blame(f"requests[{i}]"):
            out.append(await index.search(req, scope))
    return SearchResults(out)


async def documents(index: DocumentIndex, batch: PathBatch) -> Documents:
    """``document-index.documents``: whole documents; a missing one is a ``NotFoundError``."""
    with blame("requests"):
        return Documents(await index.documents(batch.requests))


async def document_metadata(index: DocumentIndex, batch: PathBatch) -> DocumentMetadata:
    """``document-index.document-metadata``: metadata per path, ``None`` for a missing document."""
    with blame("requests"):
        return DocumentMetadata(await index.document_metadata(batch.requests))


async def create(index: DocumentIndex, request: CreateIndex, scope: Scope | None = None) -> IndexCreated:
    return await index.create_index(request, scope)


async def put(index: DocumentIndex, batch: DocumentBatch, scope: Scope | None = None) -> PutResult:
    return await index.put(batch.documents, scope)


async def delete(index: DocumentIndex, batch: PathBatch) -> Deleted:
    return Deleted(await index.delete(batch.requests))


async def list_(index: DocumentIndex, request: ListRequest) -> Collections:
    return await index.list_collections(request)


async def drop(index: DocumentIndex, request: CollectionRef) -> Dropped:
    return await index.drop(request)
