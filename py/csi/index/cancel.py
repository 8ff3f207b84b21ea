"""Stopping an index write: a cancel of its message (the page's AbortSignal) or
``interruptGenerate()`` ends it at its next step — between two chunks of a text, two embedding
calls, two documents, two commits — however large its documents. What a stopped write had cut and
embedded but not committed is dropped, so every document is either committed whole (its chunks,
embeddings and lexical terms in every index) or not written at all."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import AbortError

if TYPE_CHECKING:
    from ..core.engine import Engine
    from ..core.scope import Scope

YIELD_S = 0.1
"""A write that has kept Python busy this long lets other work in (the worker's messages: a cancel)."""
TURN_S = 0.003
"""How long it lets them in. Not ``sleep(0)``: Pyodide runs that through a MessageChannel, whose
messages Chromium serves before the page's (a cancel waited behind minutes of chunking); a delay
over 2 ms is a setTimeout, after which the page's messages are served."""
_RETURNING: set[asyncio.Future[Any]] = set()  # write locks that came after their writer stopped, being handed back


def stop_reason(engine: Engine, scope: Scope | None) -> str | None:
    """Why the write serving ``scope`` must stop, or ``None``."""
    if scope is None:
        return None
    if scope.request_id is not None and engine.is_aborted(scope.request_id):
        return "was cancelled"
    if scope.epoch is not None and engine.interrupt_epoch != scope.epoch:
        return "was stopped by interruptGenerate()"
    return None


@asynccontextmanager
async def writing(lock: AbstractAsyncContextManager[None], engine: Engine, scope: Scope | None,
                  what: str) -> AsyncIterator[None]:
    """Hold the store's write ``lock``, taken in turn; a stop while another write holds it ends the
    wait (``AbortError``, nothing written), and the lock is handed back at once if it comes later."""
    entering = asyncio.ensure_future(lock.__aenter__())
    while not entering.done():
        reason = stop_reason(engine, scope)
        if reason is not None:
            entering.add_done_callback(lambda t: _hand_back(lock, t))
            raise AbortError(f"{what} {reason} while it waited for another write: nothing was written")
        waker = engine.next_cancel()
        try:
            await asyncio.wait((entering, waker), return_when=asyncio.FIRST_COMPLETED)
        finally:
            waker.cancel()
    entering.result()
    try:
        yield
    finally:
        await lock.__aexit__(None, None, None)


def _hand_back(lock: AbstractAsyncContextManager[None], entered: asyncio.Future[Any]) -> None:
    if not entered.cancelled() and entered.exception() is None:
        task = asyncio.ensure_future(lock.__aexit__(None, None, None))
        _RETURNING.add(task)
        task.add_done_callback(_RETURNING.discard)


@dataclass
class WriteGuard:
    """What an index write has committed so far, and the check it makes before each step."""

    engine: Engine
    scope: Scope | None
    what: str
    total: int
    committed: list[str] = field(default_factory=list)
    chunks: int = 0
    _since: float = field(default_factory=time.monotonic)

    def stop_reason(self) -> str | None:
        return stop_reason(self.engine, self.scope)

    def check(self) -> None:
        """Raise ``AbortError`` if the write must stop; what is not committed yet is dropped."""
        reason = self.stop_reason()
        if reason is None:
            return
        n = len(self.committed)
        raise AbortError(f"{self.what} {reason}: {n} of {self.total} documents were committed "
                         f"({self.chunks} chunks); the other {self.total - n} were not written")

    async def pause(self) -> None:
        """``check()``, first letting other work run if this write has not done so for ``YIELD_S``
        (a step of the work: cheap when called often)."""
        if time.monotonic() - self._since >= YIELD_S:
            await self.let_in()
        self.check()

    async def let_in(self) -> None:
        """Let other work run now (after a commit; the next step checks)."""
        await asyncio.sleep(TURN_S)
        self._since = time.monotonic()

    def commit(self, names: list[str], chunks: int) -> None:
        self.committed.extend(names)
        self.chunks += chunks
