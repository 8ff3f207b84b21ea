"""OpenAI response shapes (chat completions and their chunks, legacy completions, embeddings), with
csi-web's extensions left out unless they are set."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, model_serializer

from ...core.decode import FinishReason

ChatFinishReason = FinishReason | Literal["tool_calls", "function_call"]
"""Why a chat choice ended: the engine's reasons, ``tool_calls``, and ``function_call`` (the
deprecated ``functions``)."""


class _WithExtensions(BaseModel):
    """Responses whose non-OpenAI extension fields are left out unless they are set."""

    @model_serializer(mode="wrap")
    def _drop_unset_extensions(self, handler: Any) -> dict[str, Any]:
        return {k: v for k, v in handler(self).items() if not (k in _EXTENSIONS and v is None)}


_EXTENSIONS = {"prompt_token_ids", "token_ids"}


class UsageExtra(BaseModel):
    e2e_latency_s: float
    prefill_tokens_per_s: float
    decode_tokens_per_s: float
    time_to_first_token_s: float
    time_per_output_token_s: float
    grammar_init_s: float | None = None
    grammar_per_token_s: float | None = None
    latencyBreakdown: dict[str, list[float]] | None = None  # noqa: N815 - WebLLM's name
    """Seconds per token by stage (``extra_body.enable_latency_breakdown``)."""
    served_by: Literal["local", "remote"] = "local"
    """Who generated the reply: the model in the browser, or its server (``remotes``)."""
    server: str | None = None
    """The base URL of the server, when one served the reply."""
    draft_tokens: int | None = None
    """Tokens drafted from the context and checked in one pass each (speculative decoding)."""
    accepted_draft_tokens: int | None = None
    """Of those, the ones the model chose too."""
    prompt_cache_tokens: int | None = None
    """Prompt tokens whose keys and values came from a prompt cache kept in the browser (an earlier
    visit or another tab); they count in ``prompt_tokens_details.cached_tokens`` too."""

    @model_serializer(mode="wrap")
    def _drop_absent(self, handler: Any) -> dict[str, Any]:
        optional = ("latencyBreakdown", "server", "draft_tokens", "accepted_draft_tokens", "prompt_cache_tokens")
        return {k: v for k, v in handler(self).items()
                if not ((k.startswith("grammar") or k in optional) and v is None)}


class PromptTokensDetails(BaseModel):
    cached_tokens: int
    """Prompt tokens whose keys and values were reused from the previous request's cache."""


class CompletionUsage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    prompt_tokens_details: PromptTokensDetails | None = None
    extra: UsageExtra | None = None


class TopLogprob(BaseModel):
    token: str
    logprob: float
    bytes: list[int]


class TokenLogprob(BaseModel):
    token: str
    logprob: float
    bytes: list[int]
    top_logprobs: list[TopLogprob]


class ChoiceLogprobs(BaseModel):
    content: list[TokenLogprob] | None


class FunctionCall(BaseModel):
    name: str
    arguments: str


class ToolCallOut(BaseModel):
    id: str
    type: Literal["function"] = "function"
    function: FunctionCall


class ChatCompletionMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str | None
    tool_calls: list[ToolCallOut] | None = None
    function_call: FunctionCall | None = None
    """Instead of ``tool_calls`` when the request gave the deprecated ``functions``."""

    @model_serializer(mode="wrap")
    def _drop_no_calls(self, handler: Any) -> dict[str, Any]:
        return {k: v for k, v in handler(self).items() if not (k in ("tool_calls", "function_call") and v is None)}


class Choice(_WithExtensions):
    index: int
    message: ChatCompletionMessage
    finish_reason: ChatFinishReason
    logprobs: ChoiceLogprobs | None = None
    token_ids: list[int] | None = None


class ChatCompletion(_WithExtensions):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: CompletionUsage | None = None
    system_fingerprint: str | None = None
    prompt_token_ids: list[int] | None = None


class FunctionCallDelta(BaseModel):
    name: str | None = None
    arguments: str | None = None

    @model_serializer(mode="wrap")
    def _drop_unset(self, handler: Any) -> dict[str, Any]:
        return {k: v for k, v in handler(self).items() if v is not None}


class ToolCallDelta(BaseModel):
    """A call as it streams: ``id``, ``type`` and the name first, then ``arguments`` in pieces."""

    index: int
    id: str | None = None
    type: Literal["function"] | None = None
    function: FunctionCallDelta

    @model_serializer(mode="wrap")
    def _drop_unset(self, handler: Any) -> dict[str, Any]:
        return {k: v for k, v in handler(self).items() if v is not None}


class Delta(BaseModel):
    role: Literal["assistant"] | None = None
    content: str | None = None
    tool_calls: list[ToolCallDelta] | None = None
    function_call: FunctionCallDelta | None = None
    """Instead of ``tool_calls`` when the request gave the deprecated ``functions``."""

    @model_serializer(mode="wrap")
    def _drop_unset(self, handler: Any) -> dict[str, Any]:
        return {k: v for k, v in handler(self).items() if v is not None}


class ChunkChoice(_WithExtensions):
    index: int
    delta: Delta
    finish_reason: ChatFinishReason | None = None
    logprobs: ChoiceLogprobs | None = None
    token_ids: list[int] | None = None


class ChatCompletionChunk(_WithExtensions):
    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    created: int
    model: str
    choices: list[ChunkChoice]
    usage: CompletionUsage | None = None
    system_fingerprint: str | None = None
    prompt_token_ids: list[int] | None = None


class CompletionLogprobs(BaseModel):
    tokens: list[str]
    token_logprobs: list[float]
    top_logprobs: list[dict[str, float]]
    text_offset: list[int]


class CompletionChoice(_WithExtensions):
    index: int
    text: str
    finish_reason: FinishReason | None = None
    logprobs: CompletionLogprobs | ChoiceLogprobs | None = None
    token_ids: list[int] | None = None


class Completion(_WithExtensions):
    """A text completion, or (streaming) one chunk of it: the same shape, as OpenAI's."""

    id: str
    object: Literal["text_completion"] = "text_completion"
    created: int
    model: str
    choices: list[CompletionChoice]
    usage: CompletionUsage | None = None
    system_fingerprint: str | None = None
    prompt_token_ids: list[int] | None = None


class EmbeddingData(BaseModel):
    object: Literal["embedding"] = "embedding"
    index: int
    embedding: list[float] | str
    """The values, or with ``encoding_format: "base64"`` the base64 of their little-endian float32 bytes."""


class EmbeddingUsage(BaseModel):
    prompt_tokens: int
    total_tokens: int


class CreateEmbeddingResponse(BaseModel):
    object: Literal["list"] = "list"
    data: list[EmbeddingData]
    model: str
    usage: EmbeddingUsage
