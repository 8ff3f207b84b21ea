"""Stopping an index write between batches: a cancel of its message (the page's AbortSignal) or
``interruptGenerate()`` ends it before its next batch is committed, so every document is either
committed whole or not written at all."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import AbortError

if TYPE_CHECKING:
    from ..core.engine import Engine
    from ..core.scope import Scope


@dataclass
class WriteGuard:
    """What an index write has committed so far, and the check it makes before each step."""

    engine: Engine
    scope: Scope | None
    what: str
    total: int
    committed: list[str] = field(default_factory=list)
    chunks: int = 0

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

    def commit(self, names: list[str], chunks: int) -> None:
        self.committed.extend(names)
        self.chunks += chunks
