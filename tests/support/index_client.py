"""The document index as the page calls it (its faces, taking JSON requests), for CPython tests."""

from __future__ import annotations

from typing import Any

from tests.support.faces import index as face
from csi.index.service import DocumentIndex, Progress


class IndexClient:
    """``engine.index.*`` and ``engine.csi.search/documents/documentMetadata`` of the page, in Python."""

    def __init__(self, index: DocumentIndex) -> None:
        self.index = index

    async def create_index(self, request: Any, progress: Progress | None = None) -> dict[str, Any]:
        return await face.create(self.index, request, progress)

    async def put(self, documents: Any, progress: Progress | None = None) -> dict[str, int]:
        return await face.put(self.index, documents, progress)

    async def delete(self, paths: Any) -> list[bool]:
        return await face.delete(self.index, paths)

    async def list(self, request: Any = None) -> dict[str, Any]:
        return await face.list_(self.index, request)

    async def drop(self, request: Any) -> dict[str, Any]:
        return await face.drop(self.index, request)

    async def search(self, requests: Any) -> list[list[dict[str, Any]]]:
        return await face.search(self.index, requests)

    async def documents(self, requests: Any) -> list[dict[str, Any]]:
        return await face.documents(self.index, requests)

    async def document_metadata(self, requests: Any) -> list[Any]:
        return await face.document_metadata(self.index, requests)
