"""One request to a server, JSON or server-sent events, with its failures mapped to csi-web's errors,
its timeout, and its cancellation (``interrupt``/``abort``) reaching the server as a dropped connection."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from ..errors import CsiError, ServerError, ServerTimeoutError
from .endpoints import Endpoint
from .errors import http_error
from .http import HttpClient, HttpResponse


class ServerCall:
    """One request to a remote model's server. ``cancel`` is a future resolved when the request
    is cancelled (``Scheduler.next_cancel``); the connection is then dropped and ``Aborted`` raised."""

    def __init__(self, http: HttpClient, endpoint: Endpoint, cancelled: Callable[[], bool],
                 next_cancel: Callable[[], asyncio.Future[None]]) -> None:
        self._http = http
        self._endpoint = endpoint
        self._cancelled = cancelled
        self._next_cancel = next_cancel

    def cancelled(self) -> bool:
        """Whether the request was cancelled."""
        return self._cancelled()

    @property
    def where(self) -> str:
        return f"the server at {self._endpoint.base_url}"

    async def _timed(self, awaitable: Any) -> Any:
        """``awaitable``'s result, unless the request is cancelled (``Aborted``) or the endpoint's
        timeout passes first (``ServerTimeoutError``); either way the connection is dropped."""
        if self._cancelled():
            awaitable.close()
            raise Aborted
        task = asyncio.ensure_future(awaitable)
        waker = self._next_cancel()
        try:
            done, _ = await asyncio.wait((task, waker), timeout=self._endpoint.timeout_s,
                                         return_when=asyncio.FIRST_COMPLETED)
        finally:
            waker.cancel()
        if task in done:
            return task.result()
        task.cancel()
        if waker in done:
            raise Aborted
        raise ServerTimeoutError(f"{self.where} sent nothing for {self._endpoint.timeout_s:g} s")

    async def _open(self, path: str, body: dict[str, Any]) -> HttpResponse:
        if self._cancelled():
            raise Aborted
        data = json.dumps(body).encode()
        response: HttpResponse = await self._timed(
            self._http.open("POST", self._endpoint.url(path), self._endpoint.headers(), data))
        if response.status >= 300:
            try:
                raw = await self._rest(response)
            finally:
                response.close()
            raise http_error(response.status, raw, self.where)
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
        """The next piece of the body: ``Aborted`` once cancelled, ``ServerTimeoutError`` after
        the endpoint's timeout (the connection dropped either way)."""
        if self._cancelled():
            response.close()
            raise Aborted
        try:
            piece = await response.read(self._endpoint.timeout_s)
        except TimeoutError:
            response.close()
            raise ServerTimeoutError(f"{self.where} sent nothing for {self._endpoint.timeout_s:g} s") from None
        except CsiError:
            if self._cancelled():
                raise Aborted from None
            raise
        if self._cancelled():
            response.close()
            raise Aborted
        return piece

    async def _rest(self, response: HttpResponse, limit: int = 64 << 20) -> bytes:
        parts: list[bytes] = []
        size = 0
        unwatch = self._watch(response)
        try:
            while (piece := await self._read(response)) is not None:
                parts.append(piece)
                size += len(piece)
                if size > limit:
                    raise ServerError(f"{self.where} sent more than {limit >> 20} MiB")
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
        try:
            out = json.loads(raw)
        except ValueError:
            raise ServerError(f"{self.where} answered with what is not JSON: "
                              f"{raw[:200].decode('utf-8', 'replace')!r}") from None
        if not isinstance(out, dict):
            raise ServerError(f"{self.where} answered with JSON that is not an object")
        return out

    async def events(self, path: str, body: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        """POST ``body`` (``stream: true``) and yield each server-sent event's JSON object until
        ``[DONE]``; an ``error`` event is raised as the error it names."""
        response = await self._open(path, body)
        buffer = b""
        sent = 0
        unwatch = self._watch(response)
        try:
            while (piece := await self._read(response)) is not None:
                buffer += piece
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    line = line.rstrip(b"\r")
                    if not line.startswith(b"data:"):
                        continue
                    data = line[5:].strip()
                    if data == b"[DONE]":
                        return
                    try:
                        event = json.loads(data)
                    except ValueError:
                        raise ServerError(f"{self.where} streamed what is not JSON: "
                                          f"{data[:200].decode('utf-8', 'replace')!r}") from None
                    if isinstance(event, dict) and "error" in event and "choices" not in event:
                        raise http_error(int(event.get("code") or 500) if str(event.get("code", "")).isdigit()
                                         else 500, data, self.where)
                    if isinstance(event, dict):
                        sent += 1
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


class Aborted(Exception):  # noqa: N818 - a signal, not an error the caller sees
    """The request was cancelled while it waited for its server."""
