"""The engine: loaded models, request validation, per-model FIFO, OpenAI-shaped results."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from .backend import Backend, ModelInfo, ProgressFn, SamplingParams
from .errors import (
    ContextWindowExceededError,
    InvalidInputError,
    ModelNotSupportedError,
)
from .generation import GenerationParams, GenerationStats, generate
from .openai_types import (
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionMessage,
    ChatCompletionRequest,
    Choice,
    ChunkChoice,
    CompletionUsage,
    CreateEmbeddingResponse,
    Delta,
    EmbeddingData,
    EmbeddingRequest,
    EmbeddingUsage,
    UsageExtra,
)
from .token_bytes import TokenBytes
from .validation import parse_request

# Fields of seed 004 that later issues implement; until then they are refused, never ignored.
_NOT_YET = ("frequency_penalty", "presence_penalty", "repetition_penalty", "logit_bias",
            "logprobs", "top_logprobs", "tools", "tool_choice", "response_format")


class Engine:
    """One engine behind every API face; owns the models loaded through one ``Backend``."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.models: dict[str, ModelInfo] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._interrupt_epoch = 0
        self._cancelled: set[str] = set()
        self._active: set[str] = set()
        self._token_bytes: dict[str, TokenBytes | None] = {}
        self.device = "wasm"

    # ---- lifecycle -----------------------------------------------------------------------------

    async def load(
        self, model_ids: list[str], device: str = "wasm", progress: ProgressFn | None = None
    ) -> list[ModelInfo]:
        """Load ``model_ids`` (replacing whatever was loaded)."""
        if not model_ids or not all(isinstance(m, str) and m for m in model_ids):
            raise InvalidInputError("model ids must be a non-empty list of non-empty strings", "model")
        await self.unload()
        self.device = device
        for model_id in dict.fromkeys(model_ids):
            info = await self.backend.load_model(model_id, device, progress)
            self.models[model_id] = info
            self._locks[model_id] = asyncio.Lock()
            if info.kind == "chat":
                self._token_bytes[model_id] = self.backend.token_bytes(model_id)
        return list(self.models.values())

    async def unload(self) -> None:
        for model_id in list(self.models):
            async with self._locks[model_id]:
                await self.backend.unload_model(model_id)
            del self.models[model_id]
            del self._locks[model_id]
            self._token_bytes.pop(model_id, None)

    def interrupt(self) -> None:
        """End every running generation at its next token with finish_reason ``abort``."""
        self._interrupt_epoch += 1

    def cancel(self, request_id: str) -> None:
        """End the generation of one request (running or queued) with ``abort``."""
        if request_id in self._active:
            self._cancelled.add(request_id)

    def reset_chat(self) -> None:
        for model_id in self.models:
            self.backend.reset(model_id)

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

    # ---- chat completions ----------------------------------------------------------------------

    def _check_chat(self, req: ChatCompletionRequest) -> None:
        for name in _NOT_YET:
            if getattr(req, name) not in (None, False):
                raise InvalidInputError(f"`{name}` is not supported yet", name)
        if req.n not in (None, 1):
            raise InvalidInputError("`n` > 1 is not supported yet", "n")
        if req.stream_options is not None and not req.stream:
            raise InvalidInputError("`stream_options` is only allowed when `stream` is true", "stream_options")
        if req.messages[-1].role not in ("user", "tool"):
            raise InvalidInputError("the last message must be from the user or a tool", "messages")

    async def chat_completion_stream(
        self, request: dict[str, Any], request_id: str | None = None
    ) -> AsyncIterator[ChatCompletionChunk]:
        """Stream a chat completion: one chunk per text delta, then one with ``finish_reason``."""
        req = parse_request(ChatCompletionRequest, request)
        self._check_chat(req)
        info = self.resolve_model(req.model, "chat")
        messages = [{"role": m.role, "content": _text_of(m.content)} for m in req.messages]
        ids = self.backend.apply_chat_template(info.model_id, messages)
        if len(ids) >= info.context_length:
            raise ContextWindowExceededError(
                f"the prompt has {len(ids)} tokens; the context window of {info.model_id!r} "
                f"holds {info.context_length}", "messages")
        params = GenerationParams(
            sampling=SamplingParams(
                temperature=1.0 if req.temperature is None else req.temperature,
                top_k=req.top_k or 0,
                top_p=1.0 if req.top_p is None else req.top_p,
                seed=req.seed,
            ),
            max_tokens=req.max_tokens,
            stop=tuple(req.stop_list),
            ignore_eos=bool(req.ignore_eos),
        )
        chunk_id = "chatcmpl-" + secrets.token_hex(12)
        created = int(time.time())
        with_ids = bool(req.return_token_ids)
        include_usage = bool(req.stream_options and req.stream_options.include_usage)

        def chunk(choices: list[ChunkChoice], usage: CompletionUsage | None = None) -> ChatCompletionChunk:
            return ChatCompletionChunk(id=chunk_id, created=created, model=info.model_id, choices=choices, usage=usage)

        stats = GenerationStats()
        key = request_id or chunk_id
        self._active.add(key)
        try:
            async with self._locks[info.model_id]:
                cancelled = self._cancel_check(key)
                async for text, token_ids in generate(self.backend, info, ids, params, stats, cancelled,
                                                      self._token_bytes.get(info.model_id)):
                    yield chunk([ChunkChoice(index=0, delta=Delta(role="assistant", content=text),
                                             token_ids=token_ids if with_ids else None)])
                usage = _usage(stats)
                last = chunk([ChunkChoice(index=0, delta=Delta(), finish_reason=stats.finish_reason,  # type: ignore[arg-type]
                                          token_ids=[] if with_ids else None)],
                             None if include_usage else usage)
                last.prompt_token_ids = ids if with_ids else None
                yield last
                if include_usage:
                    yield chunk([], usage)
        finally:
            self._active.discard(key)
            self._cancelled.discard(key)

    async def chat_completion(self, request: dict[str, Any], request_id: str | None = None) -> ChatCompletion:
        """The non-streaming form: the collected stream."""
        content: list[str] = []
        token_ids: list[int] = []
        prompt_ids: list[int] | None = None
        last: ChatCompletionChunk | None = None
        finish = "stop"
        usage = None
        async for c in self.chat_completion_stream(request, request_id):
            last = c
            usage = c.usage or usage
            prompt_ids = c.prompt_token_ids or prompt_ids
            for choice in c.choices:
                content.append(choice.delta.content or "")
                token_ids += choice.token_ids or []
                finish = choice.finish_reason or finish
        assert last is not None
        with_ids = prompt_ids is not None
        return ChatCompletion(
            id=last.id, created=last.created, model=last.model, usage=usage,
            prompt_token_ids=prompt_ids,
            choices=[Choice(index=0, message=ChatCompletionMessage(content="".join(content)),
                            finish_reason=finish, token_ids=token_ids if with_ids else None)],  # type: ignore[arg-type]
        )

    def _cancel_check(self, key: str) -> Callable[[], bool]:
        epoch = self._interrupt_epoch
        return lambda: self._interrupt_epoch != epoch or key in self._cancelled

    # ---- embeddings ----------------------------------------------------------------------------

    async def embeddings(self, request: dict[str, Any]) -> CreateEmbeddingResponse:
        req = parse_request(EmbeddingRequest, request)
        info = self.resolve_model(req.model, "embedding")
        texts = req.texts
        async with self._locks[info.model_id]:
            result = await self.backend.embed(info.model_id, texts)
        return CreateEmbeddingResponse(
            model=info.model_id,
            data=[EmbeddingData(index=i, embedding=v) for i, v in enumerate(result.vectors)],
            usage=EmbeddingUsage(prompt_tokens=result.prompt_tokens, total_tokens=result.prompt_tokens),
        )


def _text_of(content: object) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(part.text for part in content)  # type: ignore[attr-defined]


def _usage(stats: GenerationStats) -> CompletionUsage:
    return CompletionUsage(
        prompt_tokens=stats.prompt_tokens,
        completion_tokens=stats.completion_tokens,
        total_tokens=stats.prompt_tokens + stats.completion_tokens,
        extra=UsageExtra(**stats.timings()),
    )


