"""The document index through the worker's envelope in CPython: a ``WorkerApp`` on the real
backend (all-minilm-l6-v2) and a memory store, the messages it posted, and stops (``cancel``,
``interrupt``) sent as the page sends them."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from csi.backends.local_host import LocalHost
from csi.index.store import MemoryIndexStore
from csi.runtime import Runtime, build_runtime
from csi.worker.app import WorkerApp
from tests.support.paths import MODELS


def new_runtime() -> Runtime:
    from csi.backends.cpython import CPythonBackend

    return build_runtime(CPythonBackend(Path(MODELS)), LocalHost(), MemoryIndexStore())


def stop_message(how: str, target: str) -> str:
    """What the page sends to stop message ``target``: its AbortSignal (``cancel``) or interruptGenerate()."""
    if how == "cancel":
        return json.dumps({"id": f"stop-{target}", "type": "cancel", "request": {"target": target}})
    return json.dumps({"id": f"stop-{target}", "type": "interrupt"})


class Worker:
    """A WorkerApp and every message it posted, decoded."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.sent: list[dict[str, Any]] = []
        self.on_post: Any = None
        self.app = WorkerApp(runtime, self._post)

    def _post(self, text: str) -> None:
        msg = json.loads(text)
        self.sent.append(msg)
        if self.on_post:
            self.on_post(msg)

    async def call(self, id_: str, type_: str, request: Any = None) -> dict[str, Any]:
        assert all(m["id"] != id_ for m in self.sent), f"id {id_} was used before"
        self.app.handle(json.dumps({"id": id_, "type": type_, "request": request}))
        return await self.final(id_)

    async def final(self, id_: str) -> dict[str, Any]:
        """The ``result`` or ``error`` that ends message ``id_``, once posted."""
        while True:
            final = next((m for m in self.sent if m["id"] == id_ and m["type"] in ("result", "error")), None)
            if final:
                return final
            await asyncio.sleep(0.001)

    def progress(self, id_: str) -> list[dict[str, Any]]:
        return [m["progress"] for m in self.sent if m["id"] == id_ and m["type"] == "progress"]

    def committed(self, id_: str) -> list[str]:
        """The documents message ``id_`` reported committed, in order."""
        return [n for p in self.progress(id_) if p.get("stage") == "index" for n in p["documents"]]

    async def ok(self, id_: str, type_: str, request: Any = None) -> Any:
        out = await self.call(id_, type_, request)
        assert out["type"] == "result", out
        return out["result"]
