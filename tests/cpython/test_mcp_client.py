"""``csi.mcp.client.McpClient`` against a real MCP server (the official SDK's, tests/support/mcp_server.py)
over Streamable HTTP on 127.0.0.1, through CPython's ``HttpClient``: tools listed (a nested schema
among them), called, a failing tool, and every misbehaviour of a server as one typed error naming
the server and the tool; a cancelled or timed-out call reaches the server (its tool is cancelled)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from csi.core.engine import Engine
from csi.core.scope import Scope
from csi.errors import (
    AbortError,
    CsiError,
    InvalidInputError,
    ServerError,
    ServerTimeoutError,
    ServerUnavailableError,
)
from csi.mcp.client import McpClient
from csi.servers.asyncio_http import AsyncioHttp
from csi.testing import ScriptedBackend
from tests.support.aio import run_async
from tests.support.mcp_server import McpTestServer, PagedServer, down_url


@pytest.fixture
def server(mcp_server: McpTestServer) -> McpTestServer:
    return mcp_server


def client(url: str, timeout_s: float = 20.0, **kw: Any) -> McpClient:
    return McpClient(AsyncioHttp(), url, {}, "tests", timeout_s=timeout_s, **kw)


async def using(c: McpClient, work: Any) -> Any:
    try:
        return await work(c)
    finally:
        await c.close()


def test_lists_the_servers_tools_with_their_schemas(server: McpTestServer) -> None:
    tools = run_async(using(client(server.mcp), lambda c: c.list_tools()))
    assert len(tools) > PagedServer.PAGE  # they came in pages (nextCursor)
    by_name = {t.name: t for t in tools}
    assert sorted(by_name) == ["add", "fail", "lookup", "shape_area", "slow"]
    assert by_name["add"].description == "Add two integers."
    assert by_name["add"].input_schema["required"] == ["a", "b"]
    nested = by_name["shape_area"].input_schema
    assert nested["properties"]["shape"] == {"$ref": "#/$defs/Shape"}
    assert nested["$defs"]["Shape"]["properties"]["points"]["items"] == {"$ref": "#/$defs/Point"}


def test_calls_tools_in_one_session(server: McpTestServer) -> None:
    async def calls(c: McpClient) -> Any:
        added = await c.call_tool("add", {"a": 2, "b": 40})
        session = c._session
        found = await c.call_tool("lookup", {"city": "Paris"})
        shape = {"name": "square", "points": [{"x": 0, "y": 0}, {"x": 2, "y": 0}, {"x": 2, "y": 2},
                                              {"x": 0, "y": 2}], "tags": {"colour": "red"}}
        area = await c.call_tool("shape_area", {"shape": shape})
        return added, found, area, session, c._session

    added, found, area, first, last = run_async(using(client(server.mcp), calls))
    assert (added.text, added.is_error, added.structured) == ("42", False, {"result": 42})
    assert added.content == [{"type": "text", "text": "42"}]
    assert found.text == "Paris is the capital of France."
    assert area.text == "square: 4 [colour=red]"
    assert first is not None and first == last  # one session for all the calls


def test_a_failing_tool_is_a_result_with_is_error(server: McpTestServer) -> None:
    out = run_async(using(client(server.mcp), lambda c: c.call_tool("fail", {"reason": "on purpose"})))
    assert out.is_error
    assert "fail was asked to fail: on purpose" in out.text
    bad = run_async(using(client(server.mcp), lambda c: c.call_tool("add", {"a": "x"})))
    assert bad.is_error and "validation error" in bad.text


def test_a_forgotten_session_is_started_again(server: McpTestServer) -> None:
    async def calls(c: McpClient) -> Any:
        await c.call_tool("add", {"a": 1, "b": 1})
        c._session = "no-such-session"
        return await c.call_tool("add", {"a": 1, "b": 2})

    assert run_async(using(client(server.mcp), calls)).text == "3"


def failure(url: str, timeout_s: float = 20.0, tool: str = "add") -> CsiError:
    async def call(c: McpClient) -> Any:
        return await c.call_tool(tool, {"a": 1, "b": 2})

    with pytest.raises(CsiError) as caught:
        run_async(using(client(url, timeout_s), call))
    return caught.value


@pytest.mark.parametrize(("path", "kind", "says"), [
    ("/bad/500", ServerError, "HTTP 500: upstream exploded"),
    ("/bad/garbage", ServerError, "not JSON"),
    ("/bad/malformed", ServerError, "not a JSON-RPC message"),
    ("/bad/500?at=start", ServerError, "(starting a session): it answered HTTP 500"),
    ("/bad/rpc-error", ServerError, "JSON-RPC error -32603: the database is on fire"),
])
def test_a_misbehaving_server_is_one_typed_error_naming_it(server: McpTestServer, path: str, kind: type,
                                                           says: str) -> None:
    err = failure(server.url + path)
    assert type(err) is kind
    assert says in err.message
    assert f"MCP server 'tests' at {server.url}{path}, calling tool 'add'" in err.message


def test_an_endless_event_stream_is_a_timeout(server: McpTestServer) -> None:
    err = failure(server.url + "/bad/endless", timeout_s=1.0)
    assert isinstance(err, ServerTimeoutError)
    assert "no answer within 1 s" in err.message and "/bad/endless" in err.message


def test_a_server_that_is_down_is_unavailable() -> None:
    url = down_url()
    err = failure(url)
    assert isinstance(err, ServerUnavailableError)
    assert f"MCP server 'tests' at {url}, calling tool 'add' (starting a session)" in err.message


def test_a_slow_tool_times_out_naming_it_and_the_server_cancels_it(server: McpTestServer) -> None:
    async def call(c: McpClient) -> Any:
        return await c.call_tool("slow", {"seconds": 30, "label": "deadline"})

    with pytest.raises(ServerTimeoutError) as caught:
        run_async(using(client(server.mcp, timeout_s=1.0), call))
    assert "calling tool 'slow': no answer within 1 s" in caught.value.message
    server.log.wait_for("cancelled", "deadline")


def test_a_json_rpc_invalid_params_error_blames_the_arguments() -> None:
    from csi.mcp.exchange import Failure

    err = Failure("MCP server 'x'", "calling tool 'add'", 1).rpc({"code": -32602, "message": "bad a"})
    assert isinstance(err, InvalidInputError) and err.param == "arguments"


def test_cancelling_the_scope_aborts_the_call_and_reaches_the_server(server: McpTestServer) -> None:
    engine = Engine(ScriptedBackend([b"<eos>"], [0]))

    async def call() -> Any:
        c = client(server.mcp, cancels=engine)
        await c.list_tools()  # the session is started
        scope = Scope("call-1", engine.interrupt_epoch)
        task = asyncio.ensure_future(c.call_tool("slow", {"seconds": 30, "label": "scope"}, scope))
        while not any(e[2] == "scope" for e in server.log.events):
            await asyncio.sleep(0.02)
        engine.abort("call-1")
        try:
            return await asyncio.wait_for(task, 5)
        finally:
            await c.close()

    with pytest.raises(AbortError) as caught:
        run_async(call())
    assert "calling tool 'slow'" in caught.value.message and "was cancelled" in caught.value.message
    server.log.wait_for("cancelled", "scope")


def test_cancelling_the_task_reaches_the_server(server: McpTestServer) -> None:
    async def call() -> None:
        c = client(server.mcp)
        task = asyncio.ensure_future(c.call_tool("slow", {"seconds": 30, "label": "task"}))
        while not any(e[2] == "task" for e in server.log.events):
            await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await c.close()

    run_async(call())
    server.log.wait_for("cancelled", "task")
