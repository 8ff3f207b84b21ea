"""Turns at the models and cancellation: one FIFO lock per model (who holds it, who waits), the
interrupt epoch, the ids of aborted requests, and the futures that wake a waiter when either changes.
The engine asks it for a turn; the runners ask it whether their request was cancelled."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from .scope import Scope

MAX_ABORTED = 1024


class Scheduler:
    """Per-model turns in arrival order, and the cancellation of the work waiting for them or holding them."""

    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}
        self._holders: dict[str, str] = {}  # model id -> the request whose work holds its lock
        self._wakers: set[asyncio.Future[None]] = set()  # waiting for a model; woken by interrupt/abort
        self._aborted: dict[str, None] = {}  # requests cancelled, running or not yet (oldest dropped)
        self._interrupt_epoch = 0
        self._run_ids = itertools.count()

    # ---- models ------------------------------------------------------------------------------------

    def add(self, model_id: str) -> None:
        """Give a newly loaded model its lock."""
        self._locks[model_id] = asyncio.Lock()

    def remove(self, model_id: str) -> None:
        self._locks.pop(model_id, None)
        self._holders.pop(model_id, None)

    def lock(self, model_id: str) -> asyncio.Lock:
        """The model's lock, for work that takes it directly (unloading, forgetting a conversation)."""
        return self._locks[model_id]

    # ---- cancellation ------------------------------------------------------------------------------

    def interrupt(self) -> None:
        """End all running and waiting work at its next step."""
        self._interrupt_epoch += 1
        self._wake()

    def abort(self, request_id: str) -> None:
        """End the work of one request (running or queued)."""
        self._aborted[request_id] = None
        while len(self._aborted) > MAX_ABORTED:
            del self._aborted[next(iter(self._aborted))]
        self._wake()

    def is_aborted(self, request_id: str) -> bool:
        return request_id in self._aborted

    def forget(self, request_id: str) -> None:
        """The message ``request_id`` is answered: drop its cancellation."""
        self._aborted.pop(request_id, None)

    @property
    def interrupt_epoch(self) -> int:
        """How many ``interrupt()`` calls there have been."""
        return self._interrupt_epoch

    def next_cancel(self) -> asyncio.Future[None]:
        """A future resolved at the next ``interrupt()`` or ``abort()``; cancel it to stop waiting."""
        waker = asyncio.get_running_loop().create_future()
        self._wakers.add(waker)
        waker.add_done_callback(self._wakers.discard)
        return waker

    @property
    def waiting(self) -> int:
        """How many waiters wait to be woken (none once their work has ended)."""
        return len(self._wakers)

    def _wake(self) -> None:
        wakers, self._wakers = self._wakers, set()
        for waker in wakers:
            if not waker.done():
                waker.set_result(None)

    def key(self, scope: Scope | None) -> str:
        """The id of the page message the work serves (or one of its own): what cancels it."""
        return scope.request_id if scope and scope.request_id is not None else f"run-{next(self._run_ids)}"

    def watch(self, scope: Scope | None) -> tuple[str, Callable[[], bool]]:
        """The work's key and whether it has been cancelled since now (or since its message came)."""
        key = self.key(scope)
        epoch = scope.epoch if scope and scope.epoch is not None else self._interrupt_epoch
        return key, lambda: self._interrupt_epoch != epoch or key in self._aborted

    def done(self, key: str, scope: Scope | None) -> None:
        """Work of ``key`` ended: drop its cancellation unless its message's envelope does so."""
        if scope is None or scope.request_id is None:
            self._aborted.pop(key, None)

    # ---- turns -------------------------------------------------------------------------------------

    async def acquire(self, model_id: str, key: str, cancelled: Callable[[], bool], scope: Scope | None) -> bool:
        """Take the model's lock in turn, and hold it as ``key``; ``False`` (and no lock) when the
        work is cancelled while it waits. A wait is reported as ``queued`` progress."""
        lock = self._locks[model_id]
        if not lock.locked():
            await lock.acquire()
        else:
            self._report_queued(model_id, key, scope)
            acquiring = asyncio.ensure_future(lock.acquire())
            try:
                while not acquiring.done():
                    if cancelled():
                        break
                    waker = asyncio.get_running_loop().create_future()
                    self._wakers.add(waker)
                    try:
                        await asyncio.wait((acquiring, waker), return_when=asyncio.FIRST_COMPLETED)
                    finally:
                        self._wakers.discard(waker)
            finally:
                if not acquiring.done():
                    acquiring.cancel()
                    await asyncio.wait((acquiring,))
            if acquiring.cancelled() or acquiring.exception() is not None:
                return False
            if cancelled():  # it came with the lock: give it back at once
                lock.release()
                return False
        self._holders[model_id] = key
        return True

    def release(self, model_id: str) -> None:
        self._holders.pop(model_id, None)
        self._locks[model_id].release()

    def _report_queued(self, model_id: str, key: str, scope: Scope | None) -> None:
        holder = self._holders.get(model_id)
        report = scope.progress if scope else None
        if report is not None and holder != key:
            report({"stage": "queued", "file": None, "loaded": 0, "total": 1, "model": model_id,
                    "waiting_for": holder})

    @asynccontextmanager
    async def holding(self, model_id: str, scope: Scope | None) -> AsyncIterator[None]:
        """The model's lock, in turn, for work that is not cut half-way (embeddings, insides)."""
        await self.acquire(model_id, self.key(scope), lambda: False, scope)
        try:
            yield
        finally:
            self.release(model_id)
