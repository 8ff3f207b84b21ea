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
from .approvals import approved_calls
from .items import chat_messages, check_ends_with_a_question, input_items, new_id
from .mcp_tools import McpServers, OpenClient
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
from .protocol import (
    FunctionTool,
    InputItemsRequest,
    NamedFunctionChoice,
    NamedMcpChoice,
    ResponseCreateRequest,
    ResponseIdRequest,
)
from .store import ResponseStore

# ---- the request as a chat completion ---------------------------------------------------------------


def _tool(tool: FunctionTool) -> dict[str, Any]:
    fn = tool.model_dump(exclude={"type"}, exclude_none=True)
    return {"type": "function", "function": fn}


def chat_request(req: ResponseCreateRequest, messages: list[dict[str, Any]],
                 extra_tools: list[dict[str, Any]] | None = None, first: bool = True,
                 last: bool = False) -> ChatCompletionRequest:
    """The chat completion request this response runs as (``extra_tools``: MCP servers' tools). A
    ``tool_choice`` that forces a call holds for the first reply; the replies after MCP calls
    (``first=False``) choose freely, and the ``last`` one (no calls left) answers in text."""
    body: dict[str, Any] = {"messages": messages, "model": req.model}
    tools = [_tool(t) for _, t in req.function_tools] + (extra_tools or [])
    if tools:
        body["tools"] = tools
    choice = "none" if last else req.tool_choice if first or req.tool_choice == "none" else "auto"
    if isinstance(choice, NamedFunctionChoice):
        body["tool_choice"] = {"type": "function", "function": {"name": choice.name}}
    elif isinstance(choice, NamedMcpChoice):  # one of that server's tools
        body["tool_choice"] = {"type": "function", "function": {"name": choice.name}} if choice.name else "required"
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
    """A chat completion error named by the Responses API's field (the same error, its ``param`` renamed)."""
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
    err.param = param
    return err


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


MAX_ROUNDS = 8
"""Model replies per response at most, when MCP calls are made between them (the last one is asked
for text, as is the one after ``max_tool_calls`` calls)."""


async def response_events(engine: Engine, store: ResponseStore, req: ResponseCreateRequest,
                          scope: Scope | None = None,
                          open_client: OpenClient | None = None) -> AsyncIterator[ResponseStreamEvent]:
    """A response's events: created, in progress, its items' events, then completed or incomplete.
    With ``mcp`` tools, their servers' tools are listed first, and the model's calls of them are
    made (or put up for approval) between its replies."""
    servers = McpServers(req, open_client)
    try:
        async for event in _events(engine, store, req, scope, servers):
            yield event
    finally:
        await servers.close()


async def _events(engine: Engine, store: ResponseStore, req: ResponseCreateRequest, scope: Scope | None,
                  servers: McpServers) -> AsyncIterator[ResponseStreamEvent]:
    earlier = await earlier_items(store, req.previous_response_id)
    given = input_items(req.input or "", earlier)
    await servers.list_all({t.name for _, t in req.function_tools}, scope)
    approved = approved_calls(given, earlier, servers)
    made_now = [c.model_dump() for c in approved]
    check_ends_with_a_question([*given, *made_now])
    gen = generate(engine, _chat(req, [*earlier, *given, *made_now], servers), req, scope)
    response = new_response(req, gen.model.model_id)
    seq = Sequence()
    yield seq.event("response.created", response=response.model_copy(deep=True))
    yield seq.event("response.in_progress", response=response.model_copy(deep=True))
    for listed in servers.list_items(new_id):
        response.output.append(listed)
        index = len(response.output) - 1
        yield seq.event("response.output_item.added", output_index=index, item=listed.model_copy(update={"tools": []}))
        yield seq.event("response.mcp_list_tools.in_progress", item_id=listed.id, output_index=index)
        yield seq.event("response.mcp_list_tools.completed", item_id=listed.id, output_index=index)
        yield seq.event("response.output_item.done", output_index=index, item=listed.model_copy(deep=True))
    items = ReplyItems(seq, response, servers)
    for call in approved:
        for event in items.add(call):
            yield event
        if call.status == "failed":  # denied: not made
            yield seq.event("response.output_item.done", output_index=len(response.output) - 1,
                            item=call.model_copy(deep=True))
    items.mcp_calls = [c for c in approved if c.status == "in_progress"]
    async for event in items.run_mcp_calls(scope):
        yield event
    stats: list[GenerationStats] = []
    if items.aborted:  # no reply after a cancelled approved call
        stats.append(GenerationStats(finish_reason="abort"))
    made = len(items.mcp_calls)
    for round_ in range(0 if items.aborted else MAX_ROUNDS):
        if round_ or approved:
            outputs = [o.model_dump(mode="json") for o in response.output]
            last = round_ == MAX_ROUNDS - 1 or (req.max_tool_calls is not None and made >= req.max_tool_calls)
            gen = generate(engine, _chat(req, [*earlier, *given, *outputs], servers, round_ == 0, last), req, scope)
        items = ReplyItems(seq, response, servers)
        async for event in reply_events(gen, items, req.logprobs, stats):
            yield event
        if not items.mcp_calls:
            break
        made += len(items.mcp_calls)
        if req.max_tool_calls is not None and made > req.max_tool_calls:  # a reply of parallel calls, too many
            for event in items.drop_mcp_calls():
                yield event
            break
        async for event in items.run_mcp_calls(scope):
            yield event
        if items.aborted:
            stats[-1].finish_reason = "abort"
            break
        if items.calls or stats[-1].finish_reason != "stop":
            break  # the client runs its own calls; a cut reply is not continued
    finish(response, stats)
    if response.store:
        await store.put(response.id, {"response": response.model_dump(mode="json"), "input_items": given,
                                      "context": earlier})
    kind = "response.completed" if response.status == "completed" else "response.incomplete"
    yield seq.event(kind, response=response)


def _chat(req: ResponseCreateRequest, items: list[dict[str, Any]], servers: McpServers,
          first: bool = True, last: bool = False) -> ChatCompletionRequest:
    return chat_request(req, chat_messages(items, req.instructions), servers.functions(), first, last)


async def create_response(engine: Engine, store: ResponseStore, req: ResponseCreateRequest,
                          scope: Scope | None = None,
                          open_client: OpenClient | None = None) -> ResponseObject | AsyncIterator[ResponseStreamEvent]:
    """``responses.create``: the events when the request says ``stream: true``, else the response;
    ``open_client`` reaches the request's MCP servers (``None``: none can be)."""
    events = response_events(engine, store, req, scope, open_client)
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
