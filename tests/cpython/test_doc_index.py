"""The document index in CPython: the scoring kernels (Python and worker/vector_index.js run by
node) against numpy, and DocumentIndex on the CPython backend against the brute-force reference
(semantic-text-splitter chunks, sentence-transformers embeddings, numpy cosine and BM25)."""

from __future__ import annotations

import asyncio
import json
import math
import random
import subprocess
import threading
from array import array
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from csi.backends.local_host import LocalHost
from csi.errors import InvalidInputError, ModelNotSupportedError, NotFoundError
from csi.index.lexical import terms
from csi.index.store import MemoryIndexStore, ScoreQuery, _Row, score_rows
from csi.runtime import build_runtime
from csi.skills.engine_csi import loop_run_sync
from tests.support.aio import run_async
from tests.support.filter_reference import gen_filters, ref_matches
from tests.support.index_client import IndexClient
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
from tests.support.paths import MODELS, ROOT

INDEX = {"namespace": NS, "collection": COLL}


# --- the kernels against numpy -------------------------------------------------------------------


def _random_rows(rng: random.Random, n: int, dims: int, docs: int) -> tuple[list[_Row], list[list[str]]]:
    vocab = [f"w{i}" for i in range(30)]
    rows, words = [], []
    for r in range(n):
        v = np.array([rng.gauss(0, 1) for _ in range(dims)])
        v /= np.linalg.norm(v)
        w = [rng.choice(vocab[: 5 + r % 25]) for _ in range(rng.randrange(0, 12))]
        words.append(w)
        rows.append(_Row(f"d{r % docs}", r % docs, 0, r, r + 1, f"t{r}", Counter(w), array("f", v)))
    return rows, words


def _numpy_scores(rows: list[_Row], q: Any, *, k: int, min_score: float | None, hybrid: bool, qterms: list[str],
                  allowed: bytes | None) -> list[tuple[float, int]]:
    mat = np.array([list(r.vector) for r in rows], dtype=np.float64)
    cos = mat @ np.array(q, dtype=np.float64)
    ok = np.array([allowed is None or bool(allowed[r.ordinal]) for r in rows])
    passing = ok & ((cos >= min_score) if min_score is not None else True)
    if not hybrid:
        score = np.where(passing, cos, -np.inf)
    else:
        n = len(rows)
        lengths = np.array([sum(r.tf.values()) for r in rows], dtype=np.float64)
        bm25 = np.zeros(n)
        for t in set(qterms):
            tf = np.array([r.tf.get(t, 0) for r in rows], dtype=np.float64)
            df = int((tf > 0).sum())
            if df:
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                bm25 += np.where(ok, idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * lengths / lengths.mean())), 0)
        best = bm25[ok].max() if ok.any() else 0
        lex = bm25 / best if best > 0 else np.zeros(n)
        score = np.where(ok & (passing | (lex > 0)), 0.5 * np.where(passing, cos, 0) + 0.5 * lex, -np.inf)
    order = [int(r) for r in np.argsort(-score, kind="stable") if score[r] > -np.inf][:k]
    return [(float(score[r]), r) for r in order]


def _node_search(rows: list[_Row], words: list[list[str]], dims: int, hybrid: bool, cases: list[dict[str, Any]]) -> Any:
    """Load the rows into worker/vector_index.js document by document and run ``cases``."""
    docs: dict[str, dict[str, Any]] = {}
    for r, (row, w) in enumerate(zip(rows, words, strict=True)):
        d = docs.setdefault(row.name, {"name": row.name, "rows": [], "items": [], "starts": [], "ends": [],
                                       "texts": [], "terms": [], "vectors": []})
        d["rows"].append(r)
        for key, value in (("items", 0), ("starts", row.start), ("ends", row.end), ("texts", row.text),
                           ("terms", " ".join(w))):
            d[key].append(value)
        d["vectors"] += list(row.vector)
    script = f"""
      import {{ VectorIndex }} from "{ROOT}/worker/vector_index.js";
      import {{ readFileSync }} from "node:fs";
      const {{ docs, cases }} = JSON.parse(readFileSync(0, "utf8"));
      const index = new VectorIndex({dims}, {str(hybrid).lower()}, 8);
      const rowOf = [];
      for (const d of Object.values(docs)) {{
        index.put(d.name, "null", d, new Float32Array(d.vectors));
        rowOf.push(...d.rows);
      }}
      const out = cases.map((c) => index.search(new Float32Array(c.q), {{ k: c.k, minScore: c.min_score,
        terms: c.terms, semanticWeight: 0.5, k1: 1.2, b: 0.75,
        allowed: c.allowed ? Uint8Array.from(c.allowed) : null }}).map((h) => [h.score, h.name, h.start]));
      console.log(JSON.stringify(out));
    """
    out = subprocess.run(["node", "--input-type=module", "-e", script], capture_output=True, text=True, check=True,
                         input=json.dumps({"docs": docs, "cases": cases}))
    return json.loads(out.stdout)


@pytest.mark.parametrize("hybrid", [False, True])
def test_kernels_equal_numpy(hybrid: bool) -> None:
    rng = random.Random(7 + hybrid)
    dims, n_docs = 24, 40
    rows, words = _random_rows(rng, 300, dims, n_docs)
    # the JS index numbers documents in the order they are put: make the Python ordinals agree
    ordinal = {name: i for i, name in enumerate(dict.fromkeys(r.name for r in rows))}
    for r in rows:
        r.ordinal = ordinal[r.name]
    rows.sort(key=lambda r: (r.ordinal, r.start))
    by_start = {r.start: r for r in rows}
    cases, expected = [], []
    for c in range(40):
        q = np.array([rng.gauss(0, 1) for _ in range(dims)])
        q /= np.linalg.norm(q)
        qf = array("f", q)
        min_score = [None, 0.0, 0.2, -0.1][c % 4]
        qterms = [f"w{rng.randrange(40)}" for _ in range(rng.randrange(0, 4))] if hybrid else []
        allowed = bytes(rng.random() < 0.6 for _ in range(n_docs)) if c % 3 == 0 else None
        k = [1, 5, 10, 300][c % 4]
        want = _numpy_scores(rows, qf, k=k, min_score=min_score, hybrid=hybrid, qterms=qterms, allowed=allowed)
        got = score_rows(rows, ScoreQuery(qf, k, min_score, qterms if hybrid else None, allowed=allowed))
        assert [r for _, r in got] == [r for _, r in want]
        assert all(abs(a - b) < 1e-9 for (a, _), (b, _) in zip(got, want, strict=True))
        cases.append({"q": list(qf), "k": k, "min_score": min_score, "terms": qterms if hybrid else None,
                      "allowed": list(allowed) if allowed else None})
        expected.append([(s, rows[r].name, rows[r].start) for s, r in want])
        assert want, "every case finds something"
    for got_js, want in zip(_node_search(rows, [list(by_start[r.start].tf.elements()) for r in rows], dims, hybrid,
                                         cases), expected, strict=True):
        assert [(n, s) for _, n, s in got_js] == [(n, s) for _, n, s in want]
        assert all(abs(a[0] - b[0]) < 1e-6 for a, b in zip(got_js, want, strict=True))


def test_lexical_terms() -> None:
    assert terms("Hello, World_2! Straße 東京 ok") == ["hello", "world", "2", "strasse", "東", "京", "ok"]
    assert terms("  ...  ") == []


# --- DocumentIndex on the CPython backend ------------------------------------------------------


@dataclass
class IndexedEngine:
    documents: IndexClient
    run: Callable[[Awaitable[Any]], Any]


def index_client(store: MemoryIndexStore | None = None, lang: Path | None = None) -> IndexClient:
    from csi.backends.cpython import CPythonBackend

    return IndexClient(build_runtime(CPythonBackend(Path(MODELS)), LocalHost(lang), store).index)


@pytest.fixture(scope="module")
def engine() -> Any:
    # the engine's loop runs in a thread of its own: once Playwright's sync API has started (browser
    # tests in the same session), this thread's event loop belongs to Playwright
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    eng = IndexedEngine(index_client(lang=Path(MODELS).parent / "lang"), loop_run_sync(loop))
    run = eng.run
    run(eng.documents.create_index({**INDEX, "index": "sem", "model": MODEL, "max_tokens": MAX_TOKENS,
                                    "overlap": OVERLAP}))
    run(eng.documents.put([d.wire() for d in corpus()]))
    # created after the documents: indexes what is there
    run(eng.documents.create_index({**INDEX, "index": "hyb", "model": MODEL, "max_tokens": MAX_TOKENS,
                                    "overlap": OVERLAP, "hybrid": True}))
    yield eng
    loop.call_soon_threadsafe(loop.stop)
    thread.join()
    loop.close()


def _search(engine: Any, index: str, query: str, **kw: Any) -> list[dict[str, Any]]:
    req = {"index_path": {**INDEX, "index": index}, "query": query, "max_results": kw.pop("k", 5), **kw}
    return engine.run(engine.documents.search([req]))[0]


def test_corpus_is_large_enough() -> None:
    assert len(ref_chunks()) >= 500 and len(queries()) == 50


def test_chunks_equal_the_reference(engine: Any) -> None:
    counts = engine.run(engine.documents.list(INDEX))["documents"]
    want = Counter(c.doc for c in ref_chunks())
    assert {d["name"]: d["chunks"] for d in counts} == {d.name: {"sem": want[d.name], "hyb": want[d.name]}
                                                        for d in corpus()}


def test_semantic_ranking_equals_brute_force(engine: Any) -> None:
    for query in queries():
        assert_same_ranking(_search(engine, "sem", query), query, 5)


def test_hybrid_ranking_and_min_score_equal_brute_force(engine: Any) -> None:
    for i, query in enumerate(queries()[:20]):
        min_score = [None, 0.3, 0.5][i % 3]
        got = _search(engine, "hyb", query, min_score=min_score)
        assert_same_ranking(got, query, 5, hybrid=True, min_score=min_score)
        semantic = _search(engine, "sem", query, k=50, min_score=min_score)
        assert all(h["score"] >= min_score for h in semantic if min_score is not None)
        assert_same_ranking(semantic, query, 50, min_score=min_score)


def test_cursors_point_at_the_content(engine: Any) -> None:
    docs = {d.name: d for d in corpus()}
    hits = _search(engine, "sem", "Emoji flags in Zürich", k=40) + _search(engine, "hyb", "Straße 東京", k=40)
    assert any(h["document_path"]["name"] == "unicode" for h in hits)
    for h in hits:
        item = docs[h["document_path"]["name"]].items[h["start"]["item"]]
        assert h["start"]["item"] == h["end"]["item"]
        assert item[h["start"]["position"]: h["end"]["position"] + 1] == h["content"]


def test_filters_equal_the_reference_filter(engine: Any) -> None:
    rng = random.Random(11)
    metadata = {d.name: d.metadata for d in corpus()}
    matched = 0
    for _ in range(60):
        filters = gen_filters(rng)
        got = _search(engine, "sem", "anything", k=10_000, filters=filters)
        want = {n for n, md in metadata.items() if ref_matches(filters, md)}
        assert {h["document_path"]["name"] for h in got} == want, filters
        matched += bool(want)
    assert 10 < matched < 60
    # booleans never equal integers; date-times compare instants
    base = [{"path": {**INDEX, "name": f"m{i}"}, "contents": [{"text": f"note {i}"}], "metadata": md}
            for i, md in enumerate([{"v": 1}, {"v": True}, {"v": 1.0}, {"at": "2024-01-01T00:00:00+02:00"},
                                    {"at": "2023-12-31T23:00:00Z"}, {"v": None}])]
    engine.run(engine.documents.put(base))
    names = {"m0", "m1", "m2", "m3", "m4", "m5"}

    def only_m(filters: list[Any]) -> set[str]:
        return {h["document_path"]["name"] for h in _search(engine, "sem", "note", k=10_000, filters=filters)} & names

    assert only_m([{"with_all": [{"field": "v", "condition": {"equal_to": 1}}]}]) == {"m0"}
    assert only_m([{"with_all": [{"field": "v", "condition": {"equal_to": True}}]}]) == {"m1"}
    assert only_m([{"with_all": [{"field": "v", "condition": "is_null"}]}]) == {"m5"}
    assert only_m([{"with_all": [{"field": "at", "condition": {"before": "2023-12-31T22:30:00Z"}}]}]) == {"m3"}
    after = [{"with_all": [{"field": "at", "condition": {"at_or_after": "2023-12-31T22:00:00Z"}}]}]
    assert only_m(after) == {"m3", "m4"}
    engine.run(engine.documents.delete([b["path"] for b in base]))


@pytest.mark.parametrize(("field", "param"), [("a..b", "filters[0].with_all[0].field"),
                                              ("a b", "filters[0].with_all[0].field"),
                                              ("x" * 1001, "filters[0].with_all[0].field")])
def test_invalid_field_names_are_named(engine: Any, field: str, param: str) -> None:
    with pytest.raises(InvalidInputError) as err:
        _search(engine, "sem", "q", filters=[{"with_all": [{"field": field, "condition": "is_null"}]}])
    assert err.value.param == f"requests[0].{param}"


def test_documents_and_metadata(engine: Any) -> None:
    doc = corpus()[3]
    path = {**INDEX, "name": doc.name}
    missing = {**INDEX, "name": "no-such-document"}
    out = engine.run(engine.documents.documents([path]))
    assert out == [{"path": path, "contents": [{"text": t} for t in doc.items], "metadata": doc.metadata}]
    assert engine.run(engine.documents.document_metadata([path, missing])) == [doc.metadata, None]
    with pytest.raises(NotFoundError) as err:
        engine.run(engine.documents.documents([path, missing]))
    assert err.value.param == "requests[1].name"
    for bad, param in [({"namespace": "nope", "collection": COLL, "name": "x"}, "requests[0].namespace"),
                       ({"namespace": NS, "collection": "nope", "name": "x"}, "requests[0].collection")]:
        with pytest.raises(NotFoundError) as err:
            engine.run(engine.documents.document_metadata([bad]))
        assert err.value.param == param
    with pytest.raises(NotFoundError) as err:
        _search(engine, "nope", "q")
    assert err.value.param == "requests[0].index_path.index"


def test_writes_replace_delete_drop_and_validate() -> None:
    docs = index_client()

    async def scenario() -> None:
        ix = {"namespace": "n", "collection": "c", "index": "i", "max_tokens": 16}
        assert (await docs.create_index(ix))["created"]
        assert not (await docs.create_index(ix))["created"]  # the same again is fine
        with pytest.raises(InvalidInputError) as err:
            await docs.create_index({**ix, "max_tokens": 17})
        assert err.value.param == "index"
        for bad, param in [({**ix, "overlap": 16}, "overlap"), ({**ix, "max_tokens": 0}, "max_tokens"),
                           ({**ix, "max_tokens": 600}, "max_tokens"), ({**ix, "index": ""}, "index"),
                           ({**ix, "hybrid": "yes"}, "hybrid")]:
            with pytest.raises(InvalidInputError) as err:
                await docs.create_index(bad)
            assert err.value.param == param, bad
        with pytest.raises(ModelNotSupportedError) as err2:
            await docs.create_index({**ix, "index": "j", "model": "tiny-chat"})
        assert err2.value.param == "model"

        path = {"namespace": "n", "collection": "c", "name": "doc"}
        await docs.put([{"path": path, "contents": [{"text": "The first version talks about apples."}]}])
        await docs.put([{"path": path, "contents": ["image", {"text": "Now it is about oranges."}], "metadata": 1}])
        assert (await docs.documents([path]))[0]["contents"] == ["image", {"text": "Now it is about oranges."}]
        hits = (await docs.search([{"index_path": {"namespace": "n", "collection": "c", "index": "i"},
                                    "query": "fruit", "max_results": 10}]))[0]
        assert [(h["content"], h["start"], h["end"]) for h in hits] == [
            ("Now it is about oranges.", {"item": 1, "position": 0}, {"item": 1, "position": 23})]
        for bad_docs, param in [([{"path": path, "contents": [{"txt": "x"}]}], "documents[0].contents[0]"),
                                ([{"path": {**path, "name": ""}, "contents": []}], "documents[0].path.name"),
                                ([{"path": path, "contents": []}] * 2, "documents[1].path")]:
            with pytest.raises(InvalidInputError) as err:
                await docs.put(bad_docs)
            assert err.value.param is not None and err.value.param.startswith(param), (bad_docs, err.value.param)
        assert await docs.delete([path, {**path, "name": "other"}]) == [True, False]
        assert (await docs.list({"namespace": "n", "collection": "c"}))["documents"] == []
        assert await docs.search([{"index_path": {"namespace": "n", "collection": "c", "index": "i"},
                                   "query": "fruit", "max_results": 10}]) == [[]]
        assert await docs.drop({"namespace": "n", "collection": "c", "index": "i"}) == {"dropped": "index"}
        assert await docs.drop({"namespace": "n", "collection": "c"}) == {"dropped": "collection"}
        with pytest.raises(NotFoundError) as err3:
            await docs.drop({"namespace": "n", "collection": "c"})
        assert err3.value.param == "namespace"
        assert (await docs.list())["collections"] == []

    run_async(scenario())



def test_an_interrupted_create_index_is_finished_by_calling_it_again(monkeypatch: pytest.MonkeyPatch) -> None:
    from csi.index import service

    class FailingOnce(MemoryIndexStore):
        calls = 0

        async def add_chunks(self, key: Any, chunks: Any) -> None:
            FailingOnce.calls += 1
            if FailingOnce.calls == 2:
                raise RuntimeError("the worker went away")
            await super().add_chunks(key, chunks)

    monkeypatch.setattr(service, "COMMIT_DOCUMENTS", 2)
    docs = index_client(FailingOnce())
    where = {"namespace": "n", "collection": "c"}
    ix = {**where, "index": "i", "max_tokens": 16}
    names = [f"d{i}" for i in range(5)]

    async def scenario() -> tuple[Any, Any, Any]:
        await docs.put([{"path": {**where, "name": n}, "contents": [{"text": f"Cats, part {n}."}]}
                                 for n in names])
        with pytest.raises(RuntimeError):
            await docs.create_index(ix)
        half = await docs.list(where)
        again = await docs.create_index(ix)
        return half, again, await docs.list(where)

    half, again, full = run_async(scenario())
    assert [d["chunks"] for d in half["documents"]] == [{"i": 1}, {"i": 1}, {}, {}, {}]
    assert again["created"] is False
    assert [d["chunks"] for d in full["documents"]] == [{"i": 1}] * 5
