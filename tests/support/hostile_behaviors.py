"""The hostile server's misbehaviors, by name: each answers one request (chat or text completions,
streamed or not, or embeddings) the way its name says, over the raw connection."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.support.hostile_server import _Conn

WORDS = ["The", " capital", " of", " France", " is", " Paris", "."]
HOLD_S = 60.0
"""How long a misbehavior that holds a connection holds it (the client gives up long before)."""
MB = 1 << 20


@dataclass
class Exchange:
    """One request and its connection."""

    conn: _Conn
    endpoint: str
    body: dict[str, Any]
    path: str

    @property
    def stream(self) -> bool:
        return self.body.get("stream") is True and self.endpoint != "embeddings"

    @property
    def chat(self) -> bool:
        return self.endpoint.startswith("chat")

    def head(self, status: str = "200 OK", kind: str | None = None, extra: str = "",
             length: int | None = None) -> None:
        kind = kind or ("text/event-stream" if self.stream else "application/json")
        from tests.support.hostile_server import CORS  # noqa: PLC0415 - the two modules are one server

        sized = f"Content-Length: {length}\r\n" if length is not None else ""
        self.conn.send(f"HTTP/1.1 {status}\r\n".encode() + CORS
                       + f"Content-Type: {kind}\r\n{sized}{extra}Connection: close\r\n\r\n".encode())

    def chunk(self, delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> dict[str, Any]:
        """One streamed event of the answer."""
        if self.chat:
            choice: dict[str, Any] = {"index": 0, "delta": delta or {}, "finish_reason": finish}
        else:
            choice = {"index": 0, "text": (delta or {}).get("content", ""), "finish_reason": finish}
        return {"id": "x1", "object": "chat.completion.chunk" if self.chat else "text_completion",
                "created": 0, "model": "m", "choices": [choice], **extra}

    def events(self, words: list[str] = WORDS, usage: bool = True, finish: str = "stop") -> list[dict[str, Any]]:
        """The answer's events: the role, each word, the finish, the usage."""
        out = [self.chunk({"role": "assistant", "content": ""})] if self.chat else []
        out += [self.chunk({"content": w}) for w in words]
        out.append(self.chunk({}, finish))
        if usage:
            out.append({"id": "x1", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": [],
                        "usage": {"prompt_tokens": 9, "completion_tokens": len(words), "total_tokens": 9 + len(words)}})
        return out

    def whole(self) -> dict[str, Any]:
        """The answer unstreamed."""
        if self.endpoint == "embeddings":
            given = self.body.get("input")
            inputs = given if isinstance(given, list) else [given]
            return {"object": "list", "model": "m", "usage": {"prompt_tokens": 3, "total_tokens": 3},
                    "data": [{"object": "embedding", "index": i, "embedding": [0.6, 0.8, 0.0]}
                             for i in range(len(inputs))]}
        text = "".join(WORDS)
        choice = ({"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                  if self.chat else {"index": 0, "text": text, "finish_reason": "stop"})
        return {"id": "x1", "object": "chat.completion" if self.chat else "text_completion", "created": 0,
                "model": "m", "choices": [choice], "usage": {"prompt_tokens": 9, "completion_tokens": 7,
                                                            "total_tokens": 16}}

    def body_bytes(self, done: bool = True, usage: bool = True) -> bytes:
        """The polite answer's body, streamed or whole as the request asked."""
        if not self.stream:
            return json.dumps(self.whole()).encode()
        return b"".join(sse(e) for e in self.events(usage=usage)) + (b"data: [DONE]\n\n" if done else b"")

    def answer(self, **head: Any) -> None:
        data = self.body_bytes()
        self.head(length=len(data), **head)
        self.conn.send(data)


def sse(event: Any) -> bytes:
    return b"data: " + json.dumps(event).encode() + b"\n\n"


def ok(x: Exchange) -> None:
    x.answer()


def keepalive(x: Exchange) -> None:
    """Keep-alive comments (or JSON's leading whitespace) forever."""
    x.head()
    while True:
        x.conn.send(b": keep-alive\n\n" if x.stream else b" ")
        x.conn.wait(0.05)


def empty_events(x: Exchange) -> None:
    """Events that carry no token, forever."""
    if not x.stream:
        return keepalive(x)
    x.head()
    while True:
        x.conn.send(sse(x.chunk({})))
        x.conn.wait(0.05)


def trickle(x: Exchange) -> None:
    """A long polite answer, one byte every 50 ms."""
    data = (b"".join(sse(e) for e in x.events(WORDS * 50)) + b"data: [DONE]\n\n" if x.stream
            else json.dumps(x.whole()).encode() + b" " * 4000)
    x.head(length=len(data))
    for i in range(len(data)):
        x.conn.send(data[i:i + 1])
        x.conn.wait(0.05)


def _half(x: Exchange) -> bytes:
    data = x.body_bytes()
    return data[: len(data) // 2 + 3]


def stall_mid_event(x: Exchange) -> None:
    x.head(length=len(x.body_bytes()))
    x.conn.send(_half(x))
    x.conn.wait(HOLD_S)


def cut_mid_event(x: Exchange) -> None:
    x.head()
    x.conn.send(_half(x))


def reset(x: Exchange) -> None:
    x.head()
    x.conn.send(_half(x))
    x.conn.wait(0.05)
    x.conn.reset()


def huge_line(x: Exchange) -> None:
    """A line (an SSE event, or a JSON answer) of 50 MB (80 MB for JSON, past any answer's size)."""
    x.head()
    x.conn.send(b"data: {\"x\": \"" if x.stream else b"{\"data\": \"")
    piece = b"a" * 65536
    for _ in range((50 if x.stream else 80) * MB // len(piece)):
        x.conn.send(piece)
    x.conn.send(b"\"}\n\n")


def huge_piece(x: Exchange) -> None:
    """One token of 3 MB (an embedding of 20 MB of text)."""
    if not x.stream:
        data = json.dumps({"object": "list", "data": [{"index": 0, "embedding": "a" * (20 * MB)}]}).encode()
        x.head(length=len(data))
        return x.conn.send(data)
    events = x.events(["a" * (3 * MB)])
    x.head()
    x.conn.send(b"".join(sse(e) for e in events) + b"data: [DONE]\n\n")


def big_arguments(x: Exchange) -> None:
    """A tool call whose arguments are 10 MB, in 64 KB pieces."""
    if not x.stream or not x.chat:
        return ok(x)
    x.head()
    first = {"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                             "function": {"name": "f", "arguments": "{\"a\": \""}}]}
    x.conn.send(sse(x.chunk(first)))
    piece = sse(x.chunk({"tool_calls": [{"index": 0, "function": {"arguments": "a" * 65536}}]}))
    for _ in range(160):
        x.conn.send(piece)
    x.conn.send(sse(x.chunk({"tool_calls": [{"index": 0, "function": {"arguments": "\"}"}}]}))
                + sse(x.chunk({}, "tool_calls")) + b"data: [DONE]\n\n")


def almost_json(x: Exchange) -> None:
    data = (b'data: {"choices": [{"index": 0, "delta": {"content": "hi"}, "text": "hi"}]\n\n' if x.stream
            else b'{"object": "list", "data": [{"index": 0, "embedding": [0.1, 0.2]}, "choices": [')
    x.head(length=len(data))
    x.conn.send(data)


def endless_tokens(x: Exchange) -> None:
    """Tokens without end (a JSON answer without end)."""
    x.head()
    if not x.stream:
        x.conn.send(b'{"object": "list", "data": [{"index": 0, "embedding": [')
        while True:
            x.conn.send(b"0.1, " * 4096)
    while True:
        x.conn.send(sse(x.chunk({"content": "hi"})) * 64)


def html(x: Exchange) -> None:
    data = b"<!doctype html><html><head><title>Welcome</title></head><body><h1>It works!</h1></body></html>"
    x.head(kind="text/html; charset=utf-8", length=len(data))
    x.conn.send(data)


def late(x: Exchange) -> None:
    """The polite answer, after the client has given up."""
    x.conn.wait(3.0)
    x.answer()


def wrong_type(x: Exchange) -> None:
    x.answer(kind="application/octet-stream")


def dup_data(x: Exchange) -> None:
    if not x.stream:
        return ok(x)
    x.head()
    x.conn.send(b"".join(sse(e).replace(b"\n\n", b"\n") + sse(e) for e in x.events()) + b"data: [DONE]\n\n")


def no_data(x: Exchange) -> None:
    if not x.stream:
        return ok(x)
    x.head()
    x.conn.send(b"".join(json.dumps(e).encode() + b"\n\n" for e in x.events()) + b"[DONE]\n\n")


def done_twice(x: Exchange) -> None:
    data = x.body_bytes() + (b"data: [DONE]\n\n" if x.stream else b"")
    x.head(length=len(data))
    x.conn.send(data)


def done_never_open(x: Exchange) -> None:
    x.head()
    x.conn.send(x.body_bytes(done=False))
    x.conn.wait(HOLD_S)


def done_never_no_usage(x: Exchange) -> None:
    x.head()
    x.conn.send(x.body_bytes(done=False, usage=False))
    x.conn.wait(HOLD_S)


def done_never_close(x: Exchange) -> None:
    x.head()
    x.conn.send(x.body_bytes(done=False))


def no_finish_close(x: Exchange) -> None:
    if not x.stream:
        return cut_mid_event(x)
    x.head()
    x.conn.send(b"".join(sse(x.chunk({"content": w})) for w in WORDS))


def calls_out_of_order(x: Exchange) -> None:
    """Tool-call pieces out of order: arguments before names, the second call before the first."""
    if not x.stream or not x.chat:
        return ok(x)

    def call(index: int, **f: str) -> dict[str, Any]:
        return {"tool_calls": [{"index": index, "id": f"call_{index}", "type": "function", "function": f}]}

    events = [x.chunk(call(1, arguments='{"b": ')), x.chunk(call(0, arguments='{"a"')),
              x.chunk(call(1, name="g")), x.chunk(call(0, name="f")), x.chunk(call(1, arguments="2}")),
              x.chunk(call(0, arguments=": 1}")), x.chunk({}, "tool_calls")]
    x.head()
    x.conn.send(b"".join(sse(e) for e in events) + b"data: [DONE]\n\n")


def negative_usage(x: Exchange) -> None:
    bad = {"prompt_tokens": -5, "completion_tokens": "many", "total_tokens": 1e300}
    if not x.stream:
        data = json.dumps({**x.whole(), "usage": bad}).encode()
        x.head(length=len(data))
        return x.conn.send(data)
    events = x.events(usage=False) + [{"choices": [], "usage": bad}]
    x.head()
    x.conn.send(b"".join(sse(e) for e in events) + b"data: [DONE]\n\n")


def wrong_shapes(x: Exchange) -> None:
    """JSON of the wrong types where OpenAI's shape has fields."""
    x.head()
    if not x.stream:
        return x.conn.send(json.dumps({"data": "x", "choices": {"a": 1}, "usage": [1]}).encode())
    for event in ({"choices": "x"}, {"choices": [5]}, {"choices": [{"delta": 5, "text": 5}]},
                  {"choices": [{"index": "a", "delta": {"content": 7}, "text": 7, "finish_reason": [1]}]}):
        x.conn.send(sse(event))
    x.conn.send(b"data: [DONE]\n\n")


def nan(x: Exchange) -> None:
    data = (b'data: {"choices": [{"index": 0, "delta": {"content": "a"}, "text": "a", "logprobs": {"content": '
            b'[{"token": "a", "logprob": NaN}], "tokens": ["a"], "token_logprobs": [Infinity]}}]}\n\n'
            b"data: [DONE]\n\n" if x.stream else b'{"data": [{"index": 0, "embedding": [NaN, 1e999]}]}')
    x.head(length=len(data))
    x.conn.send(data)


def redirect_loop(x: Exchange) -> None:
    x.head("307 Temporary Redirect", extra=f"Location: {x.path}\r\n", length=0)  # 307: the same POST again


def error_event(x: Exchange) -> None:
    if not x.stream:
        data = b'{"error": {"message": "the model fell over", "type": "server_error"}}'
        x.head("500 Internal Server Error", length=len(data))
        return x.conn.send(data)
    x.head()
    x.conn.send(sse(x.chunk({"content": "The"})) + sse({"error": {"message": "the model fell over", "code": 500}}))
    x.conn.wait(HOLD_S)


def bad_status_line(x: Exchange) -> None:
    x.conn.send(b"HTTP/1.1 banana\r\n\r\n")


def bad_chunked(x: Exchange) -> None:
    x.head(extra="Transfer-Encoding: chunked\r\n")
    x.conn.send(b"zz\r\n" + x.body_bytes() + b"\r\n0\r\n\r\n")


def huge_chunk(x: Exchange) -> None:
    """A chunk said to be 4 GB, its data without end."""
    x.head(extra="Transfer-Encoding: chunked\r\n")
    x.conn.send(b"FFFFFFFF\r\n")
    if not x.stream:
        x.conn.send(b'{"object": "list", "data": [{"index": 0, "embedding": [')
    piece = sse(x.chunk({"content": "hi"})) * 64 if x.stream else b"0.1, " * 4096
    while True:
        x.conn.send(piece)


def many_headers(x: Exchange) -> None:
    x.conn.send(b"HTTP/1.1 200 OK\r\n")
    n = 0
    while True:
        x.conn.send(b"".join(f"X-Header-{n + i}: {'v' * 100}\r\n".encode() for i in range(100)))
        n += 100


def status_500_html(x: Exchange) -> None:
    data = b"<html><body>" + b"<p>Internal error</p>" * 50000 + b"</body></html>"
    x.head("500 Internal Server Error", kind="text/html", length=len(data))
    x.conn.send(data)


def nothing(x: Exchange) -> None:
    """The connection closed without an answer."""


def slow_headers(x: Exchange) -> None:
    x.conn.send(b"HTTP/1.1 200 OK\r\n")
    while True:
        x.conn.send(b"X")
        x.conn.wait(0.1)


def json_for_stream(x: Exchange) -> None:
    """The unstreamed answer to a request for a stream."""
    data = json.dumps(x.whole()).encode()
    x.head(kind="application/json", length=len(data))
    x.conn.send(data)


def deep_nesting(x: Exchange) -> None:
    data = b"[" * 200000 + b"]" * 200000
    data = b"data: " + data + b"\n\n" if x.stream else data
    x.head(length=len(data))
    x.conn.send(data)


def gzip_lie(x: Exchange) -> None:
    x.answer(extra="Content-Encoding: gzip\r\n")


def short_body(x: Exchange) -> None:
    """A body shorter than its Content-Length, held open."""
    data = x.body_bytes()
    x.head(length=len(data) + 100)
    x.conn.send(data)
    x.conn.wait(HOLD_S)


def binary(x: Exchange) -> None:
    data = (b"data: \xff\xfe\x00garbage\x80\n\n" if x.stream else b"\xff\xfe\x00garbage\x80")
    x.head(length=len(data))
    x.conn.send(data)


BEHAVIORS: dict[str, Callable[[Exchange], None]] = {f.__name__: f for f in (
    ok, keepalive, empty_events, trickle, stall_mid_event, cut_mid_event, reset, huge_line, huge_piece,
    big_arguments, almost_json, endless_tokens, html, late, wrong_type, dup_data, no_data, done_twice,
    done_never_open, done_never_no_usage, done_never_close, no_finish_close, calls_out_of_order, negative_usage,
    wrong_shapes, nan, redirect_loop, error_event, bad_status_line, bad_chunked, huge_chunk, many_headers,
    status_500_html, nothing, slow_headers, json_for_stream, deep_nesting, gzip_lie, short_body, binary)}
"""Every misbehavior (and ``ok``, the polite answer), by name."""
FUZZ = "fuzz"
"""The model the fuzzer asks for (tests/support/hostile_fuzz.py), not one of the matrix's misbehaviors."""
