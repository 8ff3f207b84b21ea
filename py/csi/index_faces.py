"""The document index's faces: the seed's ``document-index`` reads (``csi_*``) and csi-web's
writes (``index_*``), each taking the page's JSON request."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .doc_index import Progress
    from .engine import Engine


async def csi_search(engine: Engine, requests: Any) -> list[list[dict[str, Any]]]:
    return await engine.documents.search(requests)


async def csi_documents(engine: Engine, requests: Any) -> list[dict[str, Any]]:
    return await engine.documents.documents(requests)


async def csi_document_metadata(engine: Engine, requests: Any) -> list[Any]:
    return await engine.documents.document_metadata(requests)


async def index_create(engine: Engine, request: Any, progress: Progress | None = None) -> dict[str, Any]:
    return await engine.documents.create_index(request, progress)


async def index_put(engine: Engine, documents: Any, progress: Progress | None = None) -> dict[str, int]:
    return await engine.documents.put(documents, progress)


async def index_delete(engine: Engine, paths: Any) -> list[bool]:
    return await engine.documents.delete(paths)


async def index_list(engine: Engine, request: Any) -> dict[str, Any]:
    return await engine.documents.list(request)


async def index_drop(engine: Engine, request: Any) -> dict[str, Any]:
    return await engine.documents.drop(request)
