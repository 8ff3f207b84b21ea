"""Which page message a piece of engine work serves, passed along with the work, and how work
waiting on something outside (a page tool, an MCP server) learns that its message was cancelled."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class Scope:
    """The message a generation, embedding or insides call serves.

    ``abort(request_id)`` cancels every generation started under it (batch items and a skill's CSI
    calls included), and any ``interrupt()`` after ``epoch`` (the engine's interrupt epoch when the
    message arrived) ends them, even while they wait for their model. A call that must wait for a
    model another request holds reports ``{stage: "queued", waiting_for}`` to ``progress``.
    Without a scope, work gets an id of its own and the epoch at which it starts.
    """

    request_id: str | None = None
    epoch: int | None = None
    progress: Callable[[dict[str, Any]], None] | None = None


class CancelWatch(Protocol):
    """What tells a call that its scope is cancelled (the engine)."""

    @property
    def interrupt_epoch(self) -> int: ...

    def is_aborted(self, request_id: str) -> bool: ...

    def next_cancel(self) -> asyncio.Future[None]: ...


def cancel_reason(watch: CancelWatch, scope: Scope) -> str | None:
    """Why work serving ``scope`` must stop (its message was cancelled, or ``interruptGenerate()``
    came after it), or ``None``."""
    if scope.request_id is not None and watch.is_aborted(scope.request_id):
        return "was cancelled"
    if scope.epoch is not None and watch.interrupt_epoch != scope.epoch:
        return "was stopped by interruptGenerate()"
    return None
