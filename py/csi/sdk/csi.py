"""``Csi``: what a skill can ask of the engine (pharia-skill's protocol of the WIT 0.3 era).

Each capability comes as one call and as a ``*_concurrent`` batch whose answers keep the order of
the requests. Implementations provide the batch forms; the single forms are built on them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from .chunking import Chunk, ChunkParams, ChunkRequest
from .document_index import (
    Document,
    DocumentPath,
    IndexPath,
    JsonSerializable,
    SearchFilter,
    SearchRequest,
    SearchResult,
)
from .inference import (
    ChatParams,
    ChatRequest,
    ChatResponse,
    Completion,
    CompletionParams,
    CompletionRequest,
    Message,
)
from .language import Language, SelectLanguageRequest


class Csi(Protocol):
    """The Cognitive System Interface: inference, chunking, language selection, document search."""

    def complete(self, model: str, prompt: str, params: CompletionParams | None = None) -> Completion:
        """Continue ``prompt`` (raw text: no chat template) with ``model``."""
        return self.complete_concurrent([CompletionRequest(model, prompt, params or CompletionParams())])[0]

    def complete_concurrent(self, requests: Sequence[CompletionRequest]) -> list[Completion]:
        """Several completions, answers in request order."""
        ...

    def chat(self, model: str, messages: list[Message], params: ChatParams | None = None) -> ChatResponse:
        """The assistant's next message after ``messages`` (through the model's chat template)."""
        return self.chat_concurrent([ChatRequest(model, messages, params or ChatParams())])[0]

    def chat_concurrent(self, requests: Sequence[ChatRequest]) -> list[ChatResponse]:
        """Several chats, answers in request order."""
        ...

    def chunk(self, text: str, params: ChunkParams) -> list[str]:
        """Split ``text`` into chunks of at most ``params.max_tokens`` tokens of ``params.model``."""
        return self.chunk_concurrent([ChunkRequest(text, params)])[0]

    def chunk_concurrent(self, requests: Sequence[ChunkRequest]) -> list[list[str]]:
        """Several chunkings, answers in request order."""
        ...

    def chunk_with_offsets(self, text: str, params: ChunkParams) -> list[Chunk]:
        """Like ``chunk``, with each chunk's character offset into ``text``."""
        return self.chunk_with_offsets_concurrent([ChunkRequest(text, params)])[0]

    def chunk_with_offsets_concurrent(self, requests: Sequence[ChunkRequest]) -> list[list[Chunk]]:
        """Several chunkings with offsets, answers in request order."""
        ...

    def select_language(self, text: str, languages: list[Language]) -> Language | None:
        """The language of ``text`` among ``languages``, or ``None`` when it is not clear."""
        return self.select_language_concurrent([SelectLanguageRequest(text, languages)])[0]

    def select_language_concurrent(self, requests: Sequence[SelectLanguageRequest]) -> list[Language | None]:
        """Several language selections, answers in request order."""
        ...

    def search(self, index_path: IndexPath, query: str, max_results: int = 1, min_score: float | None = None,
               filters: list[SearchFilter] | None = None) -> list[SearchResult]:
        """Sections of documents in ``index_path`` that match ``query``, best first."""
        request = SearchRequest(index_path, query, max_results, min_score, filters or [])
        return self.search_concurrent([request])[0]

    def search_concurrent(self, requests: Sequence[SearchRequest]) -> list[list[SearchResult]]:
        """Several searches, answers in request order."""
        ...

    def document(self, document_path: DocumentPath) -> Document:
        """One whole document."""
        return self.documents([document_path])[0]

    def documents(self, document_paths: Sequence[DocumentPath]) -> list[Document]:
        """Whole documents, in the order of ``document_paths``."""
        ...

    def document_metadata(self, document_path: DocumentPath) -> JsonSerializable:
        """The metadata of one document (``None`` if it has none or does not exist)."""
        return self.documents_metadata([document_path])[0]

    def documents_metadata(self, document_paths: Sequence[DocumentPath]) -> list[JsonSerializable]:
        """Metadata of several documents, in order."""
        ...
