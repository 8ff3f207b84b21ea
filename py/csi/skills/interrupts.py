"""Interrupts with an address: a skill's time limit, ``interruptGenerate()`` and a cancel reach the
skill run they are meant for, and nothing else.

The page can only interrupt the worker's Python as a whole (Pyodide's interrupt buffer trips a
signal in whatever Python runs next), and a skill that waits (on a CSI call, in ``time.sleep``)
is suspended while other requests' Python runs. So the signal never raises by itself: its handler
(``on_signal``) looks down the stack that is running for the frame of ``run_marked`` and raises
``SkillInterrupt`` only when that skill run is due (past its deadline, interrupted, cancelled).
Everywhere else it does nothing: the engine's own code, the event loop and other requests never
see it. A run that is due while it waits is caught at the points the runner controls
(``checkpoint``: after each CSI call, after each sleep); its CSI calls are aborted meanwhile, so
the wait is short.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Protocol, TypeVar

from ..errors import SkillInterrupt

T = TypeVar("T")

def _no_page() -> int:
    return 0


page_interrupts: Callable[[], int] = _no_page
"""How many times the page has called ``interruptGenerate()`` (a counter it shares with the worker,
read even while the worker's messages wait behind a skill that keeps Python busy)."""


class CancelState(Protocol):
    """What a run asks the engine: has ``interrupt()`` been called, has this request been cancelled."""

    @property
    def interrupt_epoch(self) -> int: ...

    def is_aborted(self, request_id: str) -> bool: ...


@dataclass
class SkillRun:
    """One skill call under way (``run`` or ``register``): whose it is and when it is due."""

    request_id: str
    name: str
    engine: CancelState
    epoch: int
    """The engine's interrupt epoch when the call arrived."""
    deadline: float | None = None
    """``time.monotonic()`` past which the run is interrupted (``None``: no limit)."""
    limit_s: float | None = None
    page_mark: int = 0
    """``page_interrupts()`` when the run started: a later ``interruptGenerate()`` is for it."""

    def due(self) -> str | None:
        """Why this run must stop now, or ``None``."""
        if self.deadline is not None and time.monotonic() >= self.deadline:
            return f"it ran past its time limit of {self.limit_s:g} s"
        if self.engine.interrupt_epoch != self.epoch or page_interrupts() > self.page_mark:
            return "interruptGenerate() was called"
        if self.engine.is_aborted(self.request_id):
            return "the call was cancelled"
        return None


def run_marked(run: SkillRun, body: Callable[[], T]) -> T:
    """Call ``body`` with ``run`` findable from every frame it runs (see ``current_run``)."""
    return body()


_MARKED = run_marked.__code__


def current_run(frame: FrameType | None) -> SkillRun | None:
    """The skill run whose code ``frame`` belongs to, if any (the nearest ``run_marked`` below it)."""
    while frame is not None:
        if frame.f_code is _MARKED:
            run = frame.f_locals.get("run")
            return run if isinstance(run, SkillRun) else None
        frame = frame.f_back
    return None


def checkpoint() -> None:
    """Raise ``SkillInterrupt`` here if the skill run calling this is due (no-op outside skills)."""
    run = current_run(sys._getframe(1))
    if run is not None:
        reason = run.due()
        if reason is not None:
            raise SkillInterrupt(reason)


def on_signal(signum: int, frame: FrameType | None) -> None:
    """The SIGINT handler (the page trips it past a time limit and for ``interruptGenerate()``):
    raise in the running skill's own code when that run is due; anywhere else, nothing."""
    run = current_run(frame)
    if run is None:
        return
    reason = run.due()
    if reason is not None:
        raise SkillInterrupt(reason)
