"""The chat messages of an OpenAI / WebLLM request, every role and content part today's API
defines: text is read, ``developer`` speaks as ``system``, refusals in history are what the
assistant said, and parts csi-web's text models cannot read (images, audio, files) are refused by
``check_messages`` with the part's path."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag

from ...core.request import ChatMessage, ToolCall
from ...errors import InvalidInputError
from ...wire import Strict


class TextContentPart(Strict):
    type: Literal["text"]
    text: str


class RefusalContentPart(Strict):
    type: Literal["refusal"]
    refusal: str


class MediaContentPart(Strict):
    """An image, audio or file part: well-formed, but not something a text model reads."""

    type: Literal["image_url", "input_audio", "file"]
    image_url: Any = None
    input_audio: Any = None
    file: Any = None


def _part_type(part: Any) -> Any:
    return part.get("type") if isinstance(part, dict) else getattr(part, "type", None)


def _user_part_kind(part: Any) -> str:
    return "media-part" if _part_type(part) in ("image_url", "input_audio", "file") else "text-part"


def _assistant_part_kind(part: Any) -> str:
    return "refusal-part" if _part_type(part) == "refusal" else "text-part"


# Tagged unions, so a bad part's error names its field (``messages[0].content[1].text``).
UserPart = Annotated[Annotated[TextContentPart, Tag("text-part")] | Annotated[MediaContentPart, Tag("media-part")],
                     Discriminator(_user_part_kind)]
AssistantPart = Annotated[Annotated[TextContentPart, Tag("text-part")]
                          | Annotated[RefusalContentPart, Tag("refusal-part")], Discriminator(_assistant_part_kind)]

TextContent = str | list[TextContentPart]


class SystemMessage(Strict):
    role: Literal["system"]
    content: TextContent
    name: str | None = None


class DeveloperMessage(Strict):
    """OpenAI's newer name for system instructions; the chat template sees a ``system`` turn."""

    role: Literal["developer"]
    content: TextContent
    name: str | None = None


class UserMessage(Strict):
    role: Literal["user"]
    content: str | list[UserPart]
    name: str | None = None


class ToolCallFunction(Strict):
    name: str
    arguments: str


class MessageToolCall(Strict):
    id: str
    type: Literal["function"]
    function: ToolCallFunction


class AudioRef(Strict):
    id: str


class AssistantMessage(Strict):
    role: Literal["assistant"]
    content: str | list[AssistantPart] | None = None
    refusal: str | None = None
    name: str | None = None
    tool_calls: list[MessageToolCall] | None = None
    audio: AudioRef | None = None
    function_call: ToolCallFunction | None = None
    """Deprecated by OpenAI for ``tool_calls``: taken as one tool call (answered by a ``function`` message)."""


class ToolMessage(Strict):
    role: Literal["tool"]
    content: TextContent
    tool_call_id: str


class FunctionMessage(Strict):
    """Deprecated by OpenAI for ``tool`` messages: the result of an assistant's ``function_call``."""

    role: Literal["function"]
    name: str
    content: str | None


def legacy_call_id(name: str) -> str:
    """The id a deprecated ``function_call`` and its ``function`` result share in the engine."""
    return f"call_{name}"


Message = Annotated[
    SystemMessage | DeveloperMessage | UserMessage | AssistantMessage | ToolMessage | FunctionMessage,
    Field(discriminator="role"),
]
AnyMessage = SystemMessage | DeveloperMessage | UserMessage | AssistantMessage | ToolMessage | FunctionMessage


def check_messages(messages: list[AnyMessage]) -> None:
    """Refuse what a text model cannot honor: image, audio and file parts, and audio replies."""
    for i, m in enumerate(messages):
        if isinstance(m, UserMessage) and not isinstance(m.content, str):
            for j, part in enumerate(m.content):
                if isinstance(part, MediaContentPart):
                    raise InvalidInputError(f"a `{part.type}` part cannot be read: csi-web's models read text",
                                            f"messages[{i}].content[{j}]")
        if isinstance(m, AssistantMessage) and m.audio is not None:
            raise InvalidInputError("an audio reply cannot be read: csi-web's models read text",
                                    f"messages[{i}].audio")
        if isinstance(m, FunctionMessage) and not any(
                isinstance(a, AssistantMessage) and a.function_call is not None and a.function_call.name == m.name
                for a in messages[:i]):
            raise InvalidInputError(f"a `function` message answers an assistant's `function_call` of {m.name!r}, "
                                    "and no earlier message made one", f"messages[{i}].name")


def chat_message(m: AnyMessage) -> ChatMessage:
    """The engine's turn for one checked message."""
    if isinstance(m, AssistantMessage):
        calls = tuple(ToolCall(c.id, c.function.name, c.function.arguments) for c in m.tool_calls or [])
        if m.function_call is not None:
            f = m.function_call
            calls += (ToolCall(legacy_call_id(f.name), f.name, f.arguments),)
        text = text_of(m.content) if m.content is not None else m.refusal
        return ChatMessage("assistant", text, calls)
    if isinstance(m, ToolMessage):
        return ChatMessage("tool", text_of(m.content), tool_call_id=m.tool_call_id)
    if isinstance(m, FunctionMessage):
        return ChatMessage("tool", m.content or "", tool_call_id=legacy_call_id(m.name))
    if isinstance(m, DeveloperMessage):
        return ChatMessage("system", text_of(m.content))
    return ChatMessage(m.role, text_of(m.content))


def text_of(content: str | list[Any]) -> str:
    """A message's content as one text: its text (and refusal) parts, one per line."""
    if isinstance(content, str):
        return content
    return "\n".join(p.text if isinstance(p, TextContentPart) else p.refusal for p in content
                     if isinstance(p, TextContentPart | RefusalContentPart))
