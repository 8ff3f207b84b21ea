"""``McpClient``: one MCP server over the Streamable HTTP transport (protocol 2025-11-25, also
2025-06-18 and 2025-03-26), through the ``HttpClient`` port the server runners use (asyncio streams
in CPython, fetch in the worker).

A session starts on first use (``initialize``, then ``notifications/initialized``); its
``Mcp-Session-Id`` and the protocol version go with every request after it, and a session the
server forgot (404) is started again once. Every request has a deadline (``timeout_s``); every
failure (the server down, slow, HTTP errors, what is not JSON or not JSON-RPC, a JSON-RPC error, an
event stream that never answers) is one ``CsiError`` whose message names the server and the tool.

Cancelling a call (its ``scope``, with ``cancels``, or its task) drops the HTTP request and sends the
server ``notifications/cancelled`` for it, since MCP servers do not take a dropped connection for a
cancellation; a scope's cancellation ends the call with ``AbortError``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.scope import cancel_reason
from ..errors import AbortError, CsiError, ServerError, ServerTimeoutError, ServerUnavailableError
from ..servers.http import HttpClient, HttpResponse
from .exchange import Failure, SessionExpired, read_all, read_answer

if TYPE_CHECKING:
    from ..core.scope import CancelWatch, Scope

PROTOCOL_VERSION = "2025-11-25"
SUPPORTED_VERSIONS = ("2025-03-26", "2025-06-18", "2025-11-25")
CLIENT_INFO = {"name": "csi-web", "version": "1"}
MAX_PAGES = 100
NOTIFY_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class McpTool:
    """A tool as the server lists it."""

    name: str
    description: str | None
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class McpToolResult:
    """What ``tools/call`` answered: its content parts, and whether the tool itself failed."""

    content: list[dict[str, Any]]
    is_error: bool
    structured: Any = None
    """``structuredContent``, when the tool returns one."""

    @property
    def text(self) -> str:
        """The text parts, joined by newlines."""
        return "\n".join(str(p.get("text", "")) for p in self.content if p.get("type") == "text")


class McpClient:
    """One MCP server: its tools listed and called."""

    def __init__(self, http: HttpClient, url: str, headers: dict[str, str], label: str, *,
                 timeout_s: float = 60.0, cancels: CancelWatch | None = None) -> None:
        """``headers`` go with every request (``Authorization``, ...); ``timeout_s`` bounds each
        request; ``cancels`` (the engine) tells when a call's scope is cancelled."""
        self.http, self.url, self.label, self.timeout_s = http, url, label, timeout_s
        self._headers = dict(headers)
        self._cancels = cancels
        self._ids = itertools.count(1)
        self._session: str | None = None
        self._version: str | None = None
        self._starting: asyncio.Lock | None = None
        self._background: set[asyncio.Task[None]] = set()

    @property
    def where(self) -> str:
        return f"MCP server {self.label!r} at {self.url}"

    async def list_tools(self, scope: Scope | None = None) -> list[McpTool]:
        """Every tool the server lists (``tools/list``, page after page)."""
        tools: list[McpTool] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            result = await self._request("tools/list", {"cursor": cursor} if cursor else {}, "listing its tools", scope)
            page = result.get("tools")
            if not isinstance(page, list):
                raise ServerError(f"{self.where}, listing its tools: its answer has no `tools` list")
            for t in page:
                if not (isinstance(t, dict) and isinstance(t.get("name"), str)
                        and isinstance(t.get("inputSchema"), dict)):
                    raise ServerError(f"{self.where}, listing its tools: a tool without a name and an "
                                      f"`inputSchema` object: {json.dumps(t)[:200]}")
                description = t.get("description")
                tools.append(McpTool(t["name"], description if isinstance(description, str) else None,
                                     t["inputSchema"]))
            cursor = result.get("nextCursor")
            if not isinstance(cursor, str) or not cursor:
                return tools
        raise ServerError(f"{self.where}, listing its tools: more than {MAX_PAGES} pages")

    async def call_tool(self, name: str, arguments: dict[str, Any], scope: Scope | None = None) -> McpToolResult:
        """``tools/call``: the tool's content parts; ``is_error`` when the tool itself failed."""
        result = await self._request("tools/call", {"name": name, "arguments": arguments},
                                     f"calling tool {name!r}", scope)
        content = result.get("content", [])
        if not isinstance(content, list) or not all(isinstance(p, dict) for p in content):
            raise ServerError(f"{self.where}, calling tool {name!r}: its `content` is not a list of parts")
        return McpToolResult(content, result.get("isError") is True, result.get("structuredContent"))

    async def close(self) -> None:
        """End the session (``DELETE``; a server that refuses is fine) and wait for pending notices."""
        session, self._session, self._version = self._session, None, None
        if session is not None:
            try:
                response = await asyncio.wait_for(
                    self.http.open("DELETE", self.url, {**self._headers, "Mcp-Session-Id": session}, None),
                    NOTIFY_TIMEOUT_S)
                response.close()
            except (CsiError, TimeoutError):
                pass
        if self._background:
            await asyncio.wait(list(self._background), timeout=NOTIFY_TIMEOUT_S)

    # ---- the session

    def _request_headers(self) -> dict[str, str]:
        headers = {**self._headers, "Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream"}
        if self._version is not None:
            headers["MCP-Protocol-Version"] = self._version
        if self._session is not None:
            headers["Mcp-Session-Id"] = self._session
        return headers

    async def _start(self, what: str, scope: Scope | None) -> None:
        if self._starting is None:
            self._starting = asyncio.Lock()
        async with self._starting:
            if self._version is not None:
                return
            params = {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": CLIENT_INFO}
            what = f"{what} (starting a session)"
            result, session = await self._exchange("initialize", params, what, scope)
            version = result.get("protocolVersion")
            if version not in SUPPORTED_VERSIONS:
                raise ServerError(f"{self.where}, {what}: it speaks MCP protocol version {version!r}; "
                                  f"csi-web speaks {', '.join(SUPPORTED_VERSIONS)}")
            self._session, self._version = session, str(version)
            await self._notify({"jsonrpc": "2.0", "method": "notifications/initialized"}, what)

    async def _request(self, method: str, params: dict[str, Any], what: str, scope: Scope | None) -> dict[str, Any]:
        for attempt in range(2):
            if self._version is None:
                await self._start(what, scope)
            try:
                result, _ = await self._exchange(method, params, what, scope)
                return result
            except SessionExpired:
                if attempt:
                    break
                self._session = self._version = None
        raise ServerError(f"{self.where}, {what}: it forgot the session it had just started")

    async def _notify(self, message: dict[str, Any], what: str) -> None:
        """POST a notification (or an answer to the server), expecting 202 (or any 2xx)."""
        failure = Failure(self.where, what, NOTIFY_TIMEOUT_S)
        try:
            response = await asyncio.wait_for(
                self.http.open("POST", self.url, self._request_headers(), json.dumps(message).encode()),
                NOTIFY_TIMEOUT_S)
        except TimeoutError:
            raise failure.timeout() from None
        try:
            if response.status >= 300:
                raise failure.http(response.status, await read_all(response, lambda: NOTIFY_TIMEOUT_S, failure))
        finally:
            response.close()

    def _in_background(self, message: dict[str, Any]) -> None:
        async def send() -> None:
            try:
                await self._notify(message, "notifying it")
            except CsiError:
                pass  # a courtesy: the server that cannot take it has nothing left to cancel

        task = asyncio.ensure_future(send())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # ---- one request

    async def _exchange(self, method: str, params: dict[str, Any], what: str,
                        scope: Scope | None) -> tuple[dict[str, Any], str | None]:
        """POST the request ``method`` and read its result (and the session id the server gave)."""
        rid = next(self._ids)
        body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()
        failure = Failure(self.where, what, self.timeout_s)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        response: HttpResponse | None = None
        with self._watch(scope, what) as due:
            try:
                had_session = self._session is not None
                try:
                    response = await asyncio.wait_for(
                        self.http.open("POST", self.url, self._request_headers(), body), self.timeout_s)
                except TimeoutError:
                    raise failure.timeout() from None
                if response.status == 404 and had_session and method != "initialize":
                    raise SessionExpired
                if response.status >= 300:
                    raise failure.http(response.status, await read_all(response, lambda: deadline - loop.time(),
                                                                       failure))
                result = await read_answer(response, rid, lambda: deadline - loop.time(), failure,
                                           self._in_background)
                return result, response.headers.get("mcp-session-id")
            except ServerUnavailableError as exc:  # the port's error: name the server and the call
                raise ServerUnavailableError(failure.say(exc.message)) from None
            except (ServerTimeoutError, asyncio.CancelledError):
                # MCP servers take only this for a cancellation (never `initialize`'s)
                if method != "initialize":
                    reason = f"the client {due[0]}" if due else "the client gave up"
                    self._in_background({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                         "params": {"requestId": rid, "reason": reason}})
                raise
            finally:
                if response is not None:
                    response.close()

    @contextmanager
    def _watch(self, scope: Scope | None, what: str) -> Iterator[list[str]]:
        """While the block runs, a cancellation of ``scope`` cancels its task; the block's
        ``CancelledError`` then comes out as ``AbortError``. Yields the reason, once due."""
        watch, task = self._cancels, asyncio.current_task()
        due: list[str] = []
        if watch is None or scope is None or task is None:
            yield due
            return
        if (reason := cancel_reason(watch, scope)) is not None:
            raise AbortError(f"{self.where}, {what}: the request {reason} before it started")
        waker: list[asyncio.Future[None]] = []

        def fired(done: asyncio.Future[None]) -> None:
            if done.cancelled() or not waker:
                return
            if (why := cancel_reason(watch, scope)) is None:
                arm()
            else:
                due.append(why)
                task.cancel()

        def arm() -> None:
            waker[:] = [watch.next_cancel()]
            waker[0].add_done_callback(fired)

        arm()
        try:
            yield due
        except asyncio.CancelledError:
            if due and task.uncancel() == 0:
                raise AbortError(f"{self.where}, {what}: the request {due[0]}") from None
            raise
        except Exception:
            if due:  # it failed as it was cancelled: the cancellation is what happened
                task.uncancel()
                raise AbortError(f"{self.where}, {what}: the request {due[0]}") from None
            raise
        finally:
            ended = waker[0]
            waker.clear()
            ended.cancel()

