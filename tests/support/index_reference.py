"""A corpus for the document-index tests and a brute-force reference search computed here in
CPython: chunks by semantic-text-splitter, embeddings by sentence-transformers, scores by numpy,
BM25 and filters written out plainly (the semantics are csi/index_store.py's docstring)."""

from __future__ import annotations

import importlib
import inspect
import math
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np
from semantic_text_splitter import TextSplitter
from tokenizers import Tokenizer

from tests.support.filter_reference import gen_shaped, ref_matches
from tests.support.paths import MODELS
from tests.support.reference import sentence_transformer

NS, COLL = "tests", "stdlib"
MODEL = "all-minilm-l6-v2"
MAX_TOKENS, OVERLAP = 64, 8
CORPUS_MODULES = ["json", "collections", "itertools", "functools", "pathlib", "subprocess", "argparse", "logging",
                  "threading", "textwrap", "difflib", "csv", "configparser", "sqlite3", "zipfile", "tarfile",
                  "shutil", "tempfile", "socket", "pickle", "copy", "pprint", "enum", "contextlib", "ast",
                  "tokenize", "traceback", "warnings", "weakref", "heapq", "bisect", "queue", "sched", "codecs",
                  "locale", "gettext", "decimal", "fractions", "statistics", "random", "datetime", "calendar"]
QUERY_MODULES = ["math", "os.path", "time", "string", "glob", "fnmatch", "base64", "hashlib", "hmac", "uuid",
                 "zlib", "gzip", "struct", "operator", "keyword", "shlex", "platform", "getpass", "secrets"]
UNICODE_TEXT = ("Zürich café — naïve résumé. 東京は日本の首都です。 Emoji 👩‍👩‍👧‍👦 and 🇩🇪 flags; "
                "the Straße is long. ") * 6


@dataclass
class Doc:
    name: str
    items: list[str]
    metadata: Any

    def wire(self) -> dict[str, Any]:
        return {"path": {"namespace": NS, "collection": COLL, "name": self.name},
                "contents": [{"text": t} for t in self.items], "metadata": self.metadata}


@dataclass
class RefChunk:
    doc: str
    item: int
    start: int
    text: str
    vector: np.ndarray = field(repr=False)
    terms: Counter[str] = field(repr=False)

    @property
    def end(self) -> int:
        return self.start + len(self.text) - 1


def _docstrings(module_name: str, limit: int) -> list[str]:
    module = importlib.import_module(module_name)
    out = []
    for obj in [module, *(v for _, v in sorted(vars(module).items()) if inspect.isclass(v) or inspect.isfunction(v))]:
        doc = inspect.getdoc(obj)
        if doc and len(doc) > 150 and doc not in out:
            out.append(doc[:2000])
        if len(out) == limit:
            break
    return out


@cache
def corpus() -> list[Doc]:
    """Documents of 1-4 items (stdlib docstrings) with generated metadata, plus one Unicode-heavy one."""
    rng = random.Random(5)
    docs = []
    for name in CORPUS_MODULES:
        items = _docstrings(name, 4)
        if items:
            docs.append(Doc(name, items, {**gen_shaped(rng), "module": name, "size": sum(map(len, items))}))
    docs.append(Doc("unicode", ["", UNICODE_TEXT], {"module": "unicode", "size": len(UNICODE_TEXT), "n": None}))
    return docs


@cache
def queries() -> list[str]:
    out: list[str] = []
    for name in QUERY_MODULES:
        module = importlib.import_module(name)
        for _, v in sorted(vars(module).items()):
            doc = inspect.getdoc(v) if callable(v) else None
            line = doc.splitlines()[0].strip() if doc else ""
            if len(line) > 20 and line not in out and not line.startswith(("Return", "str(", "bytes(")):
                out.append(line)
                break
            if len(out) >= 50:
                break
    while len(out) < 50:  # topics of the corpus, asked in plain words
        out.append(["how do I read a CSV file", "sort items with a key function", "parse command line options",
                    "write log messages to a file", "compress files into an archive", "copy a directory tree",
                    "run a shell command and capture its output", "format dates and times",
                    "decimal floating point arithmetic", "thread synchronization with locks"][len(out) % 10])
        out[-1] += f" ({len(out)})"
    return out


def ref_terms(text: str) -> Counter[str]:
    """Lower-cased words; CJK ideographs and kana one per term (csi.index.lexical's rule, for this corpus)."""
    return Counter(t.lower() for t in re.findall(r"[\u3040-\u30ff\u4e00-\u9fff]|[^\W_\u3040-\u30ff\u4e00-\u9fff]+",
                                                  text))


@cache
def ref_chunks(max_tokens: int = MAX_TOKENS, overlap: int = OVERLAP) -> list[RefChunk]:
    tokenizer = Tokenizer.from_file(str(MODELS / MODEL / "tokenizer.json"))
    splitter = TextSplitter.from_huggingface_tokenizer(tokenizer, capacity=max_tokens, overlap=overlap)
    chunks = [(d.name, i, start, text) for d in corpus() for i, item in enumerate(d.items)
              for start, text in splitter.chunk_indices(item)]
    vectors = embed([c[3] for c in chunks])
    return [RefChunk(n, i, s, t, v, ref_terms(t)) for (n, i, s, t), v in zip(chunks, vectors, strict=True)]


def embed(texts: list[str]) -> np.ndarray:
    return sentence_transformer().encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)


@cache
def query_vector(query: str) -> np.ndarray:
    return embed([query])[0]


@dataclass(frozen=True)
class RefHit:
    doc: str
    item: int
    start: int
    end: int
    content: str
    score: float


def ref_search(query: str, *, k: int, min_score: float | None = None, hybrid: bool = False,
               filters: list[Any] | None = None, chunks: list[RefChunk] | None = None) -> list[RefHit]:
    """Brute force over every chunk: numpy cosine, BM25 (k1 1.2, b 0.75), fusion 0.5/0.5."""
    chunks = chunks if chunks is not None else ref_chunks()
    metadata = {d.name: d.metadata for d in corpus()}
    cos = np.stack([c.vector for c in chunks]).astype(np.float64) @ query_vector(query).astype(np.float64)
    ok = np.array([not filters or ref_matches(filters, metadata[c.doc]) for c in chunks])
    passing = ok & (cos >= min_score if min_score is not None else True)
    if not hybrid:
        score = np.where(passing, cos, -np.inf)
    else:
        n = len(chunks)
        avgdl = sum(sum(c.terms.values()) for c in chunks) / n
        bm25 = np.zeros(n)
        for term in dict.fromkeys(ref_terms(query)):
            df = sum(1 for c in chunks if term in c.terms)
            if not df:
                continue
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            for r, c in enumerate(chunks):
                tf = c.terms.get(term, 0)
                dl = sum(c.terms.values())
                bm25[r] += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / avgdl)) if tf else 0.0
        best = bm25[ok].max() if ok.any() else 0.0
        lex = bm25 / best if best > 0 else np.zeros(n)
        fused = 0.5 * np.where(passing, cos, 0.0) + 0.5 * lex
        score = np.where(ok & (passing | (lex > 0)), fused, -np.inf)
    order = [int(r) for r in np.argsort(-score, kind="stable") if score[r] > -np.inf][:k]
    return [RefHit(chunks[r].doc, chunks[r].item, chunks[r].start, chunks[r].end, chunks[r].text, float(score[r]))
            for r in order]


def all_scores(query: str, *, hybrid: bool = False,
               min_score: float | None = None) -> dict[tuple[str, int, int], float]:
    """Every candidate chunk's reference score, by (document, item, start)."""
    hits = ref_search(query, k=10**6, hybrid=hybrid, min_score=min_score)
    return {(h.doc, h.item, h.start): h.score for h in hits}


def assert_same_ranking(got: list[dict[str, Any]], query: str, k: int, *, hybrid: bool = False,
                        min_score: float | None = None, tol: float = 1e-3) -> None:
    """``got`` (the engine's results) equals the reference's top ``k``: the same set (up to
    reference ties within 2 tol at the cut), every score within ``tol``, best first."""
    want = ref_search(query, k=k + 1, hybrid=hybrid, min_score=min_score)
    scores = all_scores(query, hybrid=hybrid, min_score=min_score)
    assert len(got) == min(k, len(want)), (query, len(got), len(want))
    for g in got:
        key = (g["document_path"]["name"], g["start"]["item"], g["start"]["position"])
        assert key in scores, (query, key)
        assert abs(g["score"] - scores[key]) <= tol, (query, key, g["score"], scores[key])
    assert [g["score"] for g in got] == sorted((g["score"] for g in got), reverse=True)
    got_keys = {(g["document_path"]["name"], g["start"]["item"], g["start"]["position"]) for g in got}
    want_keys = {(h.doc, h.item, h.start) for h in want[:k]}
    cut = want[k - 1].score if len(want) >= k else -math.inf
    for key in got_keys ^ want_keys:  # only near-ties at the cut may differ
        assert abs(scores[key] - cut) <= 2 * tol, (query, key, scores[key], cut)
