"""The document index's faces: the seed's ``document-index`` reads (``search``, ``documents``,
``document_metadata``) and csi-web's writes (``create``, ``put``, ``delete``, ``list``, ``drop``),
each taking its parsed request."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...errors import blame
from ...index.types import (
    CollectionRef,
    CreateIndex,
    DocumentBatch,
    ListRequest,
    PathBatch,
    SearchBatch,
)

if TYPE_CHECKING:
    from ...index.service import DocumentIndex, Progress


async def search(index: DocumentIndex, batch: SearchBatch) -> list[list[dict[str, Any]]]:
    """``document-index.search``: per request the best sections first."""
    out = []
    for i, req in enumerate(batch.requests):
        with blame(f"requests[{i}]"):
            out.append(await index.search(req))
    return out


async def documents(index: DocumentIndex, batch: PathBatch) -> list[dict[str, Any]]:
    """``document-index.documents``: whole documents; a missing one is a ``NotFoundError``."""
    with blame("requests"):
        return await index.documents(batch.requests)


async def document_metadata(index: DocumentIndex, batch: PathBatch) -> list[Any]:
    """``document-index.document-metadata``: metadata per path, ``None`` for a missing document."""
    with blame("requests"):
        return await index.document_metadata(batch.requests)


async def create(index: DocumentIndex, request: CreateIndex, progress: Progress | None = None) -> dict[str, Any]:
    return await index.create_index(request, progress)


async def put(index: DocumentIndex, batch: DocumentBatch, progress: Progress | None = None) -> dict[str, int]:
    return await index.put(batch.documents, progress)


async def delete(index: DocumentIndex, batch: PathBatch) -> list[bool]:
    return await index.delete(batch.requests)


async def list_(index: DocumentIndex, request: ListRequest) -> dict[str, Any]:
    return await index.list_collections(request)


async def drop(index: DocumentIndex, request: CollectionRef) -> dict[str, Any]:
    return await index.drop(request)
