"""The worker's envelope, in pure Python: one JSON message in, JSON messages out.

Page -> worker: ``{id, type, request}``, the types and their request models as ``csi.worker.routes``
declares them (and worker/protocol.js, worker/wire_types.d.ts for the page).
Worker -> page: ``{id, type: "progress", progress}``,
``{id, type: "chunk", chunk}`` (one per streamed chunk, pushed without a round trip),
``{id, type: "accepted"}`` (a request is taken, and queued as a task), ``{id, type: "result", result}``
(ends every request; ``null`` after a stream) or
``{id, type: "error", error: {name, message, param}}``. Besides replies, the worker's JS asks the
page to run its tools (``tool_call``, ``tool_cancel``; see worker/page_tools.js).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from json import dumps
from typing import Any

from pydantic import BaseModel

from ..core.scope import Scope
from ..errors import InvalidInputError, error_to_dict
from ..runtime import Runtime
from ..skills.page_tools import PageCall
from ..wire import Strict, parse_request
from .message import decode_message, leading_id
from .prompt_caches import PromptCacheStore
from .replies import BootTimings
from .routes import ROUTES, Call, Route

Post = Callable[[str], None]


class Envelope(Strict):
    """Every page message: its id (echoed on every reply), its type, and its body, which the
    type's route parses."""

    id: str | int | None = None
    type: str
    request: Any = None


class WorkerApp:
    """Routes page messages to the runtime and posts every reply through ``post``."""

    def __init__(self, runtime: Runtime, post: Post, call_page: PageCall | None = None,
                 memory: Callable[[], dict[str, Any]] | None = None,
                 prompt_caches: PromptCacheStore | None = None) -> None:
        self.runtime = runtime
        self._post = post
        self._call_page = call_page
        """Runs the page's tools (the worker's JS asks the page); ``None`` in CPython."""
        self._memory = memory
        """Measures the worker's memory (``memory_stats``); ``None`` in CPython."""
        self._prompt_caches = prompt_caches
        self.boot_timings: BootTimings | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def set_boot_timings(self, raw: str) -> None:
        self.boot_timings = BootTimings.model_validate_json(raw)

    def send(self, message: dict[str, Any]) -> None:
        try:
            text = dumps(message, separators=(",", ":"), allow_nan=False)
        except ValueError as exc:  # NaN or infinity in a result: a bug of ours, reported as one
            text = dumps({"id": message.get("id"), "type": "error", "error": error_to_dict(exc)})
        self._post(text)

    def handle(self, raw: str) -> None:
        """Take one message: a control message acts and answers now; any other runs as a task."""
        started = self._start(raw)
        if started is not None:
            task = asyncio.ensure_future(started)
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def serve(self, raw: str) -> None:
        """Take one message and return once it is answered (every request ends with exactly one
        ``result`` or ``error``)."""
        started = self._start(raw)
        if started is not None:
            await asyncio.ensure_future(started)

    def _start(self, raw: str) -> Coroutine[Any, Any, None] | None:
        """Read a message; answer it now if it is a control message or unreadable, else return the
        work that answers it (in the message's scope: its id, the interrupt epoch now)."""
        request_id = leading_id(raw) if isinstance(raw, str) else None
        try:
            msg = decode_message(raw)
            request_id = msg.get("id")
            if not isinstance(request_id, str | int | None) or isinstance(request_id, bool):
                request_id = None
                raise InvalidInputError("a message's `id` must be a string or an integer", "id")
            envelope = parse_request(Envelope, msg)
            route = ROUTES.get(envelope.type)
            if route is None:
                raise InvalidInputError(f"unknown message type {envelope.type!r}", "type")
            request = route.parse(envelope.type, envelope.request, "request" in envelope.model_fields_set)
            scope = Scope(None if request_id is None else str(request_id), self.runtime.engine.interrupt_epoch,
                          self._progress(request_id))
            call = Call(self.runtime, scope, self.boot_timings, self._call_page, self._memory, self._prompt_caches)
            if route.mode == "control":
                self.send({"id": request_id, "type": "result", "result": _dump(route.handler(call, request))})
                return None
        except Exception as exc:  # noqa: BLE001 - everything must reach the page
            self.send({"id": request_id, "type": "error", "error": error_to_dict(exc)})
            return None
        # the page learns its message was taken (not stuck behind a skill that keeps Python busy)
        self.send({"id": request_id, "type": "accepted"})
        return self._run(route, call, request, request_id)

    async def _run(self, route: Route, call: Call, request: Any, request_id: Any) -> None:
        try:
            result = await route.handler(call, request)
            if route.mode == "stream" and not isinstance(result, BaseModel):
                head = '{"id":' + dumps(request_id) + ',"type":"chunk","chunk":'
                async for chunk in result:
                    body = chunk.model_dump_json() if isinstance(chunk, BaseModel) else \
                        dumps(chunk, separators=(",", ":"), allow_nan=False)
                    self._post(head + body + "}")
                result = None
            self.send({"id": request_id, "type": "result", "result": _dump(result)})
        except BaseException as exc:  # noqa: BLE001 - everything must reach the page
            self.send({"id": request_id, "type": "error", "error": error_to_dict(exc)})
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            if call.scope.request_id is not None:
                self.runtime.engine.forget(call.scope.request_id)

    def _progress(self, request_id: Any) -> Callable[[dict[str, Any]], None]:
        return lambda p: self.send({"id": request_id, "type": "progress", "progress": p})


def _dump(result: Any) -> Any:
    """A handler's reply model as the page receives it (its JSON value)."""
    return result.model_dump(mode="json") if isinstance(result, BaseModel) else result
