"""``Csi`` served by the engine and its services through the pharia faces (their own request
checks), one blocking call per batch.

A skill is plain synchronous Python, the engine is async. ``run_sync`` bridges the two: in the
worker it is Pyodide's ``run_sync`` (JS promise integration suspends the skill's stack while the
engine works); in CPython it waits on an event loop running in another thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..core.scope import Scope
from ..faces.pharia import inference, text
from ..index.types import PathBatch, SearchBatch
from ..sdk.chunking import Chunk, ChunkRequest
from ..sdk.csi import Csi
from ..sdk.document_index import (
    Document,
    DocumentPath,
    JsonSerializable,
    SearchRequest,
    SearchResult,
)
from ..sdk.inference import (
    ChatRequest,
    ChatResponse,
    Completion,
    CompletionRequest,
)
from ..sdk.language import Language, SelectLanguageRequest
from ..wire import parse_batch
from .interrupts import checkpoint
from .sdk_wire import (
    chat_request_wire,
    chat_response_from_wire,
    chunk_request_wire,
    completion_from_wire,
    completion_request_wire,
    document_from_wire,
    path_wire,
    search_result_from_wire,
)

if TYPE_CHECKING:
    from types import ModuleType

    from ..core.engine import Engine
    from ..index.service import DocumentIndex
    from ..text.services import TextServices

RunSync = Callable[[Awaitable[Any]], Any]


def loop_run_sync(loop: asyncio.AbstractEventLoop) -> RunSync:
    """A ``run_sync`` for CPython: wait, from another thread, for an awaitable run on ``loop``."""

    async def wrap(aw: Awaitable[Any]) -> Any:
        return await aw

    def run_sync(aw: Awaitable[Any]) -> Any:
        try:
            return asyncio.run_coroutine_threadsafe(wrap(aw), loop).result()
        finally:
            checkpoint()  # a skill that came due while it waited stops here

    return run_sync


class EngineCsi(Csi):
    """The CSI over the engine, the text services and the document index (built on first use);
    every call validates like the page-facing faces do."""

    def __init__(self, engine: Engine, text: TextServices, index: Callable[[], DocumentIndex],
                 run_sync: RunSync, scope: Scope | None = None) -> None:
        self.engine = engine
        self.text = text
        self._index = index
        self._run = run_sync
        self.scope = scope
        """The message the calls serve (a skill run's): cancelling it cancels them."""

    def scoped(self, scope: Scope) -> EngineCsi:
        """The same CSI, its calls serving ``scope``."""
        return EngineCsi(self.engine, self.text, self._index, self._run, scope)

    @property
    def index(self) -> DocumentIndex:
        return self._index()

    @property
    def _index_face(self) -> ModuleType:
        from ..faces.pharia import index  # noqa: PLC0415 - loaded on first use

        return index

    def complete_concurrent(self, requests: Sequence[CompletionRequest]) -> list[Completion]:
        out = self._run(inference.complete(self.engine, parse_batch(
            inference.CompleteBatch, [completion_request_wire(r) for r in requests]), self.scope))
        return [completion_from_wire(d) for d in out]

    def chat_concurrent(self, requests: Sequence[ChatRequest]) -> list[ChatResponse]:
        batch = parse_batch(inference.ChatBatch, [chat_request_wire(r) for r in requests])
        out = self._run(inference.chat(self.engine, batch, self.scope))
        return [chat_response_from_wire(d, r.params.response_format) for d, r in zip(out, requests, strict=True)]

    def chunk_concurrent(self, requests: Sequence[ChunkRequest]) -> list[list[str]]:
        return self._run(text.chunk(self.text, parse_batch(text.ChunkBatch, [chunk_request_wire(r) for r in requests])))

    def chunk_with_offsets_concurrent(self, requests: Sequence[ChunkRequest]) -> list[list[Chunk]]:
        wire = [{**chunk_request_wire(r), "character_offsets": True} for r in requests]
        out = self._run(text.chunk_with_offsets(self.text, parse_batch(text.ChunkWithOffsetBatch, wire)))
        return [[Chunk(c["text"], c["character_offset"]) for c in chunks] for chunks in out]

    def select_language_concurrent(self, requests: Sequence[SelectLanguageRequest]) -> list[Language | None]:
        wire = [{"text": r.text, "languages": [Language(code).value for code in r.languages]} for r in requests]
        out = self._run(text.select_language(self.text, parse_batch(text.SelectLanguageBatch, wire)))
        return [None if code is None else Language(code) for code in out]

    def search_concurrent(self, requests: Sequence[SearchRequest]) -> list[list[SearchResult]]:
        batch = parse_batch(SearchBatch, [r.wire() for r in requests])
        out = self._run(self._index_face.search(self.index, batch, self.scope))
        return [[search_result_from_wire(d) for d in results] for results in out]

    def documents(self, document_paths: Sequence[DocumentPath]) -> list[Document]:
        paths = parse_batch(PathBatch, [path_wire(p) for p in document_paths])
        out = self._run(self._index_face.documents(self.index, paths))
        return [document_from_wire(d) for d in out]

    def documents_metadata(self, document_paths: Sequence[DocumentPath]) -> list[JsonSerializable]:
        return self._run(self._index_face.document_metadata(
            self.index, parse_batch(PathBatch, [path_wire(p) for p in document_paths])))

