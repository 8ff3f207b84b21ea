"""``Csi`` served by the engine itself: the faces' own request checks, one blocking call per batch.

A skill is plain synchronous Python, the engine is async. ``run_sync`` bridges the two: in the
worker it is Pyodide's ``run_sync`` (JS promise integration suspends the skill's stack while the
engine works); in CPython it waits on an event loop running in another thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from .. import index_faces, seed_faces, text_faces
from .chunking import Chunk, ChunkRequest, chunk_request_wire
from .csi import Csi
from .document_index import (
    Document,
    DocumentPath,
    JsonSerializable,
    SearchRequest,
    SearchResult,
    document_from_wire,
    path_wire,
    search_result_from_wire,
)
from .inference import (
    ChatRequest,
    ChatResponse,
    Completion,
    CompletionRequest,
    chat_request_wire,
    chat_response_from_wire,
    completion_from_wire,
    completion_request_wire,
)
from .language import Language, SelectLanguageRequest

if TYPE_CHECKING:
    from ..engine import Engine

T = TypeVar("T")
RunSync = Callable[[Awaitable[Any]], Any]


def loop_run_sync(loop: asyncio.AbstractEventLoop) -> RunSync:
    """A ``run_sync`` for CPython: wait, from another thread, for an awaitable run on ``loop``."""

    async def wrap(aw: Awaitable[Any]) -> Any:
        return await aw

    return lambda aw: asyncio.run_coroutine_threadsafe(wrap(aw), loop).result()


class EngineCsi(Csi):
    """The CSI over an ``Engine``; every call validates like the page-facing faces do."""

    def __init__(self, engine: Engine, run_sync: RunSync) -> None:
        self.engine = engine
        self._run = run_sync

    def _call(self, face: Callable[[Engine, Any], Awaitable[T]], requests: Any) -> T:
        return self._run(face(self.engine, requests))

    def complete_concurrent(self, requests: Sequence[CompletionRequest]) -> list[Completion]:
        out = self._call(seed_faces.csi_complete, [completion_request_wire(r) for r in requests])
        return [completion_from_wire(d) for d in out]

    def chat_concurrent(self, requests: Sequence[ChatRequest]) -> list[ChatResponse]:
        out = self._call(seed_faces.csi_chat, [chat_request_wire(r) for r in requests])
        return [chat_response_from_wire(d) for d in out]

    def chunk_concurrent(self, requests: Sequence[ChunkRequest]) -> list[list[str]]:
        return self._call(text_faces.csi_chunk, [chunk_request_wire(r) for r in requests])

    def chunk_with_offsets_concurrent(self, requests: Sequence[ChunkRequest]) -> list[list[Chunk]]:
        wire = [{**chunk_request_wire(r), "character_offsets": True} for r in requests]
        out = self._call(text_faces.csi_chunk_with_offsets, wire)
        return [[Chunk(c["text"], c["character_offset"]) for c in chunks] for chunks in out]

    def select_language_concurrent(self, requests: Sequence[SelectLanguageRequest]) -> list[Language | None]:
        wire = [{"text": r.text, "languages": [Language(code).value for code in r.languages]} for r in requests]
        out = self._call(text_faces.csi_select_language, wire)
        return [None if code is None else Language(code) for code in out]

    def search_concurrent(self, requests: Sequence[SearchRequest]) -> list[list[SearchResult]]:
        out = self._call(index_faces.csi_search, [r.wire() for r in requests])
        return [[search_result_from_wire(d) for d in results] for results in out]

    def documents(self, document_paths: Sequence[DocumentPath]) -> list[Document]:
        out = self._call(index_faces.csi_documents, [path_wire(p) for p in document_paths])
        return [document_from_wire(d) for d in out]

    def documents_metadata(self, document_paths: Sequence[DocumentPath]) -> list[JsonSerializable]:
        return self._call(index_faces.csi_document_metadata, [path_wire(p) for p in document_paths])

