"""Stopping an index write: a cancel of its message (the page's AbortSignal) or
``interruptGenerate()`` ends it at its next step — between two chunks of a text, two embedding
calls, two documents, two commits — however large its documents. What a stopped write had cut and
embedded but not committed is dropped, so every document is either committed whole (its chunks,
embeddings and lexical terms in every index) or not written at all."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import AbortError

if TYPE_CHECKING:
    from ..core.engine import Engine
    from ..core.scope import Scope

YIELD_S = 0.1
"""A write that has kept Python busy this long lets other work in (the worker's messages: a cancel)."""


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
        scope = self.scope
        if scope is None:
            return None
        if scope.request_id is not None and self.engine.is_aborted(scope.request_id):
            return "was cancelled"
        if scope.epoch is not None and self.engine.interrupt_epoch != scope.epoch:
            return "was stopped by interruptGenerate()"
        return None

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
            await asyncio.sleep(0)
            self._since = time.monotonic()
        self.check()

    async def let_in(self) -> None:
        """Let other work run now (after a commit; the next step checks)."""
        await asyncio.sleep(0)
        self._since = time.monotonic()

    def commit(self, names: list[str], chunks: int) -> None:
        self.committed.extend(names)
        self.chunks += chunks
