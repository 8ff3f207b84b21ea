"""The document index's faces: the seed's ``document-index`` reads (``search``, ``documents``,
``document_metadata``) and csi-web's writes (``create``, ``put``, ``delete``, ``list``, ``drop``),
each taking the page's JSON request."""

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
from ...wire import parse_batch, parse_request

if TYPE_CHECKING:
    from ...index.service import DocumentIndex, Progress


async def search(index: DocumentIndex, requests: Any) -> list[list[dict[str, Any]]]:
    """``document-index.search``: per request the best sections first."""
    batch = parse_batch(SearchBatch, requests)
    out = []
    for i, req in enumerate(batch.requests):
        with blame(f"requests[{i}]"):
            out.append(await index.search(req))
    return out


async def documents(index: DocumentIndex, requests: Any) -> list[dict[str, Any]]:
    """``document-index.documents``: whole documents; a missing one is a ``NotFoundError``."""
    batch = parse_batch(PathBatch, requests)
    with blame("requests"):
        return await index.documents(batch.requests)


async def document_metadata(index: DocumentIndex, requests: Any) -> list[Any]:
    """``document-index.document-metadata``: metadata per path, ``None`` for a missing document."""
    batch = parse_batch(PathBatch, requests)
    with blame("requests"):
        return await index.document_metadata(batch.requests)


async def create(index: DocumentIndex, request: Any, progress: Progress | None = None) -> dict[str, Any]:
    return await index.create_index(parse_request(CreateIndex, request), progress)


async def put(index: DocumentIndex, documents: Any, progress: Progress | None = None) -> dict[str, int]:
    return await index.put(parse_request(DocumentBatch, {"documents": documents}).documents, progress)


async def delete(index: DocumentIndex, paths: Any) -> list[bool]:
    return await index.delete(parse_batch(PathBatch, paths).requests)


async def list_(index: DocumentIndex, request: Any) -> dict[str, Any]:
    return await index.list_collections(parse_request(ListRequest, request if request is not None else {}))


async def drop(index: DocumentIndex, request: Any) -> dict[str, Any]:
    return await index.drop(parse_request(CollectionRef, request))
