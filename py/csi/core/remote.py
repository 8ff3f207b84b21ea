"""Models on an OpenAI-compatible server (llama.cpp, vLLM, ...): which models live where (``Remotes``),
the HTTP port the engine reaches them through (``HttpClient``, implemented over fetch in the worker
and over asyncio in CPython), and ``RemoteCall``: one request to a server, JSON or server-sent events,
with its failures mapped to csi-web's errors and its cancellation reaching the server."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from ..errors import (
    AuthenticationError,
    ContextWindowExceededError,
    CsiError,
    InvalidInputError,
    ModelNotSupportedError,
    NotSupportedError,
    RateLimitError,
    ServerError,
    ServerTimeoutError,
    ServerUnavailableError,
)
from .backend import ModelInfo

Policy = Literal["remote", "prefer-local"]
"""``remote``: the server always serves the model; ``prefer-local``: the model is loaded in the
browser, and the server serves it only when that load fails (no WebGPU, no storage, no network)."""

MAX_ERROR_TEXT = 2000


class HttpResponse(Protocol):
    """An HTTP response whose body arrives in pieces."""

    status: int

    async def read(self, timeout_s: float) -> bytes | None:
        """The next piece of the body; ``None`` at its end; ``TimeoutError`` when none comes
        within ``timeout_s``. Once ``close()`` is called, a pending read ends (any way it can)."""
        ...

    def close(self) -> None:
        """Stop reading and drop the connection (the server sees the request cancelled)."""
        ...


class HttpClient(Protocol):
    async def open(self, method: str, url: str, headers: dict[str, str], body: bytes | None) -> HttpResponse:
        """Send a request and return once the status and headers have come; ``ServerUnavailableError``
        when the server cannot be reached."""
        ...


@dataclass(frozen=True)
class Endpoint:
    """One OpenAI-compatible server: its base URL (ending in ``/v1`` or what stands for it), key, timeout."""

    base_url: str
    api_key: str | None = None
    timeout_s: float = 120.0

    def url(self, path: str) -> str:
        return self.base_url.rstrip("/") + "/" + path

    def headers(self) -> dict[str, str]:
        out = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if self.api_key:
            out["Authorization"] = f"Bearer {self.api_key}"
        return out


@dataclass(frozen=True)
class RemoteModel:
    """A model id csi-web answers to, the endpoint serving it and its name there."""

    model_id: str
    endpoint: Endpoint
    server_model: str
    policy: Policy = "remote"

    def info(self, fallback: str | None) -> ModelInfo:
        """The engine's entry for this model, served by its server (``fallback``: why not here)."""
        return ModelInfo(self.model_id, "chat", 0, remote=self.endpoint.base_url, fallback=fallback)


class Remotes:
    """The remote models the page configured (``set_remotes``), by csi-web model id."""

    def __init__(self, reachable: bool = True) -> None:
        self._models: dict[str, RemoteModel] = {}
        self._reachable = reachable

    def set(self, models: list[RemoteModel]) -> None:
        """Replace the configuration (a loaded model whose server changes must be loaded again)."""
        if models and not self._reachable:
            raise NotSupportedError("this engine has no HTTP client to reach servers with", "remotes")
        self._models = {m.model_id: m for m in models}

    def get(self, model_id: str) -> RemoteModel | None:
        return self._models.get(model_id)

    def all(self) -> list[RemoteModel]:
        return list(self._models.values())


_BODY_FIELD = re.compile(r"'loc': \('body', ((?:'[^']*'|\d+)(?:, (?:'[^']*'|\d+))*)\)")
"""FastAPI's validation error, as llama-cpp-python reports it: a 500 whose message names the field."""
_CONTEXT = re.compile(r"context (window|length)|maximum context|too many tokens|exceeds? the|n_ctx", re.I)


def _server_message(raw: bytes) -> tuple[str, str | None]:
    """The message (and ``param``, if it names one) of a server's error body, OpenAI's shape or not."""
    text = raw.decode("utf-8", "replace")
    try:
        body = json.loads(text)
    except ValueError:
        return text.strip()[:MAX_ERROR_TEXT] or "(no message)", None
    err = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(err, dict):
        message = err.get("message") or err.get("detail") or json.dumps(err)
        param = err.get("param") if isinstance(err.get("param"), str) else None
        if isinstance(message, list):  # FastAPI's validation errors
            parts = [m for m in message if isinstance(m, dict)]
            message = "; ".join(str(m.get("msg", m)) for m in parts) or json.dumps(message)
            locs: list[list[Any]] = [m["loc"] for m in parts if isinstance(m.get("loc"), list)]
            if param is None and locs and len(locs[0]) > 1:
                param = _field_path(locs[0][1:])
        return str(message)[:MAX_ERROR_TEXT], param
    return str(err)[:MAX_ERROR_TEXT], None


def http_error(status: int, raw: bytes, where: str) -> CsiError:
    """A server's HTTP error as csi-web's error of that kind, with the server's message."""
    message, param = _server_message(raw)
    said = f"{where} answered {status}: {message}"
    if status in (401, 403):
        return AuthenticationError(said, "api_key")
    if status == 429:
        return RateLimitError(said)
    if status == 404:
        return ModelNotSupportedError(said, param or "model")
    field = _BODY_FIELD.search(message)
    if field is not None and param is None:
        param = _field_path([p.strip().strip("'") for p in field.group(1).split(",")])
    if 400 <= status < 500 or (field is not None and "validation error" in message):
        if status == 413 or _CONTEXT.search(message):
            return ContextWindowExceededError(said, param or "messages")
        return InvalidInputError(said, param)
    return ServerError(said)


def _field_path(loc: list[Any]) -> str:
    """``["messages", 0, "content"]`` -> ``messages[0].content``."""
    path = ""
    for part in (str(p) for p in loc):
        path += f"[{part}]" if part.isdigit() else ("." if path else "") + part
    return path


class RemoteCall:
    """One request to a remote model's server. ``cancel`` is a future resolved when the request
    is cancelled (``Engine.next_cancel``); the connection is then dropped and ``Aborted`` raised."""

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


def check_remote_url(url: str, param: str) -> str:
    """A base URL of an OpenAI-compatible server (http or https), without its trailing slash."""
    if not (isinstance(url, str) and len(url) <= 2000 and re.fullmatch(r"https?://[^\s/?#]+(/[^\s?#]*)?", url)):
        raise InvalidInputError("a server's `baseURL` must be an http or https URL, such as "
                                "http://127.0.0.1:8080/v1 (at most 2,000 characters)", param)
    return url.rstrip("/")


def unreachable(where: str, cause: str) -> ServerUnavailableError:
    return ServerUnavailableError(f"{where} could not be reached: {cause}")
