"""What the Responses API answers, in OpenAI's shapes: the response object, its output items, and the
streamed events (each with its ``sequence_number``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, model_serializer

from ..responses import TokenLogprob


class OutputTextPart(BaseModel):
    type: Literal["output_text"] = "output_text"
    text: str = ""
    annotations: list[Any] = Field(default_factory=list)
    logprobs: list[TokenLogprob] = Field(default_factory=list)


class OutputMessage(BaseModel):
    type: Literal["message"] = "message"
    id: str
    status: Literal["in_progress", "completed", "incomplete"] = "in_progress"
    role: Literal["assistant"] = "assistant"
    content: list[OutputTextPart] = Field(default_factory=list)


class FunctionCallOut(BaseModel):
    type: Literal["function_call"] = "function_call"
    id: str
    call_id: str
    name: str
    arguments: str = ""
    status: Literal["in_progress", "completed", "incomplete"] = "in_progress"


class McpToolInfo(BaseModel):
    name: str
    description: str | None = None
    input_schema: dict[str, Any]
    annotations: dict[str, Any] | None = None


class McpListToolsOut(BaseModel):
    type: Literal["mcp_list_tools"] = "mcp_list_tools"
    id: str
    server_label: str
    tools: list[McpToolInfo] = Field(default_factory=list)
    error: str | None = None


class McpCallOut(BaseModel):
    type: Literal["mcp_call"] = "mcp_call"
    id: str
    server_label: str
    name: str
    arguments: str
    output: str | None = None
    error: str | None = None
    approval_request_id: str | None = None
    status: Literal["in_progress", "completed", "incomplete", "calling", "failed"] = "in_progress"


class McpApprovalRequestOut(BaseModel):
    type: Literal["mcp_approval_request"] = "mcp_approval_request"
    id: str
    server_label: str
    name: str
    arguments: str


OutputItem = OutputMessage | FunctionCallOut | McpListToolsOut | McpCallOut | McpApprovalRequestOut


class InputTokensDetails(BaseModel):
    cached_tokens: int
    """Input tokens whose keys and values came from the cache (the previous request's, or one kept in the browser)."""
    cache_write_tokens: int
    """Input tokens computed and kept in the cache for the next request: the rest of the input."""


class OutputTokensDetails(BaseModel):
    reasoning_tokens: int = 0


class ResponseUsage(BaseModel):
    input_tokens: int
    input_tokens_details: InputTokensDetails
    output_tokens: int
    output_tokens_details: OutputTokensDetails = Field(default_factory=OutputTokensDetails)
    total_tokens: int


class IncompleteDetails(BaseModel):
    reason: Literal["max_output_tokens", "content_filter"]


class ResponseError(BaseModel):
    code: str
    message: str


class ReasoningConfig(BaseModel):
    effort: str | None = None
    summary: str | None = None


class ResponseObject(BaseModel):
    """The response object (``output_text`` is the convenience the official clients add)."""

    id: str
    object: Literal["response"] = "response"
    created_at: int
    completed_at: int | None = None
    status: Literal["in_progress", "completed", "incomplete", "cancelled", "failed"]
    """``cancelled``: interrupted or aborted (it ends with ``response.incomplete``)."""
    error: ResponseError | None = None
    incomplete_details: IncompleteDetails | None = None
    instructions: str | None = None
    max_output_tokens: int | None = None
    max_tool_calls: int | None = None
    model: str
    output: list[OutputItem]
    output_text: str = ""
    parallel_tool_calls: bool = True
    previous_response_id: str | None = None
    reasoning: ReasoningConfig
    store: bool = True
    temperature: float | None = None
    text: dict[str, Any]
    tool_choice: Any = "auto"
    tools: list[dict[str, Any]]
    top_logprobs: int | None = None
    top_p: float | None = None
    truncation: Literal["disabled"] = "disabled"
    usage: ResponseUsage | None = None
    user: str | None = None
    metadata: dict[str, str]
    background: bool = False
    service_tier: str | None = None


class ResponseStreamEvent(BaseModel):
    """One streamed event: ``type`` says which (OpenAI's names), ``sequence_number`` counts from 0;
    the other fields are those OpenAI documents for that type (left out when they do not apply)."""

    type: str
    sequence_number: int
    response: ResponseObject | None = None
    output_index: int | None = None
    item: OutputItem | None = None
    item_id: str | None = None
    content_index: int | None = None
    part: OutputTextPart | None = None
    delta: str | None = None
    text: str | None = None
    arguments: str | None = None
    name: str | None = None
    logprobs: list[TokenLogprob] | None = None

    @model_serializer(mode="wrap")
    def _drop_absent(self, handler: Any) -> dict[str, Any]:
        return {k: v for k, v in handler(self).items() if v is not None}


class DeletedResponse(BaseModel):
    id: str
    object: Literal["response"] = "response"
    deleted: bool = True


class InputItemList(BaseModel):
    object: Literal["list"] = "list"
    data: list[dict[str, Any]]
    first_id: str | None
    last_id: str | None
    has_more: bool
