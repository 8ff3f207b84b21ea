"""The scheduler on its own: turns at a model in arrival order, waiters cancelled by interrupt and
abort without taking the lock, queued progress naming the holder, bounded memory of aborted ids."""

from __future__ import annotations

import asyncio
from typing import Any

from csi.core.scheduler import MAX_ABORTED, Scheduler
from csi.core.scope import Scope
from tests.support.aio import run_async


def test_turns_are_taken_in_arrival_order() -> None:
    async def go() -> list[str]:
        turns = Scheduler()
        turns.add("m")
        order: list[str] = []

        async def work(name: str) -> None:
            key, cancelled = turns.watch(Scope(name, None))
            assert await turns.acquire("m", key, cancelled, None)
            order.append(name)
            await asyncio.sleep(0.01)
            turns.release("m")

        await asyncio.gather(*(work(f"r{i}") for i in range(5)))
        return order

    assert run_async(go()) == ["r0", "r1", "r2", "r3", "r4"]


def test_a_waiter_reports_queued_naming_the_holder_and_an_abort_ends_its_wait_without_the_lock() -> None:
    async def go() -> tuple[list[dict[str, Any]], bool, bool, int]:
        turns = Scheduler()
        turns.add("m")
        reports: list[dict[str, Any]] = []
        holder, held = turns.watch(Scope("first", None))
        assert await turns.acquire("m", holder, held, None)
        key, cancelled = turns.watch(Scope("second", None))
        waiting = asyncio.ensure_future(turns.acquire("m", key, cancelled, Scope("second", None, reports.append)))
        await asyncio.sleep(0.01)
        turns.abort("second")
        got = await waiting
        still_held = turns.lock("m").locked()
        turns.release("m")
        return reports, got, still_held, turns.waiting

    reports, got, still_held, waiting = run_async(go())
    assert [(r["stage"], r["model"], r["waiting_for"]) for r in reports] == [("queued", "m", "first")]
    assert got is False and still_held is True and waiting == 0


def test_interrupt_cancels_work_watched_before_it_and_not_work_watched_after() -> None:
    turns = Scheduler()
    _, before = turns.watch(None)
    turns.interrupt()
    _, after = turns.watch(None)
    assert before() and not after()
    assert turns.interrupt_epoch == 1


def test_next_cancel_resolves_at_the_next_abort_and_cancelled_futures_leave_no_waiter() -> None:
    async def go() -> tuple[bool, bool, int]:
        turns = Scheduler()
        fired = turns.next_cancel()
        dropped = turns.next_cancel()
        dropped.cancel()
        await asyncio.sleep(0)
        turns.abort("x")
        await asyncio.sleep(0)
        return fired.done() and not fired.cancelled(), turns.is_aborted("x"), turns.waiting

    done, aborted, waiting = run_async(go())
    assert done and aborted and waiting == 0


def test_aborted_ids_are_bounded_and_forgotten_when_answered() -> None:
    turns = Scheduler()
    for i in range(MAX_ABORTED + 10):
        turns.abort(f"r{i}")
    assert not turns.is_aborted("r0") and turns.is_aborted(f"r{MAX_ABORTED + 9}")
    turns.forget(f"r{MAX_ABORTED + 9}")
    assert not turns.is_aborted(f"r{MAX_ABORTED + 9}")
    key, _ = turns.watch(None)  # work of its own (no page message): forgotten when it ends
    turns.abort(key)
    turns.done(key, None)
    assert not turns.is_aborted(key)
    turns.abort("page-1")  # a page message's id is the envelope's to forget
    turns.done("page-1", Scope("page-1", None))
    assert turns.is_aborted("page-1")
