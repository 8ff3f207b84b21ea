"""Cancelling an index write through the worker's envelope (a ``cancel`` message, as the page's
AbortSignal sends it, or ``interrupt``, as interruptGenerate() does): it stops between committed
batches, and the index then holds exactly the committed documents, as an index built from only
those documents does, with no document in part."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from csi.backends.local_host import LocalHost
from csi.index import service
from csi.index.store import MemoryIndexStore
from csi.runtime import Runtime, build_runtime
from csi.worker.app import WorkerApp
from tests.support.aio import run_async
from tests.support.index_reference import COLL, MAX_TOKENS, MODEL, NS, OVERLAP, corpus, queries
from tests.support.paths import MODELS

WHERE = {"namespace": NS, "collection": COLL}
IX = {**WHERE, "index": "sem", "model": MODEL, "max_tokens": MAX_TOKENS, "overlap": OVERLAP}
DOCS = [d.wire() for d in corpus()[:12]]


def new_runtime() -> Runtime:
    from csi.backends.cpython import CPythonBackend

    return build_runtime(CPythonBackend(Path(MODELS)), LocalHost(), MemoryIndexStore())


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
        while True:
            final = next((m for m in self.sent if m["id"] == id_ and m["type"] in ("result", "error")), None)
            if final:
                return final
            await asyncio.sleep(0.001)

    def progress(self, id_: str) -> list[dict[str, Any]]:
        return [m["progress"] for m in self.sent if m["id"] == id_ and m["type"] == "progress"]

    async def ok(self, id_: str, type_: str, request: Any = None) -> Any:
        out = await self.call(id_, type_, request)
        assert out["type"] == "result", out
        return out["result"]


async def snapshot(w: Worker, names: list[str], tag: str = "") -> dict[str, Any]:
    """What the index holds: the listing, the documents, and every query's hits."""
    listed = await w.ok(f"l{tag}", "index_list", WHERE)
    docs = await w.ok(f"d{tag}", "csi_documents", [{**WHERE, "name": n} for n in names]) if names else []
    searches = [{"index_path": {**WHERE, "index": "sem"}, "query": q, "max_results": 1000} for q in queries()[:8]]
    hits = await w.ok(f"s{tag}", "csi_search", searches)
    return {"listed": listed["documents"], "docs": docs,
            "hits": [[(h["document_path"]["name"], h["start"], h["end"], h["content"], round(h["score"], 4))
                      for h in per] for per in hits]}


async def reference(names: list[str]) -> dict[str, Any]:
    """An index built from only the documents ``names``, in a runtime of its own."""
    w = Worker(new_runtime())
    await w.ok("c", "index_create", IX)
    if names:
        await w.ok("p", "index_put", [d for d in DOCS if d["path"]["name"] in names])
    return await snapshot(w, names)


def committed_names(w: Worker, id_: str) -> list[str]:
    return [n for p in w.progress(id_) if p.get("stage") == "index" for n in p["documents"]]


@pytest.fixture(autouse=True)
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(service, "COMMIT_DOCUMENTS", 3)


@pytest.mark.parametrize("how", ["cancel", "interrupt"])
def test_stopping_after_the_first_batch_leaves_exactly_the_committed_documents(how: str) -> None:
    async def scenario() -> tuple[dict[str, Any], list[str], dict[str, Any], dict[str, Any], dict[str, Any]]:
        w = Worker(new_runtime())
        await w.ok("c", "index_create", IX)
        loop = asyncio.get_running_loop()
        stop = ({"id": "x", "type": "cancel", "request": {"target": "p"}} if how == "cancel"
                else {"id": "x", "type": "interrupt"})

        def after_first_commit(msg: dict[str, Any]) -> None:  # arrives as a message would: on the loop
            if msg["id"] == "p" and msg["type"] == "progress" and msg["progress"]["stage"] == "index":
                w.on_post = None
                loop.call_soon(w.app.handle, json.dumps(stop))

        w.on_post = after_first_commit
        final = await w.call("p", "index_put", DOCS)
        names = committed_names(w, "p")
        got = await snapshot(w, names)
        # the engine goes on: the whole set goes in afterwards
        again = await w.ok("p2", "index_put", DOCS)
        full = await snapshot(w, [d["path"]["name"] for d in DOCS], "2")
        return final, names, got, again, full

    final, names, got, again, full = run_async(scenario())
    assert final["type"] == "error", final
    err = final["error"]
    assert err["name"] == "AbortError"
    assert names == [d["path"]["name"] for d in DOCS[:3]]  # the first batch, and only it
    assert f"3 of {len(DOCS)} documents were committed" in err["message"], err
    assert ("interruptGenerate()" in err["message"]) == (how == "interrupt")
    assert got == run_async(reference(names))
    assert again["documents"] == len(DOCS)
    assert full == run_async(reference([d["path"]["name"] for d in DOCS]))


def test_a_cancel_while_a_batch_is_embedded_leaves_that_batch_out_whole() -> None:
    async def scenario() -> tuple[dict[str, Any], list[str], dict[str, Any]]:
        runtime = new_runtime()
        w = Worker(runtime)
        await w.ok("c", "index_create", IX)
        engine = runtime.engine
        embed = engine.embed
        fired = False

        async def embed_then_cancel(*args: Any, **kw: Any) -> Any:
            nonlocal fired
            if w.progress("p") and not fired:  # the second batch is being embedded: none of it is committed
                fired = True
                w.app.handle(json.dumps({"id": "x", "type": "cancel", "request": {"target": "p"}}))
            return await embed(*args, **kw)

        engine.embed = embed_then_cancel  # type: ignore[method-assign]
        final = await w.call("p", "index_put", DOCS)
        engine.embed = embed  # type: ignore[method-assign]
        names = committed_names(w, "p")
        return final, names, await snapshot(w, names)

    final, names, got = run_async(scenario())
    assert final["type"] == "error" and final["error"]["name"] == "AbortError", final
    assert "3 of 12 documents were committed" in final["error"]["message"]
    assert names == [d["path"]["name"] for d in DOCS[:3]]
    assert [d["name"] for d in got["listed"]] == sorted(names)
    assert got == run_async(reference(names))
