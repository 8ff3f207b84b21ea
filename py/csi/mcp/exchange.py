"""One JSON-RPC exchange of MCP's Streamable HTTP transport: a POST answered with JSON or with a
server-sent event stream, read until the answer to its id comes (or the deadline passes), its
failures turned into csi-web's errors. Requests the server sends on the stream are answered:
``ping`` with ``{}``, any other with "method not found" (this client offers no capabilities)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..core.json_depth import loads as json_loads
from ..errors import (
    AuthenticationError,
    CsiError,
    InvalidInputError,
    RateLimitError,
    ServerError,
    ServerTimeoutError,
)
from ..servers.http import HttpResponse
from ..servers.sse import SseParser

MAX_BODY = 32 << 20
INVALID_PARAMS = -32602
JsonRpcReply = Callable[[dict[str, Any]], None]
"""Sends a JSON-RPC message back to the server (an answer to its request), in the background."""


class SessionExpired(Exception):  # noqa: N818 - a signal: start a new session and ask again
    """The server answered 404 to a request carrying a session id: that session is gone."""


class Failure:
    """Makes the errors of one exchange, each naming the server and what was asked of it."""

    def __init__(self, where: str, what: str, timeout_s: float) -> None:
        self.where, self.what, self.timeout_s = where, what, timeout_s

    def say(self, detail: str) -> str:
        return f"{self.where}, {self.what}: {detail}"

    def server(self, detail: str) -> ServerError:
        return ServerError(self.say(detail))

    def timeout(self) -> ServerTimeoutError:
        return ServerTimeoutError(self.say(f"no answer within {self.timeout_s:g} s"))

    def http(self, status: int, raw: bytes) -> CsiError:
        text = raw[:500].decode("utf-8", "replace").strip() or "(no message)"
        said = self.say(f"it answered HTTP {status}: {text}")
        if status in (401, 403):
            return AuthenticationError(said, "headers")
        if status == 429:
            return RateLimitError(said)
        return ServerError(said)

    def rpc(self, error: Any) -> CsiError:
        """A JSON-RPC error object as an error: invalid params blame the arguments."""
        if not isinstance(error, dict):
            return self.server(f"it answered a JSON-RPC error that is not an object: {str(error)[:200]}")
        code, message = error.get("code"), str(error.get("message") or "(no message)")[:2000]
        said = self.say(f"it answered JSON-RPC error {code}: {message}")
        return InvalidInputError(said, "arguments") if code == INVALID_PARAMS else ServerError(said)


def answer_of(message: Any, rid: int, failure: Failure) -> dict[str, Any] | None:
    """The ``result`` of ``message`` if it answers request ``rid`` (raised if it is an error);
    ``None`` for a message that is something else (a notification, a request, another id)."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or not (
            "method" in message or "result" in message or "error" in message):
        raise failure.server(f"it sent what is not a JSON-RPC message: {json.dumps(message)[:200]}")
    if "method" in message or message.get("id") != rid:
        return None
    if "error" in message:
        raise failure.rpc(message["error"])
    result = message.get("result")
    if not isinstance(result, dict):
        raise failure.server(f"its answer has no `result` object: {json.dumps(message)[:200]}")
    return result


def server_request(message: Any, reply: JsonRpcReply) -> None:
    """Answer a request the server sent on the stream (``ping``; anything else is refused)."""
    if not isinstance(message, dict) or not isinstance(message.get("method"), str) or "id" not in message:
        return
    if message["method"] == "ping":
        reply({"jsonrpc": "2.0", "id": message["id"], "result": {}})
    else:
        reply({"jsonrpc": "2.0", "id": message["id"],
               "error": {"code": -32601, "message": f"csi-web does not serve {message['method']!r}"}})


async def read_all(response: HttpResponse, left: Callable[[], float], failure: Failure) -> bytes:
    """The whole body, within the deadline (``left()``: seconds still left)."""
    parts: list[bytes] = []
    size = 0
    while (piece := await read_piece(response, left, failure)) is not None:
        parts.append(piece)
        size += len(piece)
        if size > MAX_BODY:
            raise failure.server(f"it sent more than {MAX_BODY >> 20} MiB")
    return b"".join(parts)


async def read_piece(response: HttpResponse, left: Callable[[], float], failure: Failure) -> bytes | None:
    remaining = left()
    if remaining <= 0:
        raise failure.timeout()
    try:
        return await response.read(remaining)
    except TimeoutError:
        raise failure.timeout() from None


async def read_answer(response: HttpResponse, rid: int, left: Callable[[], float], failure: Failure,
                      reply: JsonRpcReply) -> dict[str, Any]:
    """The result answering ``rid`` in ``response`` (JSON or an event stream)."""
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind == "application/json":
        raw = await read_all(response, left, failure)
        try:
            body = json_loads(raw)
        except ValueError:
            raise failure.server(f"it answered what is not JSON: {raw[:200].decode('utf-8', 'replace')!r}") from None
        for message in body if isinstance(body, list) else [body]:
            if (result := answer_of(message, rid, failure)) is not None:
                return result
            server_request(message, reply)
        raise failure.server(f"its JSON answer does not answer request {rid}: {raw[:200].decode('utf-8', 'replace')}")
    if kind != "text/event-stream":
        raise failure.server(f"it answered with content type {kind or '(none)'!r}, not JSON or an event stream")
    return await _read_events(response, rid, left, failure, reply)


async def _read_events(response: HttpResponse, rid: int, left: Callable[[], float], failure: Failure,
                       reply: JsonRpcReply) -> dict[str, Any]:
    parser = SseParser(MAX_BODY)
    size = 0
    while (piece := await read_piece(response, left, failure)) is not None:
        size += len(piece)
        if size > MAX_BODY:
            raise failure.server(f"it streamed more than {MAX_BODY >> 20} MiB without answering")
        for kind, text in parser.feed(piece):
            if kind != "data" or not text.strip():  # a priming event (an id for resuming, no message)
                continue
            try:
                message = json_loads(text)
            except ValueError:
                raise failure.server(f"it streamed what is not JSON: "
                                     f"{text[:200].decode('utf-8', 'replace')!r}") from None
            if (result := answer_of(message, rid, failure)) is not None:
                return result
            server_request(message, reply)
    raise failure.server("its event stream ended without an answer")
