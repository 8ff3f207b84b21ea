"""Inference types of the skill SDK: the shapes of pharia-skill's CSI (WIT ``pharia:skill@0.3.0``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal


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
class ChatParams:
    """Parameters of ``Csi.chat``; ``None`` leaves the engine's default."""

    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    logprobs: Logprobs = "no"


class FinishReason(StrEnum):
    """Why the model stopped: a natural end or stop sequence, the token limit, a content filter."""

    STOP = "stop"
    LENGTH = "length"
    CONTENT_FILTER = "content_filter"


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


@dataclass
class Message:
    """One turn of a chat."""

    role: Role
    content: str

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


# ---- to and from the engine's JSON shapes (seed 001 in snake_case) ------------------------------

def _logprobs_wire(value: Logprobs) -> Any:
    return {"top": value.top} if isinstance(value, TopLogprobs) else value


def completion_request_wire(r: CompletionRequest) -> dict[str, Any]:
    p = r.params
    return {"model": r.model, "prompt": r.prompt, "params": {
        "max_tokens": p.max_tokens, "temperature": p.temperature, "top_k": p.top_k, "top_p": p.top_p,
        "stop": list(p.stop), "return_special_tokens": p.return_special_tokens,
        "frequency_penalty": p.frequency_penalty, "presence_penalty": p.presence_penalty,
        "logprobs": _logprobs_wire(p.logprobs)}}


def chat_request_wire(r: ChatRequest) -> dict[str, Any]:
    p = r.params
    return {"model": r.model,
            "messages": [{"role": Role(m.role).value, "content": m.content} for m in r.messages],
            "params": {"max_tokens": p.max_tokens, "temperature": p.temperature, "top_p": p.top_p,
                       "frequency_penalty": p.frequency_penalty, "presence_penalty": p.presence_penalty,
                       "logprobs": _logprobs_wire(p.logprobs)}}


def _distributions(raw: list[dict[str, Any]]) -> list[Distribution]:
    def lp(d: dict[str, Any]) -> Logprob:
        return Logprob(bytes(d["token"]), float(d["logprob"]))

    return [Distribution(lp(d["sampled"]), [lp(t) for t in d["top"]]) for d in raw]


def completion_from_wire(d: dict[str, Any]) -> Completion:
    return Completion(d["text"], FinishReason(d["finish_reason"]), _distributions(d["logprobs"]),
                      TokenUsage(d["usage"]["prompt"], d["usage"]["completion"]))


def chat_response_from_wire(d: dict[str, Any]) -> ChatResponse:
    m = d["message"]
    return ChatResponse(Message(Role(m["role"]), m["content"]), FinishReason(d["finish_reason"]),
                        _distributions(d["logprobs"]), TokenUsage(d["usage"]["prompt"], d["usage"]["completion"]))
