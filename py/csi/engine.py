"""The engine: loaded models, per-model FIFO, cancellation, the prefix cache, and the one
generation path every API face streams from."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import openai_face
from .backend import Backend, Embeddings, ModelInfo, ProgressFn, StepResult
from .errors import ContextWindowExceededError, InvalidInputError, ModelNotSupportedError
from .generation import GenerationParams, GenerationStats, TextDelta, generate
from .host import Host, LocalHost
from .openai_types import ChatCompletion, ChatCompletionChunk, CreateEmbeddingResponse
from .text_services import TextServices
from .token_bytes import TokenBytes

if TYPE_CHECKING:
    from .doc_index import DocumentIndex


@dataclass
class ChoiceResult:
    """A whole choice, collected from the stream (for the faces that answer in one piece)."""

    text: str = ""
    token_ids: list[int] = field(default_factory=list)
    steps: list[StepResult] = field(default_factory=list)
    stats: GenerationStats = field(default_factory=GenerationStats)


@dataclass(frozen=True)
class ChoiceEvent:
    """One step of a (possibly multi-choice) generation: a text delta of choice ``index``, or,
    with ``delta=None``, the end of that choice (``stats`` final)."""

    index: int
    delta: TextDelta | None
    stats: GenerationStats


class Engine:
    """One engine behind every API face; owns the models loaded through one ``Backend``."""

    def __init__(self, backend: Backend, host: Host | None = None) -> None:
        self.backend = backend
        self.host: Host = host if host is not None else LocalHost()
        self.models: dict[str, ModelInfo] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._token_bytes: dict[str, TokenBytes | None] = {}
        self._cache: dict[str, list[int]] = {}
        self._interrupt_epoch = 0
        self._cancelled: set[str] = set()
        self._active: set[str] = set()
        self._run_ids = itertools.count()
        self._aux_lock = asyncio.Lock()
        self.text = TextServices(backend, self.host, lambda: self.models)
        self._documents: DocumentIndex | None = None

    @property
    def documents(self) -> DocumentIndex:
        """The document index (its modules load on first use, not at start-up)."""
        if self._documents is None:
            from .doc_index import DocumentIndex  # noqa: PLC0415 - loaded on first use

            self._documents = DocumentIndex(self)
        return self._documents

    # ---- lifecycle -----------------------------------------------------------------------------

    async def load(
        self, model_ids: list[str], device: str = "wasm", progress: ProgressFn | None = None
    ) -> list[ModelInfo]:
        """Load ``model_ids`` (replacing whatever was loaded)."""
        if not model_ids or not all(isinstance(m, str) and m for m in model_ids):
            raise InvalidInputError("model ids must be a non-empty list of non-empty strings", "model")
        await self.unload()
        for model_id in dict.fromkeys(model_ids):
            info = await self.backend.load_model(model_id, device, progress)
            self.models[model_id] = info
            self._locks[model_id] = asyncio.Lock()
            if info.kind == "chat":
                self._token_bytes[model_id] = self.backend.token_bytes(model_id)
                self._cache[model_id] = []
        return list(self.models.values())

    async def unload(self) -> None:
        for model_id in list(self.models):
            async with self._locks[model_id]:
                await self.backend.unload_model(model_id)
            del self.models[model_id], self._locks[model_id]
            self._token_bytes.pop(model_id, None)
            self._cache.pop(model_id, None)

    def interrupt(self) -> None:
        """End every running generation at its next token with finish_reason ``abort``."""
        self._interrupt_epoch += 1

    def cancel(self, request_id: str) -> None:
        """End the generation of one request (running or queued) with ``abort``."""
        if request_id in self._active:
            self._cancelled.add(request_id)

    async def reset_chat(self) -> None:
        """Forget the cached conversation of every chat model."""
        for model_id, lock in self._locks.items():
            if model_id in self._cache:
                async with lock:
                    self.backend.truncate(model_id, 0)
                    self._cache[model_id] = []

    # ---- lookups -------------------------------------------------------------------------------

    def resolve_model(self, requested: str | None, kind: str) -> ModelInfo:
        if requested is None:
            candidates = [m for m in self.models.values() if m.kind == kind]
            if len(candidates) == 1:
                return candidates[0]
            if not candidates:
                raise ModelNotSupportedError(f"no {kind} model is loaded", "model")
            names = ", ".join(m.model_id for m in candidates)
            raise InvalidInputError(f"several {kind} models are loaded ({names}): say which with `model`", "model")
        info = self.models.get(requested)
        if info is None:
            loaded = ", ".join(self.models) or "none"
            raise ModelNotSupportedError(f"model {requested!r} is not loaded (loaded: {loaded})", "model")
        if info.kind != kind:
            raise ModelNotSupportedError(f"model {requested!r} is a {info.kind} model, not a {kind} model", "model")
        return info

    async def embedding_model(self, model_id: str, param: str) -> ModelInfo:
        """A loaded embedding model, loading a built-in one beside the others if need be."""
        info = self.models.get(model_id)
        if info is None:
            if model_id not in self.backend.builtin_models():
                known = ", ".join(sorted(set(self.models) | set(self.backend.builtin_models())))
                raise ModelNotSupportedError(
                    f"model {model_id!r} is neither loaded nor built in (known: {known})", param)
            async with self._aux_lock:
                if model_id not in self.models:
                    self.models[model_id] = await self.backend.load_model(model_id, "wasm", None)
                    self._locks[model_id] = asyncio.Lock()
            info = self.models[model_id]
        if info.kind != "embedding":
            raise ModelNotSupportedError(f"model {model_id!r} is a {info.kind} model, not an embedding model", param)
        return info

    def token_bytes(self, model_id: str, token: int) -> bytes:
        """The bytes of one token (through the tokenizer when there is no byte table)."""
        table = self._token_bytes.get(model_id)
        if table is not None and token < len(table.table):
            return table.table[token]
        return self.backend.decode(model_id, [token]).encode()

    def check_prompt(self, model: ModelInfo, ids: list[int], param: str) -> None:
        if len(ids) >= model.context_length:
            raise ContextWindowExceededError(
                f"the prompt has {len(ids)} tokens; the context window of {model.model_id!r} "
                f"holds {model.context_length}", param)
        if not ids:
            raise InvalidInputError("the prompt is empty", param)

    # ---- the one generation path ---------------------------------------------------------------

    async def run(
        self, model: ModelInfo, prompt_ids: list[int], params: GenerationParams, n: int = 1,
        request_id: str | None = None,
    ) -> AsyncIterator[ChoiceEvent]:
        """Generate ``n`` choices for ``prompt_ids``, one after the other, under the model's lock.

        Requests to one model run in arrival order. The KV cache keeps the longest common prefix
        with the previous request (later choices reuse the prompt). ``interrupt()`` and
        ``cancel(request_id)`` end the running choice with ``abort`` and skip the rest.
        """
        key = request_id or f"run-{next(self._run_ids)}"
        self._active.add(key)
        try:
            async with self._locks[model.model_id]:
                epoch = self._interrupt_epoch

                def cancelled() -> bool:
                    return self._interrupt_epoch != epoch or key in self._cancelled

                self.backend.set_sampling(model.model_id, params.sampling)
                for index in range(n):
                    if index:
                        self.backend.next_choice(model.model_id)
                    stats = GenerationStats()
                    try:
                        async for delta in generate(self.backend, model, prompt_ids, params, stats, cancelled,
                                                    self._token_bytes.get(model.model_id),
                                                    self._cache[model.model_id]):
                            yield ChoiceEvent(index, delta, stats)
                    finally:
                        self._cache[model.model_id] = stats.cache_ids
                    yield ChoiceEvent(index, None, stats)
                    if stats.finish_reason == "abort":
                        for rest in range(index + 1, n):
                            yield ChoiceEvent(rest, None, GenerationStats(
                                prompt_tokens=len(prompt_ids), finish_reason="abort"))
                        break
        finally:
            self._active.discard(key)
            self._cancelled.discard(key)

    async def embed(self, model: ModelInfo, texts: list[str]) -> Embeddings:
        """Sentence embeddings, in turn with the model's other requests."""
        async with self._locks[model.model_id]:
            return await self.backend.embed(model.model_id, texts)

    async def complete(
        self, model: ModelInfo, prompt_ids: list[int], params: GenerationParams, n: int = 1,
        request_id: str | None = None,
    ) -> list[ChoiceResult]:
        """``run`` collected: every choice whole (non-streaming = collected stream)."""
        results: dict[int, ChoiceResult] = {}
        async for event in self.run(model, prompt_ids, params, n, request_id):
            r = results.setdefault(event.index, ChoiceResult())
            if event.delta is None:
                r.stats = event.stats
            else:
                r.text += event.delta.text
                r.token_ids += event.delta.token_ids
                r.steps += event.delta.steps
        return [results[i] for i in sorted(results)]

    # ---- the OpenAI face, kept as engine methods ------------------------------------------------

    def chat_completion_stream(
        self, request: dict[str, Any], request_id: str | None = None
    ) -> AsyncIterator[ChatCompletionChunk]:
        return openai_face.chat_completion_stream(self, request, request_id)

    async def chat_completion(self, request: dict[str, Any], request_id: str | None = None) -> ChatCompletion:
        return await openai_face.chat_completion(self, request, request_id)

    async def embeddings(self, request: dict[str, Any]) -> CreateEmbeddingResponse:
        return await openai_face.embeddings(self, request)
