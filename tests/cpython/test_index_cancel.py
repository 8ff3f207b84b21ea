"""Cancelling an index write through the worker's envelope (a ``cancel`` message, as the page's
AbortSignal sends it, or ``interrupt``, as interruptGenerate() does): it stops at its next step,
and the index then holds exactly the committed documents, as an index built from only those
documents does, with no document in part."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from csi.index import service
from tests.support.aio import run_async
from tests.support.index_reference import COLL, MAX_TOKENS, MODEL, NS, OVERLAP, corpus, queries
from tests.support.index_worker import Worker, new_runtime

WHERE = {"namespace": NS, "collection": COLL}
IX = {**WHERE, "index": "sem", "model": MODEL, "max_tokens": MAX_TOKENS, "overlap": OVERLAP}
DOCS = [d.wire() for d in corpus()[:12]]


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
        names = w.committed("p")
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
        names = w.committed("p")
        return final, names, await snapshot(w, names)

    final, names, got = run_async(scenario())
    assert final["type"] == "error" and final["error"]["name"] == "AbortError", final
    assert "3 of 12 documents were committed" in final["error"]["message"]
    assert names == [d["path"]["name"] for d in DOCS[:3]]
    assert [d["name"] for d in got["listed"]] == sorted(names)
    assert got == run_async(reference(names))
