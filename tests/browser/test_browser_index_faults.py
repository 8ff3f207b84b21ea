"""The document index under faults: two tabs writing one collection take turns (a Web Lock), and a
worker terminated at any point of an ingest leaves every acknowledged document whole and nothing
half-written."""

from __future__ import annotations

import os
import random
from typing import Any

from tests.support.browser import boot_engine

MODEL = "all-minilm-l6-v2"
FAULT_POINTS = int(os.environ.get("CSI_FAULT_POINTS", "3"))  # build.py soak: 10
CREATE = "return await engine.index.createIndex(arg);"


def _docs(namespace: str, prefix: str, n: int) -> list[dict[str, Any]]:
    rng = random.Random(prefix)
    docs = []
    for i in range(n):
        words = " ".join(f"{prefix}{i} word{rng.randrange(500)}" for _ in range(20 + 30 * (i % 5)))
        docs.append({"path": {"namespace": namespace, "collection": "c", "name": f"{prefix}-{i:03d}"},
                     "contents": [{"text": words}], "metadata": {"i": i}})
    return docs


def _index(namespace: str, name: str) -> dict[str, Any]:
    return {"namespace": namespace, "collection": "c", "index": name, "model": MODEL, "max_tokens": 32}


def _page(context: Any, site_url: str) -> Any:
    page = context.new_page()
    page.set_default_timeout(300_000)
    boot_engine(page, site_url, [MODEL])
    return page


def _call(page: Any, body: str, arg: Any = None) -> Any:
    return page.evaluate(f"async (arg) => {{ const engine = window.engine; {body} }}", arg)


def test_two_tabs_writing_one_collection_take_turns(browser, site_url):
    context = browser.new_context()
    a, b = _page(context, site_url), _page(context, site_url)
    _call(a, CREATE, _index("tabs", "first"))
    _call(a, "return await engine.index.put(arg);", _docs("tabs", "a", 6))
    # tab A indexes the collection anew while tab B writes to it
    a.evaluate("(arg) => { window.created = window.engine.index.createIndex(arg); }", _index("tabs", "second"))
    _call(b, "return await engine.index.put(arg);", _docs("tabs", "b", 30))
    _call(a, "return await window.created;")
    listed = _call(b, "return await engine.index.list({namespace: 'tabs', collection: 'c'});")
    assert len(listed["documents"]) == 36
    for doc in listed["documents"]:  # every document has chunks in both indexes: none was missed
        assert set(doc["chunks"]) == {"first", "second"} and doc["chunks"]["first"] == doc["chunks"]["second"], doc
    context.close()


def test_a_worker_terminated_mid_ingest_loses_nothing_acknowledged_and_half_writes_nothing(browser, site_url):
    context = browser.new_context()
    page = _page(context, site_url)
    docs = _docs("faults", "d", 40)
    # the reference: the same documents ingested without faults
    _call(page, CREATE, _index("reference", "i"))
    _call(page, "return await engine.index.put(arg);", [{**d, "path": {**d["path"], "namespace": "reference"}}
                                                       for d in docs])
    expected = {d["name"]: d["chunks"] for d in _call(
        page, "return (await engine.index.list({namespace: 'reference', collection: 'c'})).documents;")}
    _call(page, CREATE, _index("faults", "i"))
    rng = random.Random(7)
    for point in range(FAULT_POINTS):
        delay = rng.uniform(0, 4000)
        out = page.evaluate(
            """async ([docs, delay]) => {
                 const acked = [];
                 const put = window.engine.index.put(docs, {progress: (p) => acked.push(...p.documents)});
                 await new Promise((r) => setTimeout(r, delay));
                 window.engine.terminate();
                 const outcome = await put.then(() => 'done', (e) => e.name);
                 return {acked, outcome};
               }""", [docs, delay])
        assert out["outcome"] in ("done", "WorkerCrashedError"), out
        boot_engine(page, site_url, [MODEL])  # a new worker on the same storage
        listed = _call(page, "return (await engine.index.list({namespace: 'faults', collection: 'c'})).documents;")
        present = {d["name"]: d["chunks"] for d in listed}
        for name in out["acked"]:
            assert name in present, (point, name)
        for name, chunks in present.items():
            assert chunks == expected[name], (point, name, chunks)  # whole, never half-written
        stored = _call(page, "return await engine.csi.documents(arg);",
                       [{"namespace": "faults", "collection": "c", "name": n} for n in sorted(present)])
        by_name = {d["path"]["name"]: d for d in docs}
        for doc in stored:
            assert doc["contents"][0]["text"] == by_name[doc["path"]["name"]]["contents"][0]["text"]
        _call(page, "return await engine.index.delete(arg);",
              [{"namespace": "faults", "collection": "c", "name": n} for n in present])
    context.close()
