"""``HttpClient`` in the worker, over worker/http_fetch.js: the browser's fetch, its body read as a
stream, an ``AbortController`` per request (closing the response aborts the fetch, which drops the
connection to the server)."""

from __future__ import annotations

from json import dumps, loads
from typing import Any

from pyodide.ffi import JsException

from ...errors import ServerUnavailableError
from ...servers.http import unreachable


class _FetchResponse:
    def __init__(self, response: Any, where: str) -> None:
        self.status = int(response.status)
        self.headers: dict[str, str] = loads(response.headers)
        self._response: Any = response
        self._where = where

    async def read(self, timeout_s: float) -> bytes | None:
        if self._response is None:
            return None
        try:
            piece = await self._response.read(timeout_s * 1000)
        except JsException as exc:
            if exc.name == "TimeoutError":
                raise TimeoutError from None
            raise ServerUnavailableError(f"{self._where} broke the answer off ({exc.message})") from None
        if piece is None:
            self._response = None
            return None
        data: bytes = piece.to_bytes()
        return data

    def close(self) -> None:
        if self._response is not None:
            self._response.close()
            self._response = None


class FetchHttp:
    """An ``HttpClient`` on the worker's fetch (``host.httpStart``)."""

    def __init__(self, host: Any) -> None:
        self._host = host

    async def open(self, method: str, url: str, headers: dict[str, str], body: bytes | None) -> _FetchResponse:
        where = url.split("?")[0]
        pending = self._host.httpStart(method, url, dumps(headers), None if body is None else body.decode())
        try:
            response = await pending.response
        except JsException as exc:  # refused, offline, DNS, CORS: fetch says only "Failed to fetch"
            raise unreachable(where, exc.message) from None
        except BaseException:  # cancelled or timed out while waiting for the answer: drop the request
            pending.abort()
            raise
        return _FetchResponse(response, where)
