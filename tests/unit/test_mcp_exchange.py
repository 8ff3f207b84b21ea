"""How one MCP exchange reads an answer (csi.mcp.exchange): event streams cut anywhere, with
priming events, comments, multi-line data, CRLF, notifications and requests from the server before
the answer; JSON answers and batches; each malformed answer one ``ServerError`` naming the server.
The real server's answers are tests/cpython/test_mcp_client.py's."""

from __future__ import annotations

import json
from typing import Any

import pytest

from csi.errors import InvalidInputError, ServerError, ServerTimeoutError
from csi.mcp.exchange import Failure, read_answer
from tests.support.aio import run_async


class Pieces:
    """An ``HttpResponse`` whose body comes in the pieces given (``None``: a read that times out)."""

    def __init__(self, kind: str, pieces: list[bytes | None]) -> None:
        self.status = 200
        self.headers = {"content-type": kind}
        self._pieces = list(pieces)

    async def read(self, timeout_s: float) -> bytes | None:
        if not self._pieces:
            return None
        piece = self._pieces.pop(0)
        if piece is None:
            raise TimeoutError
        return piece

    def close(self) -> None:
        self._pieces = []


FAILURE = Failure("MCP server 't' at http://127.0.0.1:1/mcp", "calling tool 'add'", 5)


def answer(kind: str, pieces: list[bytes | None], rid: int = 7) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    replies: list[dict[str, Any]] = []
    result = run_async(read_answer(Pieces(kind, pieces), rid, lambda: 5.0, FAILURE, replies.append))
    return result, replies


def sse(*messages: Any) -> bytes:
    return b"".join(b"event: message\ndata: " + json.dumps(m).encode() + b"\n\n" for m in messages)


RESULT = {"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "3"}]}}


def test_an_event_stream_cut_anywhere_gives_the_answer() -> None:
    body = (b"id: 1\ndata:\n\n: a comment\n" + sse({"jsonrpc": "2.0", "method": "notifications/progress",
                                                    "params": {"progress": 1}})
            + sse({"jsonrpc": "2.0", "id": 99, "result": {}}) + sse(RESULT)).replace(b"\n", b"\r\n")
    for cut in range(1, len(body), 7):
        assert answer("text/event-stream", [body[:cut], body[cut:]]) == (RESULT["result"], [])


def test_multi_line_data_is_one_message() -> None:
    text = json.dumps(RESULT, indent=1).encode()
    body = b"".join(b"data: " + line + b"\n" for line in text.split(b"\n")) + b"\n"
    assert answer("text/event-stream; charset=utf-8", [body])[0] == RESULT["result"]


def test_the_servers_requests_on_the_stream_are_answered() -> None:
    body = sse({"jsonrpc": "2.0", "id": "s1", "method": "ping"},
               {"jsonrpc": "2.0", "id": "s2", "method": "sampling/createMessage", "params": {}}, RESULT)
    result, replies = answer("text/event-stream", [body])
    assert result == RESULT["result"]
    assert replies[0] == {"jsonrpc": "2.0", "id": "s1", "result": {}}
    assert replies[1]["id"] == "s2" and replies[1]["error"]["code"] == -32601


def test_json_answers_and_batches() -> None:
    assert answer("application/json", [json.dumps(RESULT).encode()])[0] == RESULT["result"]
    batch = [{"jsonrpc": "2.0", "method": "notifications/message", "params": {}}, RESULT]
    assert answer("application/json", [json.dumps(batch).encode()[:10], json.dumps(batch).encode()[10:]])[0] == \
        RESULT["result"]


@pytest.mark.parametrize(("kind", "body", "says"), [
    ("text/event-stream", sse({"jsonrpc": "2.0", "method": "notifications/progress"}), "ended without an answer"),
    ("text/event-stream", b"data: {nope\n\n", "streamed what is not JSON"),
    ("text/event-stream", sse({"hello": 1}), "not a JSON-RPC message"),
    ("text/event-stream", sse({"jsonrpc": "2.0", "id": 7, "result": 5}), "no `result` object"),
    ("application/json", b"[]", "does not answer request 7"),
    ("application/json", b"<html>", "not JSON"),
    ("text/html", b"<html>", "content type 'text/html'"),
    ("", b"{}", "content type '(none)'"),
    ("application/json", json.dumps({"jsonrpc": "2.0", "id": 7, "error": {"code": -1, "message": "boom"}}).encode(),
     "JSON-RPC error -1: boom"),
])
def test_every_malformed_answer_is_a_server_error_naming_the_server_and_call(kind: str, body: bytes,
                                                                            says: str) -> None:
    with pytest.raises(ServerError) as caught:
        answer(kind, [body])
    assert says in caught.value.message
    assert caught.value.message.startswith("MCP server 't' at http://127.0.0.1:1/mcp, calling tool 'add': ")


def test_invalid_params_blame_the_arguments_and_silence_is_a_timeout() -> None:
    bad = {"jsonrpc": "2.0", "id": 7, "error": {"code": -32602, "message": "a must be an integer"}}
    with pytest.raises(InvalidInputError) as caught:
        answer("application/json", [json.dumps(bad).encode()])
    assert caught.value.param == "arguments"
    with pytest.raises(ServerTimeoutError, match="no answer within 5 s"):
        answer("text/event-stream", [b": ping\n\n", None])
