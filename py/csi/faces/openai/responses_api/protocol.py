"""Pydantic models of OpenAI's Responses API request (``responses.create``): its input items, tools
and text format, checked by field; what has no meaning here is refused by field, never ignored."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, model_validator

from ....errors import InvalidInputError
from ....wire import Strict
from ...structured import FunctionName
from ..protocol import Metadata, ServiceTier, StreamOptions

# ---- input items -----------------------------------------------------------------------------------


class InputText(Strict):
    type: Literal["input_text"]
    text: str


class OutputText(Strict):
    """Assistant text handed back as input (a stateless client's history)."""

    type: Literal["output_text"]
    text: str
    annotations: list[Any] | None = None
    logprobs: list[Any] | None = None


class Refusal(Strict):
    type: Literal["refusal"]
    refusal: str


class MediaPart(Strict):
    """An image, file or audio part: well-formed, but not something a text model reads."""

    model_config = Strict.model_config | {"extra": "allow"}
    type: Literal["input_image", "input_file", "input_audio"]


def _part_kind(part: Any) -> str:
    kind = part.get("type") if isinstance(part, dict) else getattr(part, "type", None)
    return kind if kind in ("input_text", "output_text", "refusal") else "media"


ContentPart = Annotated[Annotated[InputText, Tag("input_text")] | Annotated[OutputText, Tag("output_text")]
                        | Annotated[Refusal, Tag("refusal")] | Annotated[MediaPart, Tag("media")],
                        Discriminator(_part_kind)]


class MessageItem(Strict):
    """A message (``type`` may be left out, as OpenAI's "easy" input message)."""

    type: Literal["message"] | None = None
    role: Literal["user", "assistant", "system", "developer"]
    content: str | list[ContentPart]
    id: str | None = None
    status: Literal["in_progress", "completed", "incomplete"] | None = None
    phase: Literal["commentary", "final_answer"] | None = None


class FunctionCallItem(Strict):
    type: Literal["function_call"]
    call_id: Annotated[str, Field(min_length=1)]
    name: str
    arguments: str
    id: str | None = None
    status: Literal["in_progress", "completed", "incomplete"] | None = None


class FunctionCallOutputItem(Strict):
    type: Literal["function_call_output"]
    call_id: Annotated[str, Field(min_length=1)]
    output: str | list[ContentPart]
    id: str | None = None
    status: Literal["in_progress", "completed", "incomplete"] | None = None


class ItemReference(Strict):
    """An item of a stored response or its input, by id."""

    type: Literal["item_reference"]
    id: str


class McpApprovalResponse(Strict):
    type: Literal["mcp_approval_response"]
    approval_request_id: str
    approve: bool
    reason: str | None = None
    id: str | None = None


class OtherItem(Strict):
    """Any other item type (reasoning, built-in tool calls): refused with its path."""

    model_config = Strict.model_config | {"extra": "allow"}
    type: str


_ITEM_TYPES = {"message", "function_call", "function_call_output", "item_reference", "mcp_approval_response"}


def _item_kind(item: Any) -> str:
    kind = item.get("type") if isinstance(item, dict) else getattr(item, "type", None)
    if kind is None:
        return "message"
    return kind if kind in _ITEM_TYPES else "other"


InputItem = Annotated[
    Annotated[MessageItem, Tag("message")] | Annotated[FunctionCallItem, Tag("function_call")]
    | Annotated[FunctionCallOutputItem, Tag("function_call_output")]
    | Annotated[ItemReference, Tag("item_reference")]
    | Annotated[McpApprovalResponse, Tag("mcp_approval_response")] | Annotated[OtherItem, Tag("other")],
    Discriminator(_item_kind)]

# ---- tools and text format ---------------------------------------------------------------------


class FunctionTool(Strict):
    type: Literal["function"]
    name: FunctionName
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class McpTool(Strict):
    """A Model Context Protocol server whose tools the engine lists and calls itself."""

    type: Literal["mcp"]
    server_label: Annotated[str, Field(pattern=r"^[a-zA-Z0-9_-]{1,64}$")]
    server_url: str | None = None
    headers: dict[str, str] | None = None
    allowed_tools: list[str] | dict[str, Any] | None = None
    require_approval: Literal["always", "never"] | dict[str, Any] | None = None
    server_description: str | None = None
    authorization: str | None = None
    connector_id: str | None = None


class OtherTool(Strict):
    """A built-in tool of OpenAI's (web or file search, computer use, code interpreter...): refused."""

    model_config = Strict.model_config | {"extra": "allow"}
    type: str


def _tool_kind(tool: Any) -> str:
    kind = tool.get("type") if isinstance(tool, dict) else getattr(tool, "type", None)
    return kind if kind in ("function", "mcp") else "other"


ResponseTool = Annotated[Annotated[FunctionTool, Tag("function")] | Annotated[McpTool, Tag("mcp")]
                         | Annotated[OtherTool, Tag("other")], Discriminator(_tool_kind)]


class NamedFunctionChoice(Strict):
    type: Literal["function"]
    name: str


class NamedMcpChoice(Strict):
    type: Literal["mcp"]
    server_label: str
    name: str | None = None


ToolChoice = Literal["none", "auto", "required"] | NamedFunctionChoice | NamedMcpChoice


class TextFormat(Strict):
    """``text.format``: ``text``, ``json_object``, or ``json_schema`` (its fields beside ``type``)."""

    type: Literal["text", "json_object", "json_schema"]
    name: FunctionName | None = None
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    description: str | None = None
    strict: bool | None = None


class TextConfig(Strict):
    format: TextFormat | None = None
    verbosity: Literal["low", "medium", "high"] | None = None


class Reasoning(Strict):
    effort: Literal["none", "minimal", "low", "medium", "high", "xhigh"] | None = None
    summary: Literal["auto", "concise", "detailed"] | None = None
    generate_summary: Literal["auto", "concise", "detailed"] | None = None


LOGPROBS = "message.output_text.logprobs"

# ---- the request -----------------------------------------------------------------------------------


class ResponseCreateRequest(Strict):
    """``responses.create``'s body: every field OpenAI's API reference defines is checked; those
    with no meaning for a model in the browser are refused by field."""

    model: str | None = None
    input: str | list[InputItem] | None = None
    instructions: str | None = None
    tools: list[ResponseTool] | None = None
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    max_tool_calls: Annotated[int, Field(ge=1)] | None = None
    text: TextConfig | None = None
    max_output_tokens: Annotated[int, Field(ge=1)] | None = None
    temperature: Annotated[float, Field(ge=0.0, le=2.0)] | None = None
    top_p: Annotated[float, Field(gt=0.0, le=1.0)] | None = None
    top_logprobs: Annotated[int, Field(ge=0, le=20)] | None = None
    include: list[str] | None = None
    metadata: Metadata | None = None
    store: bool | None = None
    previous_response_id: str | None = None
    stream: bool | None = None
    stream_options: StreamOptions | None = None
    background: bool | None = None
    reasoning: Reasoning | None = None
    truncation: Literal["auto", "disabled"] | None = None
    service_tier: ServiceTier | None = None
    user: str | None = None
    safety_identifier: str | None = None
    prompt_cache_key: str | None = None
    prompt_cache_retention: Literal["in_memory", "24h"] | None = None
    conversation: str | dict[str, Any] | None = None
    prompt: dict[str, Any] | None = None
    seed: int | None = None
    """Extension (as chat's): the seed of sampling."""

    @model_validator(mode="after")
    def _rules(self) -> ResponseCreateRequest:
        """What cannot be honored here, by field (an ``InvalidInputError`` passes through pydantic)."""
        if self.input is None or self.input == "" or self.input == []:
            raise InvalidInputError("`input` is required: the text or items the model answers", "input")
        if self.stream_options is not None and not self.stream:
            raise InvalidInputError("`stream_options` is only allowed when `stream` is true", "stream_options")
        if self.background:
            raise InvalidInputError("background responses cannot be honored: the model runs in this page, "
                                    "which waits for it (stream instead)", "background")
        if self.reasoning is not None:
            if self.reasoning.effort not in (None, "none"):
                raise InvalidInputError("the model does not reason, so its effort cannot be set (only \"none\")",
                                        "reasoning.effort")
            if self.reasoning.summary or self.reasoning.generate_summary:
                raise InvalidInputError("the model does not reason: there is no reasoning to summarize",
                                        "reasoning.summary")
        if self.truncation == "auto":
            raise InvalidInputError("`truncation: \"auto\"` cannot be honored: an input longer than the context "
                                    "window is refused, never cut (`disabled`)", "truncation")
        if self.conversation is not None:
            raise InvalidInputError("conversations are not kept here: chain responses with "
                                    "`previous_response_id`", "conversation")
        if self.prompt is not None:
            raise InvalidInputError("stored prompt templates live on OpenAI's platform; give `instructions` and "
                                    "`input`", "prompt")
        if self.text and self.text.verbosity not in (None, "medium"):
            raise InvalidInputError("csi-web's models cannot be asked for a verbosity (only \"medium\")",
                                    "text.verbosity")
        for i, name in enumerate(self.include or []):
            if name != LOGPROBS:
                raise InvalidInputError(f"{name!r} cannot be included: only {LOGPROBS!r} has a meaning here",
                                        f"include[{i}]")
        for i, tool in enumerate(self.tools or []):
            if isinstance(tool, OtherTool):
                raise InvalidInputError(f"the built-in tool {tool.type!r} is OpenAI's and cannot run here; give "
                                        "`function` tools or an `mcp` server", f"tools[{i}].type")
        _check_items(self.input)
        return self

    @property
    def logprobs(self) -> bool:
        return LOGPROBS in (self.include or [])

    @property
    def mcp_tools(self) -> list[tuple[int, McpTool]]:
        return [(i, t) for i, t in enumerate(self.tools or []) if isinstance(t, McpTool)]

    @property
    def function_tools(self) -> list[tuple[int, FunctionTool]]:
        return [(i, t) for i, t in enumerate(self.tools or []) if isinstance(t, FunctionTool)]


def _check_items(items: str | list[Any] | None) -> None:
    if not isinstance(items, list):
        return
    for i, item in enumerate(items):
        if isinstance(item, OtherItem):
            raise InvalidInputError(f"input items of type {item.type!r} cannot be read here", f"input[{i}].type")
        parts = item.content if isinstance(item, MessageItem) else \
            item.output if isinstance(item, FunctionCallOutputItem) else None
        field = "content" if isinstance(item, MessageItem) else "output"
        for j, part in enumerate(parts if isinstance(parts, list) else []):
            if isinstance(part, MediaPart):
                raise InvalidInputError(f"csi-web's models read text only: a {part.type!r} part cannot be read",
                                        f"input[{i}].{field}[{j}]")
            if isinstance(item, MessageItem) and item.role != "assistant" and not isinstance(part, InputText):
                raise InvalidInputError(f"a {item.role} message holds `input_text` parts, not {part.type!r}",
                                        f"input[{i}].content[{j}].type")
            if isinstance(item, MessageItem) and item.role == "assistant" and isinstance(part, InputText):
                raise InvalidInputError("an assistant message holds `output_text` or `refusal` parts",
                                        f"input[{i}].content[{j}].type")


class ResponseIdRequest(Strict):
    """``responses.retrieve`` / ``responses.delete``: a stored response's id."""

    response_id: Annotated[str, Field(min_length=1, max_length=256)]


class InputItemsRequest(Strict):
    """``responses.inputItems.list``: a stored response's input items, a page at a time."""

    response_id: Annotated[str, Field(min_length=1, max_length=256)]
    after: str | None = None
    limit: Annotated[int, Field(ge=1, le=100)] | None = None
    order: Literal["asc", "desc"] | None = None
    include: list[str] | None = None
