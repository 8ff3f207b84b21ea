"""The SDK's types to and from the JSON shapes the pharia faces take and give (seed 001, in
snake_case): what the engine-backed ``Csi`` sends and reads back. The SDK itself stays free of them."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from ..sdk.chunking import ChunkRequest
from ..sdk.document_index import Cursor, Document, DocumentPath, Image, Modality, SearchResult, Text
from ..sdk.inference import (
    ChatRequest,
    ChatResponse,
    Completion,
    CompletionRequest,
    Distribution,
    FinishReason,
    JsonSchema,
    Logprob,
    Logprobs,
    Message,
    ResponseFormat,
    Role,
    TokenUsage,
    ToolCall,
    TopLogprobs,
)

# ---- inference ------------------------------------------------------------------------------------

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


# ---- chunking -------------------------------------------------------------------------------------

def chunk_request_wire(r: ChunkRequest) -> dict[str, object]:
    p = r.params
    return {"text": r.text, "params": {"model": p.model, "max_tokens": p.max_tokens, "overlap": p.overlap}}


# ---- document index -------------------------------------------------------------------------------

def path_wire(p: DocumentPath) -> dict[str, str]:
    return {"namespace": p.namespace, "collection": p.collection, "name": p.name}


def path_from_wire(d: dict[str, Any]) -> DocumentPath:
    return DocumentPath(d["namespace"], d["collection"], d["name"])


def search_result_from_wire(d: dict[str, Any]) -> SearchResult:
    return SearchResult(path_from_wire(d["document_path"]), d["content"], float(d["score"]),
                        Cursor(**d["start"]), Cursor(**d["end"]))


def document_from_wire(d: dict[str, Any]) -> Document:
    contents: list[Modality] = [Image() if c == "image" else Text(c["text"]) for c in d["contents"]]
    return Document(path_from_wire(d["path"]), contents, d["metadata"])
