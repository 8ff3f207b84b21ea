"""Stopping an index write inside a batch (issue 43): documents of megabytes are cut and embedded
in steps, so a ``cancel`` or ``interrupt`` ends ``index_put`` and ``index_create`` within about a
second however large the document under way, and each document is in the index whole (its chunks,
embeddings and terms) or not at all: the index then answers as one built from only the committed
documents does. On the real backend (all-minilm-l6-v2) through the worker's envelope."""

from __future__ import annotations

import asyncio
import json
import random
import time
from typing import Any

import pytest

from csi.index import ingest, service
from csi.index.store import IndexConfig
from csi.worker.app import WorkerApp
from tests.support import fuzz
from tests.support.aio import run_async
from tests.support.fuzz import FuzzLog
from tests.support.index_worker import Worker, new_runtime, stop_message

WHERE = {"namespace": "big", "collection": "docs"}
IX = {**WHERE, "index": "ix", "model": "all-minilm-l6-v2", "max_tokens": 64, "overlap": 8, "hybrid": True}
WORDS = ("river stone light garden window morning letter market winter bridge music paper summer forest "
         "engine harbor valley cloud silver kitchen station village mountain candle travel orange season "
         "doctor language animal pocket thunder library island machine teacher blanket harvest ocean").split()
QUERIES = ["a river by the mountain village", "thunder over the harbor", "library teacher", "orange candle"]
MB = 1_000_000
STOP_AFTER_S = 0.4
ENDS_WITHIN_S = 1.5


def text(seed: int, chars: int, shape: str) -> str:
    """Generated prose of about ``chars`` characters: paragraphs, or one long line (cut at sentences)."""
    rng = random.Random(seed)
    out: list[str] = []
    size = 0
    while size < chars:
        sentence = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(6, 14))).capitalize() + "."
        sep = "\n\n" if shape == "paragraphs" and rng.random() < 0.15 else " "
        out.append(sentence + sep)
        size += len(sentence) + len(sep)
    return "".join(out)


def doc(name: str, body: str) -> dict[str, Any]:
    return {"path": {**WHERE, "name": name}, "contents": [{"text": body}], "metadata": {"name": name}}


SMALL = [doc(f"a-small-{i}", text(i, 1500, "paragraphs")) for i in range(3)]


def huge(shape: str = "paragraphs", n: int = 2) -> list[dict[str, Any]]:
    """``n`` documents of 3 MB."""
    return [doc(f"b-huge-{i}", text(10 + i, 3 * MB, shape)) for i in range(n)]


async def snapshot(w: Worker, names: list[str]) -> dict[str, Any]:
    """What the index answers: every query's hits, and the documents it holds chunks of."""
    searches = [{"index_path": {**WHERE, "index": "ix"}, "query": q, "max_results": 50} for q in QUERIES]
    hits = await w.ok("s", "csi_search", searches)
    listed = await w.ok("l", "index_list", WHERE)
    return {"hits": [[(h["document_path"]["name"], h["start"], h["end"], h["content"], round(h["score"], 4))
                      for h in per] for per in hits],
            "chunks": {d["name"]: d["chunks"] for d in listed["documents"] if d["chunks"]}}


async def reference(names: list[str], docs: list[dict[str, Any]]) -> dict[str, Any]:
    """An index of only the documents ``names``, never stopped, in a runtime of its own."""
    w = Worker(new_runtime())
    await w.ok("c", "index_create", IX)
    await w.ok("p", "index_put", [d for d in docs if d["path"]["name"] in names])
    return await snapshot(w, names)


@pytest.fixture(autouse=True)
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(service, "COMMIT_DOCUMENTS", 3)  # the small documents commit first, together


async def stopped(w: Worker, id_: str, type_: str, request: Any, how: str) -> tuple[dict[str, Any], float]:
    """Send a write; ``STOP_AFTER_S`` after its first commit, stop it as the page would. Its final
    reply, and how long after the stop was due it came."""
    loop = asyncio.get_running_loop()
    due: list[float] = []

    def after_first_commit(msg: dict[str, Any]) -> None:
        if msg["id"] == id_ and msg["type"] == "progress" and msg["progress"]["stage"] == "index":
            w.on_post = None
            due.append(time.monotonic() + STOP_AFTER_S)
            loop.call_later(STOP_AFTER_S, w.app.handle, stop_message(how, id_))

    w.on_post = after_first_commit
    w.app.handle(json.dumps({"id": id_, "type": type_, "request": request}))
    final = await w.final(id_)
    assert due, f"no batch was committed: {final}"
    return final, time.monotonic() - due[0]


def check_stopped(final: dict[str, Any], took: float, how: str, total: int) -> None:
    assert final["type"] == "error" and final["error"]["name"] == "AbortError", final
    message = final["error"]["message"]
    assert f"3 of {total} documents were committed" in message, message
    assert ("interruptGenerate()" in message) == (how == "interrupt"), message
    assert took < ENDS_WITHIN_S, f"the write ended {took:.2f} s after it was stopped"


@pytest.mark.parametrize(("shape", "how"), [("paragraphs", "interrupt"), ("line", "cancel")])
def test_a_put_of_megabyte_documents_stops_within_a_second_and_commits_none_in_part(shape: str, how: str) -> None:
    docs = SMALL + huge(shape)

    async def scenario() -> tuple[dict[str, Any], float, list[str], dict[str, Any]]:
        w = Worker(new_runtime())
        await w.ok("c", "index_create", IX)
        final, took = await stopped(w, "p", "index_put", docs, how)
        names = w.committed("p")
        return final, took, names, await snapshot(w, names)

    final, took, names, got = run_async(scenario())
    print(f"index_put of 3 MB documents ({shape}) ended {took:.2f} s after the {how}")
    check_stopped(final, took, how, len(docs))
    assert names == [d["path"]["name"] for d in SMALL]
    assert got == run_async(reference(names, docs))  # the huge ones not at all (not even stored)


def test_index_create_over_megabyte_documents_stops_within_a_second_and_indexes_none_in_part() -> None:
    docs = SMALL + huge()

    async def scenario() -> tuple[dict[str, Any], float, list[str], dict[str, Any], list[str]]:
        w = Worker(new_runtime())
        await w.ok("p", "index_put", docs)  # no index yet: stored, not chunked
        final, took = await stopped(w, "c", "index_create", IX, "interrupt")
        names = w.committed("c")
        listed = await w.ok("l0", "index_list", WHERE)
        return final, took, names, await snapshot(w, names), [d["name"] for d in listed["documents"]]

    final, took, names, got, stored = run_async(scenario())
    print(f"index_create over documents of 3 MB ended {took:.2f} s after the interrupt")
    check_stopped(final, took, "interrupt", len(docs))
    assert names == [d["path"]["name"] for d in SMALL]
    assert stored == [d["path"]["name"] for d in docs]  # every document is still there
    assert got == run_async(reference(names, docs))  # chunks of the committed ones only, each whole


def test_a_stop_between_two_embedding_calls_of_one_document_drops_all_of_it() -> None:
    big = doc("b-big", text(7, 150_000, "paragraphs"))
    docs = [*SMALL, big]

    async def scenario() -> tuple[dict[str, Any], list[int], list[str], dict[str, Any]]:
        runtime = new_runtime()
        w = Worker(runtime)
        await w.ok("c", "index_create", IX)
        engine = runtime.engine
        embed = engine.embed
        calls: list[int] = []

        async def embed_and_count(model: Any, texts: list[str], scope: Any = None) -> Any:
            if w.committed("p"):  # the big document's calls
                calls.append(len(texts))
                if len(calls) == 3:
                    w.app.handle(stop_message("cancel", "p"))  # while its third call runs
            return await embed(model, texts, scope)

        engine.embed = embed_and_count  # type: ignore[method-assign]
        final = await w.call("p", "index_put", docs)
        engine.embed = embed  # type: ignore[method-assign]
        names = w.committed("p")
        return final, calls, names, await snapshot(w, names)

    final, calls, names, got = run_async(scenario())
    assert final["type"] == "error" and final["error"]["name"] == "AbortError", final
    assert "3 of 4 documents were committed" in final["error"]["message"]
    assert len(calls) == 3 and max(calls) <= ingest.EMBED_BATCH  # none after the one under way; each bounded
    assert names == [d["path"]["name"] for d in SMALL]
    assert got == run_async(reference(names, docs))


def test_calls_and_commits_are_bounded() -> None:
    assert ingest.batches([1, 1, 1, 9000, 2, 9000], 128, 3) == [[0, 1, 2], [3], [4, 5]]
    assert ingest.batches([0] * 5, 128, 2) == [[0, 1], [2, 3], [4]]
    assert ingest.batches([], 128, 64) == []
    first = {t: ingest.embed_batch(IndexConfig("n", "c", "i", "m", t, 0, False, 384))
             for t in (16, 128, 256, 510, 5000)}
    assert first == {16: 16, 128: 2, 256: 1, 510: 1, 5000: 1}
    # then as many as take about EMBED_CALL_S, by the last call
    assert [ingest.next_batch(4, 0.05), ingest.next_batch(4, 0.1), ingest.next_batch(32, 0.01),
            ingest.next_batch(8, 4.0)] == [8, 8, 32, 1]


def test_the_fuzzer_interrupts_a_write_that_runs_long_and_it_ends_typed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fuzz, "SLOW_S", 0.5)

    async def scenario() -> tuple[FuzzLog, float]:
        sent: list[str] = []
        app = WorkerApp(new_runtime(), sent.append)
        await app.serve(json.dumps({"id": "c", "type": "index_create", "request": IX}))
        log = FuzzLog()
        t = time.monotonic()
        await fuzz.send_one(app, sent, json.dumps({"id": "f1", "type": "index_put", "request": huge()[:1]}), log)
        return log, time.monotonic() - t

    log, took = run_async(scenario())
    assert log.violations == []
    assert log.outcomes == {"AbortError": 1}
    assert took < 0.5 + ENDS_WITHIN_S


def test_a_write_stopped_while_it_waits_for_another_ends_at_once_and_writes_nothing() -> None:
    async def scenario() -> tuple[dict[str, Any], float, bool, dict[str, Any], list[str]]:
        w = Worker(new_runtime())
        await w.ok("c", "index_create", IX)
        w.app.handle(json.dumps({"id": "long", "type": "index_put", "request": huge()[:1]}))
        await asyncio.sleep(0.3)  # the long write holds the store
        w.app.handle(json.dumps({"id": "queued", "type": "index_put", "request": SMALL}))
        await asyncio.sleep(0.3)
        t = time.monotonic()
        w.app.handle(stop_message("cancel", "queued"))
        queued = await w.final("queued")
        took = time.monotonic() - t
        long_running = all(m["id"] != "long" or m["type"] not in ("result", "error") for m in w.sent)
        w.app.handle(stop_message("cancel", "long"))
        long = await w.final("long")
        listed = await w.ok("l", "index_list", WHERE)
        await w.ok("again", "index_put", SMALL)  # the store is free: the lock the queued write never used went back
        return queued, took, long_running, long, [d["name"] for d in listed["documents"]]

    queued, took, long_running, long, listed = run_async(scenario())
    assert queued["type"] == "error" and queued["error"]["name"] == "AbortError", queued
    assert "while it waited for another write: nothing was written" in queued["error"]["message"]
    assert took < ENDS_WITHIN_S
    assert long_running  # the other write went on, until it was stopped too
    assert long["type"] == "error" and long["error"]["name"] == "AbortError", long
    assert listed == []
