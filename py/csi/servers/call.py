"""One request to a server, JSON or server-sent events, with its failures mapped to csi-web's errors,
its timeout, and its cancellation (``interrupt``/``abort``) reaching the server as a dropped connection."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncGenerator, Callable
from typing import Any

from ..core.json_depth import loads as json_loads
from ..errors import CsiError, ServerError, ServerTimeoutError
from .endpoints import Endpoint
from .errors import http_error
from .http import HttpClient, HttpResponse
from .sse import EventTooLarge, SseParser

MAX_JSON_BODY = 64 << 20
"""The most of a JSON answer read (embeddings of many long inputs)."""
MAX_ERROR_BODY = 64 << 10
"""The most of an error's body read: its message is at the beginning."""
MAX_EVENT = 4 << 20
"""The longest event of a stream: far beyond any one event of an answer (a token and its log-probabilities)."""


class ServerCall:
    """One request to a remote model's server. ``cancel`` is a future resolved when the request
    is cancelled (``Scheduler.next_cancel``); the connection is then dropped and ``Aborted`` raised.

    Two clocks bound it: the endpoint's ``timeout_s`` since the last progress (the answer's headers,
    a whole JSON answer, a streamed event that carries tokens: keep-alives and trickled bytes are not
    progress), and its ``deadline_s`` since the request began."""

    def __init__(self, http: HttpClient, endpoint: Endpoint, cancelled: Callable[[], bool],
                 next_cancel: Callable[[], asyncio.Future[None]]) -> None:
        self._http = http
        self._endpoint = endpoint
        self._cancelled = cancelled
        self._next_cancel = next_cancel
        self._began: float | None = None
        self._progress_at = 0.0
        self._answered = False

    def cancelled(self) -> bool:
        """Whether the request was cancelled."""
        return self._cancelled()

    @property
    def where(self) -> str:
        return f"the server at {self._endpoint.base_url}"

    def progressed(self, grace_s: float | None = None) -> None:
        """The server sent something the request uses: its ``timeout_s`` starts again (or, with
        ``grace_s``, only that long is left: the answer is whole, the rest is its epilogue)."""
        now = time.monotonic()
        self._progress_at = now if grace_s is None else now - self._endpoint.timeout_s + grace_s

    def _left(self) -> tuple[float, str]:
        """Seconds left before the request times out, and what the timeout will say."""
        now = time.monotonic()
        if self._began is None:
            self._began = self._progress_at = now
        e = self._endpoint
        idle = self._progress_at + e.timeout_s - now
        total = self._began + e.deadline_s - now
        if total < idle:
            return total, f"{self.where} did not finish its answer within {e.deadline_s:g} s"
        said = "no tokens" if self._answered else "nothing"
        return idle, f"{self.where} sent {said} for {e.timeout_s:g} s"

    async def _timed(self, awaitable: Any) -> Any:
        """``awaitable``'s result, unless the request is cancelled (``Aborted``) or its time passes
        first (``ServerTimeoutError``); either way the connection is dropped."""
        if self._cancelled():
            awaitable.close()
            raise Aborted
        left, said = self._left()
        task = asyncio.ensure_future(awaitable)
        waker = self._next_cancel()
        try:
            done, _ = await asyncio.wait((task, waker), timeout=max(left, 0.0), return_when=asyncio.FIRST_COMPLETED)
        finally:
            waker.cancel()
        if task in done:
            return task.result()
        task.cancel()
        if waker in done:
            raise Aborted
        raise ServerTimeoutError(said)

    async def _open(self, path: str, body: dict[str, Any]) -> HttpResponse:
        if self._cancelled():
            raise Aborted
        data = json.dumps(body).encode()
        response: HttpResponse = await self._timed(
            self._http.open("POST", self._endpoint.url(path), self._endpoint.headers(), data))
        self.progressed()
        if response.status >= 300:
            try:
                raw = await self._rest(response, MAX_ERROR_BODY, cut=True)  # its message comes first
            finally:
                response.close()
            raise http_error(response.status, raw, self.where)
        kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind in ("text/html", "application/xhtml+xml"):
            response.close()
            raise ServerError(f"{self.where} answered with a web page ({kind}), not OpenAI's API: is "
                              "its base URL the API's (such as http://host:port/v1)?")
        return response

    def _watch(self, response: HttpResponse) -> Callable[[], None]:
        """Close ``response`` as soon as this request is cancelled (one waiter per response, not
        one per read: a pending read then ends at once); other requests' cancellations re-arm it.
        Returns what stops the watch."""
        waker: list[asyncio.Future[None]] = []

        def fired(done: asyncio.Future[None]) -> None:
            if done.cancelled():
                return
            if self._cancelled():
                response.close()
            else:
                arm()

        def arm() -> None:
            waker[:] = [self._next_cancel()]
            waker[0].add_done_callback(fired)

        def stop() -> None:
            waker[0].cancel()

        arm()
        return stop

    async def _read(self, response: HttpResponse) -> bytes | None:
        """The next piece of the body: ``Aborted`` once cancelled, ``ServerTimeoutError`` once its
        time is up (the connection dropped either way)."""
        if self._cancelled():
            response.close()
            raise Aborted
        left, said = self._left()
        try:
            if left <= 0:
                raise TimeoutError
            piece = await response.read(left)
        except TimeoutError:
            response.close()
            raise ServerTimeoutError(said) from None
        except CsiError:
            if self._cancelled():
                raise Aborted from None
            raise
        if self._cancelled():
            response.close()
            raise Aborted
        return piece

    async def _rest(self, response: HttpResponse, limit: int = MAX_JSON_BODY, cut: bool = False) -> bytes:
        """The rest of the body: past ``limit`` bytes its beginning (``cut``), or a ``ServerError``."""
        parts: list[bytes] = []
        size = 0
        unwatch = self._watch(response)
        try:
            while (piece := await self._read(response)) is not None:
                parts.append(piece)
                size += len(piece)
                if size > limit:
                    if cut:
                        break
                    raise ServerError(f"{self.where} answered with more than {limit >> 20} MiB")
        finally:
            unwatch()
        return b"".join(parts)

    async def json(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST ``body`` to ``path`` and return the JSON object answered."""
        response = await self._open(path, body)
        try:
            raw = await self._rest(response)
        finally:
            response.close()
        out = self.parsed(raw, "answered with")
        if not isinstance(out, dict):
            raise ServerError(f"{self.where} answered with JSON that is not an object")
        return out

    async def events(self, path: str, body: dict[str, Any]) -> AsyncGenerator[dict[str, Any], None]:
        """POST ``body`` (``stream: true``) and yield each server-sent event's JSON object until
        ``[DONE]``; an ``error`` event is raised as the error it names. A body that ends before
        ``[DONE]`` is a ``ServerError`` once it has sent events."""
        response = await self._open(path, body)
        parser = SseParser(MAX_EVENT)
        sent = 0
        unwatch = self._watch(response)
        try:
            while (piece := await self._read(response)) is not None:
                try:
                    events = parser.feed(piece)
                except EventTooLarge:
                    raise ServerError(f"{self.where} streamed an event of more than {MAX_EVENT >> 20} MiB") from None
                for kind, data in events:
                    if kind == "error":  # llama.cpp's `error:` line
                        raise http_error(500, data, self.where)
                    if data.strip() == b"[DONE]":
                        return
                    event = self.parsed(data, "streamed")
                    if isinstance(event, dict) and "error" in event and "choices" not in event:
                        raise http_error(int(event.get("code") or 500) if str(event.get("code", "")).isdigit()
                                         else 500, data, self.where)
                    if isinstance(event, dict):
                        sent += 1
                        self._answered = True
                        yield event
        finally:
            unwatch()
            response.close()
        if sent:
            raise ServerError(f"{self.where} broke its stream off before its end")
        # llama-cpp-python answers a refused stream with 200 and nothing: ask again, unstreamed, for
        # its reason (it refuses at once, before generating)
        await self.json(path, {k: v for k, v in body.items() if k not in ("stream", "stream_options")})
        raise ServerError(f"{self.where} sent an empty stream")

    def parsed(self, raw: bytes, how: str) -> Any:
        """JSON as the server sent it, refused (``ServerError``) when it is not JSON, or holds numbers
        beyond a float's range (``NaN``, ``1e999``)."""
        try:
            return json_loads(raw, parse_constant=_not_a_number, parse_float=_finite)
        except ValueError:
            pass
        raise ServerError(f"{self.where} {how} what is not JSON: {raw[:200].decode('utf-8', 'replace')!r}")


def _not_a_number(word: str) -> float:
    raise ValueError(word)


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(text)
    return value


class Aborted(Exception):  # noqa: N818 - a signal, not an error the caller sees
    """The request was cancelled while it waited for its server."""
