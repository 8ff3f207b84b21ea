"""The document index in the worker: IndexedDB, the JS kernel and the Python logic against the
brute-force reference computed here (semantic-text-splitter, sentence-transformers, numpy)."""

from __future__ import annotations

import contextlib
import random
import subprocess
from collections import Counter
from typing import Any

import pytest

from tests.support.browser import EnginePage, boot_engine, open_engine_page
from tests.support.filter_reference import gen_filters, ref_matches
from tests.support.index_reference import (
    COLL,
    MAX_TOKENS,
    MODEL,
    NS,
    OVERLAP,
    assert_same_ranking,
    corpus,
    queries,
    ref_chunks,
)

pytestmark = pytest.mark.browser

INDEX = {"namespace": NS, "collection": COLL}
SEM = {**INDEX, "index": "sem"}
HYB = {**INDEX, "index": "hyb"}


@pytest.fixture(scope="module")
def index_page(browser, site_url):
    """A page of its own (an empty IndexedDB) with the corpus in a semantic and a hybrid index."""
    ep = open_engine_page(browser, site_url, [MODEL])
    for ix, hybrid in ((SEM, False), (HYB, True)):
        ep.ok("return await engine.index.createIndex(arg);",
              {**ix, "model": MODEL, "max_tokens": MAX_TOKENS, "overlap": OVERLAP, "hybrid": hybrid})
    out = ep.ok("const progress = [];"
                "const r = await engine.index.put(arg, {progress: (p) => progress.push(p)}); return [r, progress];",
                [d.wire() for d in corpus()], timeout=600_000)
    result, progress = out
    assert result == {"documents": len(corpus()), "chunks": 2 * len(ref_chunks())}
    assert len(progress) > 1 and progress[-1]["loaded"] == len(corpus())
    assert [p["loaded"] for p in progress] == sorted(p["loaded"] for p in progress)
    yield ep
    ep.page.context.close()


def as_javascript(value: Any) -> Any:
    """``value`` as the page sends it: JavaScript has one number type, so ``1.0`` arrives as ``1``."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: as_javascript(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_javascript(v) for v in value]
    return value


def search(ep: Any, requests: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    return ep.ok("return await engine.csi.search(arg);", requests)


def test_chunks_equal_the_reference(index_page):
    listed = index_page.ok("return await engine.index.list(arg);", INDEX)
    want = Counter(c.doc for c in ref_chunks())
    assert {d["name"]: d["chunks"] for d in listed["documents"]} == {
        d.name: {"sem": want[d.name], "hyb": want[d.name]} for d in corpus()}
    (coll,) = listed["collections"]
    assert {i["index"]: i["hybrid"] for i in coll["indexes"]} == {"sem": False, "hyb": True}


def test_semantic_ranking_equals_brute_force(index_page):
    results = search(index_page, [{"index_path": SEM, "query": q, "max_results": 5} for q in queries()])
    for query, got in zip(queries(), results, strict=True):
        assert_same_ranking(got, query, 5)


def test_hybrid_ranking_and_min_score_equal_brute_force(index_page):
    qs = queries()[:24]
    settings = [None, 0.3, 0.5]
    results = search(index_page, [{"index_path": HYB, "query": q, "max_results": 5, "min_score": settings[i % 3]}
                                  for i, q in enumerate(qs)])
    semantic = search(index_page, [{"index_path": SEM, "query": q, "max_results": 50, "min_score": settings[i % 3]}
                                   for i, q in enumerate(qs)])
    fused_above = 0
    for i, (query, got, sem) in enumerate(zip(qs, results, semantic, strict=True)):
        min_score = settings[i % 3]
        assert_same_ranking(got, query, 5, hybrid=True, min_score=min_score)
        assert_same_ranking(sem, query, 50, min_score=min_score)
        if min_score is not None:
            assert all(h["score"] >= min_score for h in sem)
            fused_above += any(h["score"] < min_score for h in got)  # lexical hits below the semantic cut
    assert fused_above > 0


def test_cursors_point_at_the_content(index_page):
    docs = {d.name: d for d in corpus()}
    hits = [h for r in search(index_page, [
        {"index_path": SEM, "query": "Emoji flags in Zürich", "max_results": 40},
        {"index_path": HYB, "query": "Straße 東京 café", "max_results": 40}]) for h in r]
    assert any(h["document_path"]["name"] == "unicode" for h in hits)
    for h in hits:
        item = docs[h["document_path"]["name"]].items[h["start"]["item"]]
        assert h["start"]["item"] == h["end"]["item"]
        assert item[h["start"]["position"]: h["end"]["position"] + 1] == h["content"]


def test_filters_equal_the_reference_filter(index_page):
    rng = random.Random(23)
    metadata = {d.name: as_javascript(d.metadata) for d in corpus()}
    cases = [gen_filters(rng) for _ in range(40)]
    results = search(index_page, [{"index_path": ix, "query": "files", "max_results": 10_000, "filters": f}
                                  for f in cases for ix in (SEM, HYB)])
    nonempty = 0
    for i, filters in enumerate(cases):
        want = {n for n, md in metadata.items() if ref_matches(filters, md)}
        for got in results[2 * i: 2 * i + 2]:
            assert {h["document_path"]["name"] for h in got} == want, filters
        nonempty += bool(want)
    assert 5 < nonempty < 40

    # booleans never equal integers, floats never equal integers, date-times compare instants
    extra = [{"path": {**INDEX, "name": f"m{i}"}, "contents": [{"text": f"memo number {i}"}], "metadata": md}
             for i, md in enumerate([{"v": 1}, {"v": True}, {"v": 1.5}, {"at": "2024-01-01T00:00:00+02:00"},
                                     {"at": "2023-12-31T23:00:00Z"}, {"v": None}, {"a": [{"b": 3}, {"b": 7}]}])]
    index_page.ok("return await engine.index.put(arg);", extra)
    cases = {
        "v = 1": ([{"with_all": [{"field": "v", "condition": {"equal_to": 1}}]}], {"m0"}),
        "v = true": ([{"with_all": [{"field": "v", "condition": {"equal_to": {"boolean_type": True}}}]}], {"m1"}),
        "v > 1": ([{"with_all": [{"field": "v", "condition": {"greater_than": 1}}]}], {"m2"}),
        "v null": ([{"with_all": [{"field": "v", "condition": "is_null"}]}], {"m5"}),
        "before": ([{"with_all": [{"field": "at", "condition": {"before": "2023-12-31T22:30:00Z"}}]}], {"m3"}),
        "at or after": ([{"with_all": [{"field": "at", "condition": {"at_or_after": "2023-12-31T22:00:00Z"}}]}],
                        {"m3", "m4"}),
        "a[].b": ([{"with_all": [{"field": "a[].b", "condition": {"greater_than_or_equal_to": 7}}]}], {"m6"}),
        "a[0].b": ([{"with_all": [{"field": "a[0].b", "condition": {"greater_than_or_equal_to": 7}}]}], set()),
        "without": ([{"without": [{"field": "v", "condition": {"less_than": 100}}]},
                     {"with_one_of": [{"field": "v", "condition": "is_null"},
                                      {"field": "v", "condition": {"equal_to": True}}]}], {"m1", "m5"}),
    }
    results = search(index_page, [{"index_path": SEM, "query": "memo", "max_results": 10_000, "filters": f}
                                  for f, _ in cases.values()])
    for (label, (_, want)), got in zip(cases.items(), results, strict=True):
        assert {h["document_path"]["name"] for h in got} & {f"m{i}" for i in range(7)} == want, label
    assert index_page.ok("return await engine.index.delete(arg);", [e["path"] for e in extra]) == [True] * 7


@pytest.mark.parametrize("field", ["a..b", "a b", "tags[x]", "é", "x" * 1001])
def test_invalid_field_names_are_named(index_page, field):
    bad = index_page.call("return await engine.csi.search(arg);", [
        {"index_path": SEM, "query": "q", "filters": []},
        {"index_path": SEM, "query": "q", "filters": [{"with_all": [{"field": "a", "condition": "is_null"}]},
                                                       {"without": [{"field": field, "condition": "is_null"}]}]}])
    assert bad["error"]["name"] == "InvalidInputError"
    assert bad["error"]["param"] == "requests[1].filters[1].without[0].field"
    assert len(search(index_page, [{"index_path": SEM, "query": "json", "max_results": 2}])[0]) == 2


def test_documents_metadata_and_unknown_paths(index_page):
    doc = corpus()[5]
    path = {**INDEX, "name": doc.name}
    missing = {**INDEX, "name": "no-such-document"}
    metadata = as_javascript(doc.metadata)
    assert index_page.ok("return await engine.csi.documents(arg);", [path]) == [
        {"path": path, "contents": [{"text": t} for t in doc.items], "metadata": metadata}]
    assert index_page.ok("return await engine.csi.documentMetadata(arg);", [path, missing]) == [metadata, None]
    err = index_page.call("return await engine.csi.documents(arg);", [path, missing])["error"]
    assert (err["name"], err["param"]) == ("NotFoundError", "requests[1].name")
    for script, arg, param in [
        ("engine.csi.documentMetadata(arg)", [{**path, "namespace": "nope"}], "requests[0].namespace"),
        ("engine.csi.documents(arg)", [{**path, "collection": "nope"}], "requests[0].collection"),
        ("engine.csi.search(arg)", [{"index_path": {**SEM, "index": "nope"}, "query": "q"}],
         "requests[0].index_path.index"),
        ("engine.csi.search(arg)", [{"index_path": {**SEM, "collection": "nope"}, "query": "q"}],
         "requests[0].index_path.collection"),
    ]:
        err = index_page.call(f"return await {script};", arg)["error"]
        assert (err["name"], err["param"]) == ("NotFoundError", param), script
    bad = index_page.call("return await engine.csi.search(arg);", [{"index_path": SEM, "query": 5}])["error"]
    assert (bad["name"], bad["param"]) == ("InvalidInputError", "requests[0].query")


def test_index_survives_a_reload(index_page, site_url):
    requests = [{"index_path": ix, "query": q, "max_results": 5} for q in queries()[:6] for ix in (SEM, HYB)]
    before = search(index_page, requests)
    boot_engine(index_page.page, site_url, [MODEL])  # a new page and worker over the same IndexedDB
    assert search(index_page, requests) == before
    listed = index_page.ok("return await engine.index.list(arg);", INDEX)
    assert len(listed["documents"]) == len(corpus())
    assert index_page.foreign_requests() == []


def test_terminating_the_worker_mid_ingest_loses_nothing_acknowledged(index_page, site_url):
    """Kill the worker right after the first committed batch is reported, then look in a new one."""
    crash = {"namespace": NS, "collection": "crash"}
    index_page.ok("return await engine.index.createIndex(arg);",
                  {**crash, "index": "sem", "model": MODEL, "max_tokens": MAX_TOKENS, "overlap": OVERLAP})
    docs = [{**d.wire(), "path": {**crash, "name": d.name}} for d in corpus()]
    acknowledged = index_page.ok("""
        return await new Promise((resolve, reject) => {
          engine.index.put(arg, {progress: (p) => { engine.worker.terminate(); resolve(p.documents); }})
            .catch(reject);
        });""", docs, timeout=600_000)
    assert acknowledged
    boot_engine(index_page.page, site_url, [MODEL])
    listed = index_page.ok("return await engine.index.list(arg);", crash)["documents"]
    present = {d["name"]: d["chunks"] for d in listed}
    assert set(acknowledged) <= set(present)
    assert len(present) < len(docs), "the worker was terminated before the ingest finished"
    want = Counter(c.doc for c in ref_chunks())
    for name, chunks in present.items():  # every document that is there is whole
        assert chunks == {"sem": want[name]}, name
    stored = index_page.ok("return await engine.csi.documents(arg);", [{**crash, "name": n} for n in present])
    by_name = {d["path"]["name"]: d for d in docs}
    for doc in stored:
        assert doc["contents"] == by_name[doc["path"]["name"]]["contents"]
    # and the collection is usable: the rest goes in, search finds all of it
    rest = [d for d in docs if d["path"]["name"] not in present]
    index_page.ok("return await engine.index.put(arg);", rest, timeout=600_000)
    hits = search(index_page, [{"index_path": {**crash, "index": "sem"}, "query": "json", "max_results": 1000}])[0]
    assert {h["document_path"]["name"] for h in hits} == {d.name for d in corpus()}
    assert index_page.ok("return await engine.index.drop(arg);", crash) == {"dropped": "collection"}


def test_putting_a_document_again_replaces_it(index_page):
    path = {**INDEX, "name": "replaced"}
    index_page.ok("return await engine.index.put(arg);", [
        {"path": path, "contents": [{"text": "Pelicans scoop fish with their throat pouch."}], "metadata": {"v": 1}}])
    index_page.ok("return await engine.index.put(arg);", [
        {"path": path, "contents": ["image", {"text": "Volcanoes erupt molten rock called lava."}], "metadata": None}])
    only = [{"with_all": [{"field": "v", "condition": {"equal_to": 1}}]}]
    pelicans, lava, filtered = search(index_page, [
        {"index_path": ix, "query": q, "max_results": 1000, "filters": f}
        for ix, q, f in [(SEM, "pelican fish pouch", []), (HYB, "volcano lava", []), (SEM, "volcano", only)]])
    assert all(h["document_path"]["name"] != "replaced" or "Pelicans" not in h["content"] for h in pelicans)
    mine = [h for h in lava if h["document_path"]["name"] == "replaced"]
    assert [(h["content"], h["start"], h["end"]) for h in mine] == [
        ("Volcanoes erupt molten rock called lava.", {"item": 1, "position": 0}, {"item": 1, "position": 39})]
    assert lava[0]["document_path"]["name"] == "replaced"
    assert all(h["document_path"]["name"] != "replaced" for h in filtered)  # its old metadata is gone too
    assert index_page.ok("return await engine.csi.documentMetadata(arg);", [path]) == [None]
    assert index_page.ok("return await engine.index.delete(arg);", [path, path]) == [True, False]


def test_acknowledged_documents_survive_killing_the_browser(browser_type, browser_type_launch_args, site_url,
                                                            tmp_path):
    """On a profile on disk: kill every Chromium process mid-ingest (a crash, or the power going),
    start Chromium again and find every acknowledged document, whole."""
    profile = tmp_path / "profile"
    crash = {"namespace": NS, "collection": "killed"}
    docs = [{**d.wire(), "path": {**crash, "name": d.name}} for d in corpus()]

    def start() -> tuple[Any, EnginePage]:
        context = browser_type.launch_persistent_context(str(profile), **browser_type_launch_args)
        page = context.new_page()
        page.set_default_timeout(300_000)
        boot_engine(page, site_url, [MODEL])
        return context, EnginePage(page, [])

    context, ep = start()
    ep.ok("return await engine.index.createIndex(arg);",
          {**crash, "index": "sem", "model": MODEL, "max_tokens": MAX_TOKENS, "overlap": OVERLAP})
    acknowledged = ep.ok("""
        return await new Promise((resolve, reject) => {
          engine.index.put(arg, {progress: (p) => resolve(p.documents)}).catch(reject);
        });""", docs, timeout=600_000)
    killed = subprocess.run(["pkill", "-9", "-f", f"user-data-dir={profile}"], check=False)
    assert killed.returncode == 0, "no Chromium process of this profile was found"
    with contextlib.suppress(Exception):
        context.close()

    context, ep = start()
    try:
        present = {d["name"]: d["chunks"]
                   for d in ep.ok("return await engine.index.list(arg);", crash)["documents"]}
        assert set(acknowledged) <= set(present)
        assert len(present) < len(docs), "Chromium was killed before the ingest finished"
        want = Counter(c.doc for c in ref_chunks())
        for name, chunks in present.items():
            assert chunks == {"sem": want[name]}, name
        stored = ep.ok("return await engine.csi.documents(arg);", [{**crash, "name": n} for n in present])
        by_name = {d["path"]["name"]: d for d in docs}
        assert all(d["contents"] == by_name[d["path"]["name"]]["contents"] for d in stored)
        hits = ep.ok("return await engine.csi.search(arg);",
                     [{"index_path": {**crash, "index": "sem"}, "query": "json", "max_results": 1000}])[0]
        assert {h["document_path"]["name"] for h in hits} == set(present)
    finally:
        context.close()
