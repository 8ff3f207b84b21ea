"""A future the decode loop awaits once per token, resumed by the bridge's callback directly."""

from __future__ import annotations

import asyncio
from typing import Any

from ...core.backend import StepResult


class EagerFuture:
    """A future whose waiter resumes inside ``settle`` instead of one event-loop turn later.

    Awaiting a JS promise (or an ``asyncio.Future`` set from JS) costs a browser task per token
    (about 70 us here); the decode loop awaits one of these per token, so the bridge's callback
    resumes it directly. asyncio's Task accepts any object with this future protocol.
    """

    _asyncio_future_blocking = False

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._callbacks: list[tuple[Any, Any]] = []
        self._done = False
        self._result: StepResult | list[StepResult] | None = None
        self._exception: BaseException | None = None

    def get_loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def add_done_callback(self, fn: Any, *, context: Any = None) -> None:
        if self._done:
            self._loop.call_soon(fn, self, context=context)
        else:
            self._callbacks.append((fn, context))

    def remove_done_callback(self, fn: Any) -> int:
        before = len(self._callbacks)
        self._callbacks = [c for c in self._callbacks if c[0] is not fn]
        return before - len(self._callbacks)

    def cancel(self, msg: Any = None) -> bool:
        return False  # a forward pass cannot be cancelled half-way; the loop stops after it

    def cancelled(self) -> bool:
        return False

    def done(self) -> bool:
        return self._done

    def result(self) -> StepResult | list[StepResult]:
        if self._exception is not None:
            raise self._exception
        assert self._result is not None
        return self._result

    def exception(self) -> BaseException | None:
        return self._exception

    def settle(self, result: StepResult | list[StepResult] | None, exception: BaseException | None) -> None:
        """Resolve (once; later calls do nothing) and resume every waiter now."""
        if self._done:
            return
        self._done, self._result, self._exception = True, result, exception
        callbacks, self._callbacks = self._callbacks, []
        for fn, context in callbacks:
            if context is None:
                fn(self)
            else:
                context.run(fn, self)

    def __await__(self) -> Any:
        if not self._done:
            self._asyncio_future_blocking = True
            yield self
        return self.result()
