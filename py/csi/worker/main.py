"""Entry point for worker/worker.js: a ``WorkerApp`` whose runtime runs on the JS bridge and host
(``csi.backends.pyodide``, the one module that imports pyodide)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..backends.pyodide import PyodideBackend, PyodideHost, PyodideIndexStore, run_sync
from ..runtime import Runtime, build_runtime
from ..sdk.csi import Csi
from ..skills.registry import SkillRunner
from .app import Post, WorkerApp


def _inline_runner(runtime: Runtime) -> SkillRunner:
    # JS promise integration: the skill's synchronous CSI calls suspend its stack while the
    # engine (on this same event loop) serves them.
    csi = runtime.csi(run_sync)

    async def run(body: Callable[[Csi], bytes]) -> bytes:
        return body(csi)

    return run


def create_app(bridge: Any, host: Any, post: Post) -> WorkerApp:
    """The app worker.js drives: ``handle(raw)`` per page message, ``set_boot_timings(json)``."""
    runtime = build_runtime(PyodideBackend(bridge), PyodideHost(host), PyodideIndexStore(host.documents),
                            skill_runner=_inline_runner)
    return WorkerApp(runtime, post)
