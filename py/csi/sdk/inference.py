"""Inference types of the skill SDK: the shapes of pharia-skill's CSI (WIT ``pharia:skill@0.3.0``,
with ``pharia:skill@0.4``'s structured output and tools in chat)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel


@dataclass
class TopLogprobs:
    """Return the sampled token's logprob and the ``top`` (0..20) most likely ones."""

    top: int


NoLogprobs = Literal["no"]
SampledLogprobs = Literal["sampled"]
Logprobs = TopLogprobs | NoLogprobs | SampledLogprobs


@dataclass
class CompletionParams:
    """Parameters of ``Csi.complete``; ``None`` leaves the engine's default."""

    max_tokens: int | None = None
    temperature: float | None = None
    top_k: int | None = None
    top_p: float | None = None
    stop: list[str] = field(default_factory=list)
    return_special_tokens: bool = True
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    logprobs: Logprobs = "no"


@dataclass
class Tool:
    """A function the model may call (pharia:skill@0.4): ``parameters`` is its arguments' JSON
    Schema."""

    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None


@dataclass
class JsonSchema:
    """A named JSON Schema for ``ChatParams.response_format``."""

    name: str
    schema: dict[str, Any]
    description: str | None = None


ResponseFormat = type[BaseModel] | JsonSchema | Literal["text", "json_object"]
"""A pydantic model (its ``model_json_schema()``; the reply comes back parsed as
``message.parsed``), a ``JsonSchema``, ``"json_object"`` (any JSON object) or ``"text"``."""

ToolChoice = Literal["none", "auto", "required"] | str
"""``none``, ``auto``, ``required``, or the name of the one tool to call."""


@dataclass
class ChatParams:
    """Parameters of ``Csi.chat``; ``None`` leaves the engine's default."""

    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    logprobs: Logprobs = "no"
    response_format: ResponseFormat | None = None
    tools: list[Tool] | None = None
    tool_choice: ToolChoice | None = None


class FinishReason(StrEnum):
    """Why the model stopped: a natural end or stop sequence, the token limit, a content filter, a
    tool call, or (csi-web's addition to the WIT enum) ``ABORT``: the generation was cut short by an
    interrupt, so the text is incomplete."""

    STOP = "stop"
    LENGTH = "length"
    CONTENT_FILTER = "content_filter"
    TOOL_CALLS = "tool_calls"
    ABORT = "abort"


@dataclass
class Logprob:
    """A token (as bytes: it may be part of a UTF-8 character) and its log probability."""

    token: bytes
    logprob: float

    def try_as_utf8(self) -> str | None:
        """The token as text, or ``None`` when its bytes are not valid UTF-8 on their own."""
        try:
            return self.token.decode("utf-8")
        except UnicodeDecodeError:
            return None


@dataclass
class Distribution:
    """The sampled token and the most likely alternatives at one position."""

    sampled: Logprob
    top: list[Logprob]


@dataclass
class TokenUsage:
    """Tokens in the prompt and in the completion."""

    prompt: int
    completion: int


@dataclass
class Completion:
    """The text a completion generated, why it finished, logprobs and usage."""

    text: str
    finish_reason: FinishReason
    logprobs: list[Distribution]
    usage: TokenUsage


@dataclass
class CompletionRequest:
    """One request of ``Csi.complete_concurrent``."""

    model: str
    prompt: str
    params: CompletionParams = field(default_factory=CompletionParams)


class Role(StrEnum):
    """Who speaks a chat message."""

    User = "user"
    Assistant = "assistant"
    System = "system"
    Tool = "tool"


@dataclass
class ToolCall:
    """A call the model made: ``arguments`` as parsed from the JSON it wrote."""

    id: str
    name: str
    arguments: dict[str, Any]


@dataclass
class Message:
    """One turn of a chat. ``parsed`` is the reply as the pydantic model given as
    ``response_format`` (``None`` otherwise)."""

    role: Role
    content: str | None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    parsed: Any = None

    @classmethod
    def tool(cls, content: str, tool_call_id: str) -> Message:
        """A tool's result, for the call ``tool_call_id``."""
        return cls(Role.Tool, content, tool_call_id=tool_call_id)

    @classmethod
    def user(cls, content: str) -> Message:
        return cls(Role.User, content)

    @classmethod
    def assistant(cls, content: str) -> Message:
        return cls(Role.Assistant, content)

    @classmethod
    def system(cls, content: str) -> Message:
        return cls(Role.System, content)


@dataclass
class ChatRequest:
    """One request of ``Csi.chat_concurrent``."""

    model: str
    messages: list[Message]
    params: ChatParams = field(default_factory=ChatParams)


@dataclass
class ChatResponse:
    """The assistant's message, why it finished, logprobs and usage."""

    message: Message
    finish_reason: FinishReason
    logprobs: list[Distribution]
    usage: TokenUsage
