"""The Responses API's `mcp` tools on the CPython engine against a real MCP server (the official
`mcp` package's, tests/support/mcp_server.py): tools listed, called by the engine between the
model's replies, approvals, failures and aborts. Every event and object is checked against the
`openai` package's types; the servers' answers are the server's own (its `CITIES`, its sums)."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from csi.backends.cpython import CPythonBackend
from csi.core.engine import Engine
from csi.core.scope import Scope
from csi.errors import CsiError, ServerUnavailableError
from csi.faces.openai.responses_api.protocol import ResponseCreateRequest
from csi.faces.openai.responses_api.serving import create_response
from csi.faces.openai.responses_api.store import MemoryResponseStore
from csi.mcp.namespaces import McpNamespaces
from csi.servers.asyncio_http import AsyncioHttp
from csi.wire import parse_request
from tests.support.aio import run_async
from tests.support.mcp_server import CITIES, McpTestServer, down_url
from tests.support.paths import MODELS
from tests.support.responses import checked
from tests.support.smollm2_reference import MODEL


@pytest.fixture(scope="module")
def engine() -> Engine:
    eng = Engine(CPythonBackend(MODELS))
    run_async(eng.load([MODEL, "tiny-chat"]))
    return eng


@pytest.fixture
def store() -> MemoryResponseStore:
    return MemoryResponseStore()


def mcp(url: str, **extra: Any) -> dict[str, Any]:
    return {"type": "mcp", "server_label": "tests", "server_url": url, **extra}


def stream(engine: Engine, store: MemoryResponseStore, body: dict[str, Any], scope: Scope | None = None) -> list[dict]:
    req = parse_request(ResponseCreateRequest, {**body, "stream": True})
    servers = McpNamespaces(AsyncioHttp(), engine)

    async def go() -> list[dict[str, Any]]:
        events = await create_response(engine, store, req, scope,
                                       lambda u, h, label, params: servers.client(u, h, label, params=params))
        return [json.loads(e.model_dump_json()) async for e in events]  # type: ignore[union-attr]

    return run_async(go())


def lookup_answer(arguments: str) -> str:
    city = json.loads(arguments)["city"]
    return CITIES.get(city.lower(), f"no entry for {city}")


def test_the_real_model_looks_a_city_up_and_answers_from_it(engine, store, mcp_server: McpTestServer) -> None:
    events = stream(engine, store, {
        "model": MODEL, "input": "What does the lookup tool say about Paris?", "temperature": 0,
        "tools": [mcp(mcp_server.mcp, allowed_tools=["lookup", "add"], require_approval="never")],
        "tool_choice": "required", "parallel_tool_calls": False, "max_tool_calls": 1, "max_output_tokens": 60})
    final = checked(events)
    listed, call, *rest = final["output"]
    assert listed["type"] == "mcp_list_tools" and sorted(t["name"] for t in listed["tools"]) == ["add", "lookup"]
    assert call["type"] == "mcp_call" and call["name"] == "lookup" and call["status"] == "completed"
    assert json.loads(call["arguments"])["city"].lower() == "paris"
    assert call["output"] == CITIES["paris"]
    assert rest and rest[-1]["type"] == "message" and "France" in final["output_text"]
    kinds = [e["type"] for e in events]
    for kind in ("response.mcp_list_tools.completed", "response.mcp_call_arguments.delta",
                 "response.mcp_call_arguments.done", "response.mcp_call.in_progress", "response.mcp_call.completed"):
        assert kind in kinds, kind
    assert kinds.index("response.mcp_call.completed") < kinds.index("response.output_text.delta")


def test_calls_wait_for_approval_and_a_denied_call_is_not_made(engine, store, mcp_server: McpTestServer) -> None:
    tools = [mcp(mcp_server.mcp, allowed_tools=["lookup"])]  # OpenAI's default: approval for every call
    asked = checked(stream(engine, store, {"model": "tiny-chat", "input": "Look up Berlin.", "tools": tools,
                                           "tool_choice": "required", "seed": 2, "max_output_tokens": 60}))
    requests = [i for i in asked["output"] if i["type"] == "mcp_approval_request"]
    assert requests and not [i for i in asked["output"] if i["type"] == "mcp_call"]
    approved = checked(stream(engine, store, {
        "model": "tiny-chat", "previous_response_id": asked["id"], "tools": tools, "seed": 2, "max_output_tokens": 8,
        "input": [{"type": "mcp_approval_response", "approval_request_id": r["id"], "approve": True}
                  for r in requests]}))
    calls = [i for i in approved["output"] if i["type"] == "mcp_call"]
    assert [c["approval_request_id"] for c in calls[:len(requests)]] == [r["id"] for r in requests]
    for c, r in zip(calls, requests, strict=False):
        assert c["arguments"] == r["arguments"] and c["output"] == lookup_answer(r["arguments"])
    denied = checked(stream(engine, store, {
        "model": "tiny-chat", "previous_response_id": asked["id"], "tools": tools, "seed": 2, "max_output_tokens": 8,
        "input": [{"type": "mcp_approval_response", "approval_request_id": requests[0]["id"], "approve": False}]}))
    first = denied["output"][1]
    assert first["type"] == "mcp_call" and first["status"] == "failed" and first["output"] is None
    assert first["error"]["type"] == "mcp_tool_execution_error"


def test_a_failing_tool_is_a_failed_call_the_model_reads(engine, store, mcp_server: McpTestServer) -> None:
    final = checked(stream(engine, store, {
        "model": "tiny-chat", "input": "Make it fail.", "seed": 0, "max_output_tokens": 60,
        "tools": [mcp(mcp_server.mcp, allowed_tools=["fail"], require_approval="never")],
        "tool_choice": {"type": "mcp", "server_label": "tests", "name": "fail"}}))
    call = next(i for i in final["output"] if i["type"] == "mcp_call")
    assert call["status"] == "failed" and call["error"]["type"] == "mcp_tool_execution_error"
    assert "fail was asked to fail" in json.dumps(call["error"]["content"])
    assert final["output"][-1]["type"] in ("message", "mcp_call")


@pytest.mark.parametrize("where", ["down", "bad/500", "bad/garbage", "bad/malformed", "bad/rpc-error"])
def test_a_server_that_misbehaves_is_one_typed_error_naming_it(engine, store, mcp_server: McpTestServer,
                                                               where: str) -> None:
    url = down_url() if where == "down" else f"{mcp_server.url}/{where}"
    with pytest.raises(CsiError) as err:
        stream(engine, store, {"model": "tiny-chat", "input": "hi", "max_output_tokens": 4,
                               "tools": [mcp(url, require_approval="never")]})
    assert "tests" in str(err.value) or url in str(err.value)
    assert type(err.value).__name__ != "InternalError"
    if where == "down":
        assert isinstance(err.value, ServerUnavailableError)
    assert stream(engine, store, {"model": "tiny-chat", "input": "hi", "max_output_tokens": 2})[-1]["type"] \
        in ("response.completed", "response.incomplete")  # the engine serves on


def test_an_abort_during_a_call_reaches_the_server(engine, store, mcp_server: McpTestServer) -> None:
    scope = Scope(request_id="slow-1", epoch=engine.interrupt_epoch)
    before = len(mcp_server.log.events)  # the server is the session's: other tests called it too

    def called() -> list[tuple[str, str, str]]:
        return [e for e in mcp_server.log.events[before:] if e[1] == "slow"]

    async def go() -> list[dict[str, Any]]:
        req = parse_request(ResponseCreateRequest, {
            "model": MODEL, "input": "Use the slow tool with seconds set to 30.", "max_output_tokens": 200,
            "temperature": 0, "tools": [mcp(mcp_server.mcp, allowed_tools=["slow"], require_approval="never")],
            "tool_choice": "required", "parallel_tool_calls": False, "stream": True})
        servers = McpNamespaces(AsyncioHttp(), engine)
        events = await create_response(engine, store, req, scope,
                                       lambda u, h, label, params: servers.client(u, h, label, params=params))
        async def abort_once_called() -> None:
            while not called():
                await asyncio.sleep(0.02)
            engine.abort("slow-1")

        out, aborter = [], None
        async for event in events:  # type: ignore[union-attr]
            out.append(json.loads(event.model_dump_json()))
            if event.type == "response.mcp_call.in_progress":  # the call starts once the stream goes on
                aborter = asyncio.ensure_future(abort_once_called())
        assert aborter is not None
        await aborter
        return out

    final = checked(run_async(go()))
    call = next(i for i in final["output"] if i["type"] == "mcp_call")
    assert final["status"] == "cancelled" and call["status"] == "incomplete" and call["output"] is None, call
    for _ in range(250):
        if [e for e in called() if e[0] == "cancelled"]:
            break
        time.sleep(0.02)
    assert [e[0] for e in called()] == ["started", "cancelled"]
