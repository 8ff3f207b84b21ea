"""OpenAI's Responses API on the engine: a request becomes a chat completion request (the same
engine, grammars, tools and servers), its one stream of events becomes the Responses API's events;
the non-streaming form is that stream, collected. Stored responses continue through
``previous_response_id``."""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import AsyncIterator
from typing import Any

from ....core.decode import GenerationStats
from ....core.engine import Engine
from ....core.generation import Generation
from ....core.scope import Scope
from ....errors import CsiError, InvalidInputError, NotFoundError
from ..protocol import ChatCompletionRequest
from .items import chat_messages, check_ends_with_a_question, input_items
from .objects import (
    DeletedResponse,
    IncompleteDetails,
    InputItemList,
    InputTokensDetails,
    ReasoningConfig,
    ResponseObject,
    ResponseStreamEvent,
    ResponseUsage,
)
from .output import ReplyItems, Sequence, reply_events
from .protocol import FunctionTool, InputItemsRequest, NamedFunctionChoice, ResponseCreateRequest, ResponseIdRequest
from .store import ResponseStore

# ---- the request as a chat completion ---------------------------------------------------------------


def _tool(tool: FunctionTool) -> dict[str, Any]:
    fn = tool.model_dump(exclude={"type"}, exclude_none=True)
    return {"type": "function", "function": fn}


def chat_request(req: ResponseCreateRequest, messages: list[dict[str, Any]],
                 extra_tools: list[dict[str, Any]] | None = None) -> ChatCompletionRequest:
    """The chat completion request this response runs as (``extra_tools``: MCP servers' tools)."""
    body: dict[str, Any] = {"messages": messages, "model": req.model}
    tools = [_tool(t) for _, t in req.function_tools] + (extra_tools or [])
    if tools:
        body["tools"] = tools
    choice = req.tool_choice
    if isinstance(choice, NamedFunctionChoice):
        body["tool_choice"] = {"type": "function", "function": {"name": choice.name}}
    elif isinstance(choice, str):
        body["tool_choice"] = choice
    for name, value in (("parallel_tool_calls", req.parallel_tool_calls), ("max_tokens", req.max_output_tokens),
                        ("temperature", req.temperature), ("top_p", req.top_p), ("seed", req.seed)):
        if value is not None:
            body[name] = value
    if req.logprobs:
        body["logprobs"] = True
        body["top_logprobs"] = req.top_logprobs or 0
    fmt = req.text.format if req.text else None
    if fmt is not None and fmt.type == "json_schema":
        spec = {"name": fmt.name or "response", "schema": fmt.schema_, "strict": fmt.strict,
                "description": fmt.description}
        body["response_format"] = {"type": "json_schema",
                                   "json_schema": {k: v for k, v in spec.items() if v is not None}}
    elif fmt is not None:
        body["response_format"] = {"type": fmt.type}
    try:
        return ChatCompletionRequest.model_validate(body)
    except CsiError as err:
        raise _renamed(err, req) from None
    except Exception as err:  # pydantic's ValidationError: a shape only our conversion could get wrong
        raise InvalidInputError(f"the input cannot be read as a conversation: {err}", "input") from None


_FIELDS = [(r"^messages\b.*", "input"), (r"^max_tokens$", "max_output_tokens"),
           (r"^response_format\.json_schema\.(\w+)", r"text.format.\1"), (r"^response_format\b.*", "text.format"),
           (r"^tool_choice\.function\.name$", "tool_choice.name"),
           (r"^tools\[(\d+)\]\.function\.(\w+)", r"tools[\1].\2")]


def _renamed(err: CsiError, req: ResponseCreateRequest) -> CsiError:
    """A chat completion error named by the Responses API's field."""
    param = err.param
    if param is not None:
        for pattern, repl in _FIELDS:
            if re.match(pattern, param):
                param = re.sub(pattern, repl, param)
                break
        found = re.match(r"^tools\[(\d+)\]", param)
        functions = req.function_tools
        if found and int(found.group(1)) < len(functions):
            param = param.replace(found.group(0), f"tools[{functions[int(found.group(1))][0]}]", 1)
    out = type(err)(str(err), param)
    return out


def generate(engine: Engine, chat: ChatCompletionRequest, req: ResponseCreateRequest,
             scope: Scope | None) -> Generation:
    try:
        return engine.generate(chat.to_generation_request(), scope)
    except CsiError as err:
        raise _renamed(err, req) from None


# ---- the response -----------------------------------------------------------------------------------


def new_response(req: ResponseCreateRequest, model: str) -> ResponseObject:
    """The response object as it begins (``in_progress``), the request's settings echoed."""
    fmt = req.text.format.model_dump(by_alias=True, exclude_none=True) if req.text and req.text.format else None
    return ResponseObject(
        id="resp_" + secrets.token_hex(24), created_at=int(time.time()), status="in_progress", model=model,
        output=[], reasoning=ReasoningConfig(),
        instructions=req.instructions, max_output_tokens=req.max_output_tokens, max_tool_calls=req.max_tool_calls,
        parallel_tool_calls=req.parallel_tool_calls is not False, previous_response_id=req.previous_response_id,
        store=req.store is not False, temperature=req.temperature, top_p=req.top_p, top_logprobs=req.top_logprobs,
        text={"format": fmt or {"type": "text"}}, tool_choice=_dumped(req.tool_choice) or "auto",
        tools=[t.model_dump(by_alias=True, exclude_none=True) for t in req.tools or []], user=req.user,
        metadata=dict(req.metadata or {}), service_tier=req.service_tier)


def _dumped(value: Any) -> Any:
    return value.model_dump(exclude_none=True) if hasattr(value, "model_dump") else value


def finish(response: ResponseObject, stats: list[GenerationStats]) -> None:
    """Usage, status and ``output_text`` once every model reply of the response has ended."""
    output = sum(s.completion_tokens for s in stats)
    prompt = sum(s.prompt_tokens for s in stats)
    cached = sum(s.cached_tokens for s in stats)
    response.usage = ResponseUsage(input_tokens=prompt, output_tokens=output, total_tokens=prompt + output,
                                   input_tokens_details=InputTokensDetails(cached_tokens=cached,
                                                                           cache_write_tokens=prompt - cached))
    reason = stats[-1].finish_reason
    if reason == "length":
        response.status, response.incomplete_details = "incomplete", IncompleteDetails(reason="max_output_tokens")
    elif reason == "abort":  # interrupted or aborted: OpenAI's status for a cancelled response
        response.status = "cancelled"
    else:
        response.status = "completed"
    response.completed_at = int(time.time()) if response.status == "completed" else None
    response.output_text = "".join(p.text for item in response.output if item.type == "message"
                                   for p in item.content)


async def earlier_items(store: ResponseStore, previous: str | None) -> list[dict[str, Any]]:
    """The items of the conversation a ``previous_response_id`` continues (its input and output last)."""
    if previous is None:
        return []
    record = await store.get(previous)
    if record is None:
        raise NotFoundError(f"no stored response {previous!r} (it was not stored, or was deleted)",
                            "previous_response_id")
    return [*record["context"], *record["input_items"], *record["response"]["output"]]


async def response_events(engine: Engine, store: ResponseStore, req: ResponseCreateRequest,
                          scope: Scope | None = None) -> AsyncIterator[ResponseStreamEvent]:
    """A response's events: created, in progress, its items' events, then completed or incomplete."""
    if req.mcp_tools:
        raise InvalidInputError("MCP servers are not reached yet", f"tools[{req.mcp_tools[0][0]}]")
    earlier = await earlier_items(store, req.previous_response_id)
    given = input_items(req.input or "", earlier)
    check_ends_with_a_question(given)
    chat = chat_request(req, chat_messages([*earlier, *given], req.instructions))
    gen = generate(engine, chat, req, scope)
    response = new_response(req, gen.model.model_id)
    seq = Sequence()
    yield seq.event("response.created", response=response.model_copy(deep=True))
    yield seq.event("response.in_progress", response=response.model_copy(deep=True))
    stats: list[GenerationStats] = []
    async for event in reply_events(gen, ReplyItems(seq, response), req.logprobs, stats):
        yield event
    finish(response, stats)
    if response.store:
        await store.put(response.id, {"response": response.model_dump(mode="json"), "input_items": given,
                                      "context": earlier})
    kind = "response.completed" if response.status == "completed" else "response.incomplete"
    yield seq.event(kind, response=response)


async def create_response(engine: Engine, store: ResponseStore, req: ResponseCreateRequest,
                          scope: Scope | None = None) -> ResponseObject | AsyncIterator[ResponseStreamEvent]:
    """``responses.create``: the events when the request says ``stream: true``, else the response."""
    events = response_events(engine, store, req, scope)
    if req.stream:
        return events
    last: ResponseStreamEvent | None = None
    async for event in events:
        last = event
    assert last is not None and last.response is not None
    return last.response


# ---- stored responses ---------------------------------------------------------------------------------


async def _record(store: ResponseStore, response_id: str) -> dict[str, Any]:
    record = await store.get(response_id)
    if record is None:
        raise NotFoundError(f"no stored response {response_id!r}", "response_id")
    return record


async def retrieve(store: ResponseStore, req: ResponseIdRequest) -> ResponseObject:
    return ResponseObject.model_validate((await _record(store, req.response_id))["response"])


async def delete(store: ResponseStore, req: ResponseIdRequest) -> DeletedResponse:
    if not await store.delete(req.response_id):
        raise NotFoundError(f"no stored response {req.response_id!r}", "response_id")
    return DeletedResponse(id=req.response_id)


async def list_input_items(store: ResponseStore, req: InputItemsRequest) -> InputItemList:
    """A page of a stored response's input items: newest first unless ``order`` is ``asc``."""
    items = list((await _record(store, req.response_id))["input_items"])
    if req.order != "asc":
        items.reverse()
    if req.after is not None:
        at = next((i for i, item in enumerate(items) if item.get("id") == req.after), None)
        if at is None:
            raise NotFoundError(f"no input item {req.after!r} in {req.response_id!r}", "after")
        items = items[at + 1:]
    limit = req.limit or 20
    page = items[:limit]
    return InputItemList(data=page, first_id=page[0]["id"] if page else None,
                         last_id=page[-1]["id"] if page else None, has_more=len(items) > limit)
