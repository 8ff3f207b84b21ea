"""Inference types of the skill SDK: the shapes of pharia-skill's CSI (WIT ``pharia:skill@0.3.0``,
with ``pharia:skill@0.4``'s structured output and tools in chat)."""

from __future__ import annotations

import json
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


def _response_format_wire(value: ResponseFormat | None) -> dict[str, Any] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return {"type": value}
    if isinstance(value, JsonSchema):
        spec = {"name": value.name, "schema": value.schema, "description": value.description}
        return {"type": "json_schema", "json_schema": {k: v for k, v in spec.items() if v is not None}}
    return {"type": "json_schema", "json_schema": {"name": value.__name__, "schema": value.model_json_schema(),
                                                   "strict": True}}


def _message_wire(m: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": Role(m.role).value, "content": m.content}
    if m.tool_calls:
        out["tool_calls"] = [{"id": c.id, "name": c.name, "arguments": json.dumps(c.arguments)} for c in m.tool_calls]
    if m.tool_call_id is not None:
        out["tool_call_id"] = m.tool_call_id
    return out


def chat_request_wire(r: ChatRequest) -> dict[str, Any]:
    p = r.params
    params: dict[str, Any] = {
        "max_tokens": p.max_tokens, "temperature": p.temperature, "top_p": p.top_p,
        "frequency_penalty": p.frequency_penalty, "presence_penalty": p.presence_penalty,
        "logprobs": _logprobs_wire(p.logprobs)}
    if p.response_format is not None:
        params["response_format"] = _response_format_wire(p.response_format)
    if p.tools:
        params["tools"] = [{k: v for k, v in vars(t).items() if v is not None} for t in p.tools]
    if p.tool_choice is not None:
        params["tool_choice"] = p.tool_choice if p.tool_choice in ("none", "auto", "required") else {
            "name": p.tool_choice}
    return {"model": r.model, "messages": [_message_wire(m) for m in r.messages], "params": params}


def _distributions(raw: list[dict[str, Any]]) -> list[Distribution]:
    def lp(d: dict[str, Any]) -> Logprob:
        return Logprob(bytes(d["token"]), float(d["logprob"]))

    return [Distribution(lp(d["sampled"]), [lp(t) for t in d["top"]]) for d in raw]


def completion_from_wire(d: dict[str, Any]) -> Completion:
    return Completion(d["text"], FinishReason(d["finish_reason"]), _distributions(d["logprobs"]),
                      TokenUsage(d["usage"]["prompt"], d["usage"]["completion"]))


def chat_response_from_wire(d: dict[str, Any], response_format: ResponseFormat | None = None) -> ChatResponse:
    m = d["message"]
    calls = [ToolCall(c["id"], c["name"], _arguments(c["arguments"])) for c in m.get("tool_calls") or []] or None
    message = Message(Role(m["role"]), m["content"], calls)
    finish = FinishReason(d["finish_reason"])
    if isinstance(response_format, type) and issubclass(response_format, BaseModel) and finish == FinishReason.STOP:
        message.parsed = response_format.model_validate_json(m["content"])
    return ChatResponse(message, finish, _distributions(d["logprobs"]),
                        TokenUsage(d["usage"]["prompt"], d["usage"]["completion"]))


def _arguments(text: str) -> dict[str, Any]:
    """A call's arguments; a call cut short by ``max_tokens`` keeps its text under ``"_raw"``."""
    try:
        value = json.loads(text)
    except ValueError:
        return {"_raw": text}
    return value if isinstance(value, dict) else {"_raw": text}
