"""A real MCP server for the tests: the official SDK's ``MCPServer`` (PyPI ``mcp``) over Streamable
HTTP at ``/mcp``, behind Starlette's CORS middleware (so a page on another 127.0.0.1 port can call
it), served by uvicorn on 127.0.0.1 in a thread of the test process. Besides it, endpoints that
misbehave once a session has started (or from the start: ``?at=start``): ``/bad/500``,
``/bad/garbage`` (not JSON), ``/bad/malformed`` (JSON that is not JSON-RPC), ``/bad/rpc-error`` (a
JSON-RPC error), ``/bad/endless`` (an SSE reply that never ends). ``/log`` lists what the tools
saw (``started``/``cancelled``/``finished`` of the slow tool, with the call's label)."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import ListToolsResult, PaginatedRequestParams
from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Mount, Route

CITIES = {"paris": "Paris is the capital of France.", "berlin": "Berlin is the capital of Germany."}


class Point(BaseModel):
    x: float
    y: float


class Shape(BaseModel):
    name: str
    points: list[Point]
    tags: dict[str, str] = {}


@dataclass
class McpLog:
    """What the server's tools saw, in order: ``(event, tool, detail)``."""

    events: list[tuple[str, str, str]] = field(default_factory=list)

    def wait_for(self, event: str, label: str, timeout: float = 10.0) -> None:
        """Until the slow tool called with ``label`` has seen ``event``; AssertionError after ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while True:
            if (event, "slow", label) in self.events:
                return
            if time.monotonic() >= deadline:
                break
            time.sleep(0.02)
        raise AssertionError(f"the server saw no {event!r} of the call {label!r}: {self.events}")


class PagedServer(MCPServer):
    """``MCPServer`` listing its tools ``PAGE`` at a time (``nextCursor``), as a server with many would."""

    PAGE = 2

    async def _handle_list_tools(self, ctx: Any, params: PaginatedRequestParams | None) -> ListToolsResult:
        start = int(params.cursor) if params is not None and params.cursor else 0
        tools = await self.list_tools()
        end = start + self.PAGE
        return ListToolsResult(tools=tools[start:end], next_cursor=str(end) if end < len(tools) else None)


def mcp_tools(log: McpLog) -> MCPServer:
    """The test server's tools: ``add``, ``lookup``, ``slow``, ``fail``, ``shape_area`` (nested schema)."""
    server = PagedServer("csi-test-tools")

    @server.tool(description="Add two integers.")
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool(description="A sentence about a city.")
    def lookup(city: str) -> str:
        return CITIES.get(city.lower(), f"no entry for {city}")

    @server.tool(description="Sleep for `seconds`, then answer.")
    async def slow(seconds: float, label: str = "slow") -> str:
        log.events.append(("started", "slow", label))
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            log.events.append(("cancelled", "slow", label))
            raise
        log.events.append(("finished", "slow", label))
        return f"slept {seconds} s"

    @server.tool(description="Always fails.")
    def fail(reason: str = "it broke") -> str:
        raise ToolError(f"fail was asked to fail: {reason}")

    @server.tool(description="The area of a polygon (shoelace formula) and its tags.")
    def shape_area(shape: Shape) -> str:
        pts = shape.points
        twice = sum(p.x * q.y - q.x * p.y for p, q in zip(pts, pts[1:] + pts[:1], strict=True))
        tags = ",".join(f"{k}={v}" for k, v in sorted(shape.tags.items()))
        return f"{shape.name}: {abs(twice) / 2:g} [{tags}]"

    return server


async def _endless_events() -> AsyncIterator[bytes]:
    yield b": open\n\n"
    while True:  # a comment every 100 ms, never an answer; ends when the client goes away
        await asyncio.sleep(0.1)
        yield b": still here\n\n"


MISBEHAVIOURS: dict[str, Callable[[Any], Response]] = {
    "500": lambda _: PlainTextResponse("upstream exploded", 500),
    "garbage": lambda _: PlainTextResponse("<html>not json</html>", headers={"content-type": "application/json"}),
    "malformed": lambda _: JSONResponse({"jsonrpc": "2.0", "hello": "world"}),
    "rpc-error": lambda rid: JSONResponse({"jsonrpc": "2.0", "id": rid,
                                           "error": {"code": -32603, "message": "the database is on fire"}}),
    "endless": lambda _: StreamingResponse(_endless_events(), media_type="text/event-stream"),
}


async def _misbehave(request: Request) -> Response:
    """``/bad/<how>``: starts a session like a server (unless ``?at=start``), then misbehaves."""
    how = request.path_params["how"]
    if request.method == "DELETE":
        return Response(status_code=204)
    try:
        body = await request.json()
    except ValueError:
        body = {}
    method = body.get("method") if isinstance(body, dict) else None
    if request.query_params.get("at") != "start":
        if method == "initialize":
            return JSONResponse({"jsonrpc": "2.0", "id": body.get("id"), "result": {
                "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                "serverInfo": {"name": "misbehaving", "version": "1"}}}, headers={"mcp-session-id": "bad-1"})
        if isinstance(method, str) and method.startswith("notifications/"):
            return Response(status_code=202)
    return MISBEHAVIOURS[how](body.get("id") if isinstance(body, dict) else None)


def mcp_app(log: McpLog) -> Starlette:
    """The MCP server at ``/mcp`` and the misbehaving endpoints, with CORS for any origin."""
    inner = mcp_tools(log).streamable_http_app(
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))

    async def show_log(request: Request) -> Response:
        return JSONResponse([list(e) for e in log.events])

    bad = [Route("/bad/{how}", _misbehave, methods=["POST", "DELETE"]), Route("/log", show_log, methods=["GET"])]
    # the SDK's app runs its session manager in its lifespan: keep it, and mount it at the root
    app = Starlette(routes=[*bad, Mount("/", app=inner)], lifespan=lambda _: inner.router.lifespan_context(inner))
    app.add_middleware(CORSMiddleware, allow_origins=["*"], allow_methods=["*"], allow_headers=["*"],
                       expose_headers=["Mcp-Session-Id"])
    return app


@dataclass
class McpTestServer:
    """A running test server: its base URL (``/mcp`` is the MCP endpoint) and its tools' log."""

    url: str
    log: McpLog

    @property
    def mcp(self) -> str:
        return self.url + "/mcp"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def down_url() -> str:
    """An MCP URL where nothing listens (a free port: connections are refused)."""
    return f"http://127.0.0.1:{free_port()}/mcp"


@contextmanager
def running_mcp_server() -> Iterator[McpTestServer]:
    """The test server on a free 127.0.0.1 port, in a thread, until the block ends."""
    log = McpLog()
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(mcp_app(log), host="127.0.0.1", port=port, log_level="warning",
                                           lifespan="on", timeout_graceful_shutdown=1))
    thread = threading.Thread(target=server.run, name="mcp-test-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the MCP test server did not start")
        time.sleep(0.02)
    try:
        yield McpTestServer(f"http://127.0.0.1:{port}", log)
    finally:
        server.should_exit = True
        thread.join(10)


def main() -> None:  # pragma: no cover - by hand: python -m tests.support.mcp_server
    with running_mcp_server() as s:
        print(s.mcp, flush=True)
        while True:
            time.sleep(3600)


if __name__ == "__main__":  # pragma: no cover
    main()
