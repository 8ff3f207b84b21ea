"""pharia-skill's types to and from the JSON shapes the pharia faces take and give (pharia:skill@0.3.0, in
snake_case): what the engine-backed ``Csi`` sends and reads back."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pharia_skill import (
    ChatRequest,
    ChatResponse,
    ChunkRequest,
    Completion,
    CompletionRequest,
    Cursor,
    Distribution,
    Document,
    DocumentPath,
    FinishReason,
    Image,
    Logprob,
    Logprobs,
    Message,
    MetadataFilter,
    Modality,
    Role,
    SearchFilter,
    SearchRequest,
    SearchResult,
    Text,
    TokenUsage,
    TopLogprobs,
    With,
    WithOneOf,
    Without,
)

from ..errors import AbortError

# ---- inference ------------------------------------------------------------------------------------

def logprobs_wire(value: Logprobs) -> Any:
    return {"top": value.top} if isinstance(value, TopLogprobs) else value


def completion_request_wire(r: CompletionRequest) -> dict[str, Any]:
    p = r.params
    return {"model": r.model, "prompt": r.prompt, "params": {
        "max_tokens": p.max_tokens, "temperature": p.temperature, "top_k": p.top_k, "top_p": p.top_p,
        "stop": list(p.stop), "return_special_tokens": p.return_special_tokens,
        "frequency_penalty": p.frequency_penalty, "presence_penalty": p.presence_penalty,
        "logprobs": logprobs_wire(p.logprobs)}}


def message_wire(m: Message) -> dict[str, Any]:
    return {"role": Role(m.role).value, "content": m.content}


def chat_request_wire(r: ChatRequest) -> dict[str, Any]:
    p = r.params
    return {"model": r.model, "messages": [message_wire(m) for m in r.messages], "params": {
        "max_tokens": p.max_tokens, "temperature": p.temperature, "top_p": p.top_p,
        "frequency_penalty": p.frequency_penalty, "presence_penalty": p.presence_penalty,
        "logprobs": logprobs_wire(p.logprobs)}}


def distributions(raw: list[dict[str, Any]]) -> list[Distribution]:
    def lp(d: dict[str, Any]) -> Logprob:
        return Logprob(bytes(d["token"]), float(d["logprob"]))

    return [Distribution(lp(d["sampled"]), [lp(t) for t in d["top"]]) for d in raw]


def finish_reason(raw: str) -> FinishReason:
    """The SDK's finish reason (stop, length, content_filter). It has no word for a generation cut
    by a cancel or ``interruptGenerate()``: that call raises ``AbortError`` instead (inside a skill
    run, the run is interrupted there anyway)."""
    if raw == "abort":
        raise AbortError("the generation was cut short by a cancel or interruptGenerate()", "model")
    return FinishReason(raw)


def usage(d: dict[str, Any]) -> TokenUsage:
    return TokenUsage(d["usage"]["prompt"], d["usage"]["completion"])


def completion_from_wire(d: dict[str, Any]) -> Completion:
    return Completion(d["text"], finish_reason(d["finish_reason"]), distributions(d["logprobs"]), usage(d))


def chat_response_from_wire(d: dict[str, Any]) -> ChatResponse:
    m = d["message"]
    message = Message(Role(m["role"]), m["content"] or "")
    return ChatResponse(message, finish_reason(d["finish_reason"]), distributions(d["logprobs"]), usage(d))


# ---- chunking -------------------------------------------------------------------------------------

def chunk_request_wire(r: ChunkRequest) -> dict[str, Any]:
    p = r.params
    return {"text": r.text, "params": {"model": p.model, "max_tokens": p.max_tokens, "overlap": p.overlap},
            "character_offsets": True}


# ---- document index -------------------------------------------------------------------------------

def path_wire(p: DocumentPath) -> dict[str, str]:
    return {"namespace": p.namespace, "collection": p.collection, "name": p.name}


def path_from_wire(d: dict[str, Any]) -> DocumentPath:
    return DocumentPath(d["namespace"], d["collection"], d["name"])


def _condition_wire(f: MetadataFilter) -> dict[str, Any]:
    name = type(f.condition).__json_name__
    if name == "is_null":
        return {"field": f.field, "condition": "is_null"}
    value = f.condition.value
    if isinstance(value, dt.datetime):
        value = value.isoformat()
    return {"field": f.field, "condition": {name: value}}


_FILTER_KINDS: dict[type, str] = {Without: "without", With: "with_all", WithOneOf: "with_one_of"}


def filter_wire(f: SearchFilter) -> dict[str, Any]:
    return {_FILTER_KINDS[type(f)]: [_condition_wire(m) for m in f.value]}


def search_request_wire(r: SearchRequest) -> dict[str, Any]:
    p = r.index_path
    return {"index_path": {"namespace": p.namespace, "collection": p.collection, "index": p.index},
            "query": r.query, "max_results": r.max_results, "min_score": r.min_score,
            "filters": [filter_wire(f) for f in r.filters]}


def search_result_from_wire(d: dict[str, Any]) -> SearchResult:
    return SearchResult(path_from_wire(d["document_path"]), d["content"], float(d["score"]),
                        Cursor(**d["start"]), Cursor(**d["end"]))


def document_from_wire(d: dict[str, Any]) -> Document:
    contents: list[Modality] = [Image() if c == "image" else Text(c["text"]) for c in d["contents"]]
    return Document(path_from_wire(d["path"]), contents, d["metadata"])
