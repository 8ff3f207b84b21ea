"""Entry point for worker/worker.js: a ``WorkerApp`` whose runtime runs on the JS bridge and host
(``csi.backends.pyodide``, the one package that imports pyodide)."""

from __future__ import annotations

import signal
import time
from collections.abc import Awaitable, Callable
from json import loads
from typing import TYPE_CHECKING, Any

from ..backends.pyodide import (
    PyodideBackend,
    PyodideHost,
    PyodideIndexStore,
    PyodidePageTools,
    PyodidePromptCaches,
    run_sync,
)
from ..backends.pyodide.http import FetchHttp
from ..backends.pyodide.response_store import PyodideResponseStore
from ..runtime import Runtime, build_runtime
from ..skills import interrupts
from ..skills.registry import SkillRunner
from .app import Post, WorkerApp

if TYPE_CHECKING:
    from ..skills.engine_csi import EngineCsi


def _checked_run_sync(awaitable: Awaitable[Any]) -> Any:
    """Pyodide's ``run_sync``, then a checkpoint: a skill that came due while it waited stops here."""
    try:
        return run_sync(awaitable)
    finally:
        interrupts.checkpoint()


def _inline_runner(runtime: Runtime) -> SkillRunner:
    # JS promise integration: the skill's synchronous CSI calls suspend its stack while the
    # engine (on this same event loop) serves them.
    made: list[EngineCsi] = []  # made on first use: the CSI needs pharia-skill, loaded by then

    async def run(body: Callable[[EngineCsi], bytes]) -> bytes:
        if not made:
            made.append(runtime.csi(_checked_run_sync))
        return body(made[0])

    return run


def _aim_interrupts() -> None:
    """The page's interrupts (Pyodide's interrupt buffer) reach only the skill run they are for;
    ``time.sleep``, which suspends a skill's stack while other requests run, is a checkpoint."""
    signal.signal(signal.SIGINT, interrupts.on_signal)
    sleep = time.sleep

    def checked_sleep(seconds: float) -> None:
        interrupts.checkpoint()
        sleep(seconds)
        interrupts.checkpoint()

    time.sleep = checked_sleep  # type: ignore[assignment]


def create_app(bridge: Any, host: Any, post: Post, page_interrupts: Callable[[], int] | None = None,
               page_tools: Any = None) -> WorkerApp:
    """The app worker.js drives: ``handle(raw)`` per page message, ``set_boot_timings(json)``.
    ``page_interrupts`` reads how many times the page called ``interruptGenerate()``;
    ``page_tools`` (worker/page_tools.js) asks the page to run its tools."""
    _aim_interrupts()
    if page_interrupts is not None:
        interrupts.page_interrupts = lambda: int(page_interrupts())
    runtime = build_runtime(PyodideBackend(bridge), PyodideHost(host), PyodideIndexStore(host.documents),
                            skill_runner=_inline_runner, http=FetchHttp(host),
                            responses=PyodideResponseStore(host))
    return WorkerApp(runtime, post, None if page_tools is None else PyodidePageTools(page_tools),
                     memory=lambda: loads(bridge.memoryStats()), prompt_caches=PyodidePromptCaches(bridge))
