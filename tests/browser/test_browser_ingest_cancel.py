"""Cancelling a long ingest in the browser: through `engine.index.put(docs, {signal})`, through
interruptGenerate(), and from the documents panel's Cancel button. What was committed stays whole
(chunk counts from semantic-text-splitter, the reference the index chunks like), search works, and a
second full ingest works."""

from __future__ import annotations

import random
from functools import cache
from typing import Any

import pytest

from tests.support.browser import LOCAL_PREFIXES, open_engine_page

pytestmark = pytest.mark.browser

WORDS = ("river stone light garden window morning letter market winter bridge music paper summer forest "
         "engine harbor valley cloud silver kitchen station village mountain candle travel orange season "
         "doctor language animal pocket thunder library island machine teacher blanket harvest ocean").split()
N_DOCS = 40


def marker(i: int) -> str:
    return f"keyword{i:02d}x"


@cache
def texts() -> dict[str, str]:
    """40 generated texts of about 2,500 characters, each with a word of its own."""
    rng = random.Random(40)
    out = {}
    for i in range(N_DOCS):
        sentences = [f"This note is about {marker(i)} and the {rng.choice(WORDS)}."]
        while sum(map(len, sentences)) < 2500:
            words = [rng.choice(WORDS) for _ in range(rng.randrange(6, 14))]
            sentences.append(" ".join(words).capitalize() + ".")
        out[f"note-{i:02d}.txt"] = " ".join(sentences)
    return out


def reference_chunks(text: str, capacity: int = 128) -> int:
    """How many chunks the text-splitter crate cuts ``text`` into (all-minilm-l6-v2 tokens)."""
    from semantic_text_splitter import TextSplitter
    from tokenizers import Tokenizer

    from tests.support.paths import MODELS

    tokenizer = Tokenizer.from_file(str(MODELS / "all-minilm-l6-v2" / "tokenizer.json"))
    return len(TextSplitter.from_huggingface_tokenizer(tokenizer, capacity=capacity).chunks(text))


def wire(collection: dict[str, str]) -> list[dict[str, Any]]:
    return [{"path": {**collection, "name": n}, "contents": [{"text": t}], "metadata": None}
            for n, t in texts().items()]


STOPPED_PUT = """
  const seen = [];
  const ctrl = new AbortController();
  try {
    await engine.index.put(arg.docs, {signal: ctrl.signal, progress: (p) => {
      if (p.stage !== 'index') return;
      seen.push(...p.documents);
      if (arg.how === 'signal') ctrl.abort(); else engine.interruptGenerate();
    }});
    return {resolved: true, seen};
  } catch (e) {
    return {name: e.name, message: e.message, committed: e.committed ?? null, seen};
  }"""


@pytest.mark.parametrize("how", ["signal", "interrupt"])
def test_a_put_stopped_mid_way_rejects_with_what_it_committed(browser, site_url, how):
    ep = open_engine_page(browser, site_url, ["tiny-chat", "all-minilm-l6-v2"])
    where = {"namespace": "cancel", "collection": how}
    before = ep.greedy()
    ep.ok("return await engine.index.createIndex(arg);", {**where, "index": "default", "hybrid": True})
    out = ep.ok(STOPPED_PUT, {"docs": wire(where), "how": how}, timeout=600_000)
    assert "resolved" not in out, "the ingest finished before it was stopped"
    assert out["name"] == "AbortError", out
    seen = out["seen"]
    assert 0 < len(seen) < N_DOCS
    assert seen == list(texts())[:len(seen)]  # committed in order
    want = {n: reference_chunks(texts()[n]) for n in seen}
    assert out["committed"] == {"documents": seen, "chunks": sum(want.values())}
    assert f"{len(seen)} of {N_DOCS} documents were committed" in out["message"]
    assert ("interruptGenerate()" in out["message"]) == (how == "interrupt")

    listed = ep.ok("return await engine.index.list(arg);", where)["documents"]
    assert {d["name"]: d["chunks"] for d in listed} == {n: {"default": c} for n, c in want.items()}
    first, missing = 0, len(seen)  # a committed document is found; one that was not written is not
    hits = ep.ok("return await engine.csi.search(arg);", [
        {"index_path": {**where, "index": "default"}, "query": marker(i), "max_results": 3} for i in (first, missing)])
    assert hits[0][0]["document_path"]["name"] == seen[0]
    assert all(h["document_path"]["name"] in seen for h in hits[1])
    # the engine goes on: the same generation as before, and the whole set goes in
    assert ep.greedy() == before
    done = ep.ok("return await engine.index.put(arg);", wire(where), timeout=600_000)
    assert done == {"documents": N_DOCS, "chunks": sum(reference_chunks(t) for t in texts().values())}
    assert ep.foreign_requests() == []
    ep.page.context.close()


def test_documents_panel_cancels_an_ingest_and_lists_what_went_in(browser, site_url):
    from tests.support.paths import ROOT

    context = browser.new_context()
    requests: list[str] = []
    context.on("request", lambda r: requests.append(r.url))
    page = context.new_page()
    page.set_default_timeout(300_000)
    page.goto(site_url + "index.html?model=tiny-chat")
    page.wait_for_selector("body[data-ready='true']")
    page.click("#tab-documents")
    page.wait_for_selector("#doc-add:enabled")
    assert page.locator("#doc-cancel").is_hidden()
    files = [{"name": n, "mimeType": "text/plain", "buffer": t.encode()} for n, t in texts().items()]

    page.set_input_files("#doc-files", files)
    # the first batch is committed: cancel
    page.wait_for_function(
        "() => /Indexing [1-9][0-9]* \\/ 40/.test(document.getElementById('doc-ingest-text').textContent)")
    assert page.locator("#doc-cancel").is_visible()
    page.click("#doc-cancel")
    page.wait_for_selector("#doc-add:enabled")
    status = page.locator("#doc-status").inner_text()
    listed = {li.get_attribute("data-name"): li.query_selector(".chunks").inner_text()
              for li in page.query_selector_all("#doc-list li")}
    n = len(listed)
    assert 0 < n < N_DOCS, status
    assert status.startswith(f"Cancelled: {n} of 40 documents went in"), status
    assert list(listed) == list(texts())[:n]  # the first n, each whole
    for name, shown in listed.items():
        k = reference_chunks(texts()[name])
        assert shown == f"{k} chunk{'s' if k != 1 else ''}", name
    assert page.locator("#doc-ingest").is_hidden()
    (ROOT / "test-results").mkdir(exist_ok=True)
    page.locator("#docs").screenshot(path=str(ROOT / "test-results" / "documents-cancelled.png"))

    # search finds a committed document by its own word
    page.fill("#doc-query", marker(n - 1))
    page.click("#doc-search")
    page.wait_for_selector("#doc-results li")
    assert page.locator("#doc-results li").first.get_attribute("data-name") == list(texts())[n - 1]

    # a second, full ingest
    page.wait_for_selector("#doc-add:enabled")
    page.set_input_files("#doc-files", files)
    page.wait_for_function("() => document.getElementById('doc-status').textContent.startsWith('Added 40 documents')")
    page.wait_for_selector("#doc-add:enabled")
    listed = {li.get_attribute("data-name"): li.query_selector(".chunks").inner_text()
              for li in page.query_selector_all("#doc-list li")}
    assert set(listed) == set(texts())
    assert page.locator("#doc-count").inner_text() == "(40)"
    assert [u for u in requests if not u.startswith(LOCAL_PREFIXES)] == []
    context.close()


HUGE_STOPPED = """
  let s = 7;  // seeded: the same text every run
  const rnd = () => { s = (s * 1103515245 + 12345) % 2147483648; return s / 2147483648; };
  const prose = (chars) => {
    const out = []; let n = 0;
    while (n < chars) {
      const k = 6 + Math.floor(rnd() * 8); const w = [];
      for (let i = 0; i < k; i++) w.push(arg.words[Math.floor(rnd() * arg.words.length)]);
      const sentence = w.join(' ') + (rnd() < 0.15 ? '.\\n\\n' : '. ');
      out.push(sentence); n += sentence.length;
    }
    return out.join('');
  };
  const doc = (collection, name, chars) => ({path: {namespace: arg.namespace, collection, name},
                                             contents: [{text: prose(chars)}], metadata: null});
  const stopMs = async (write, how) => {  // stop the write arg.afterMs in; how long until it ends
    const ctrl = new AbortController();
    const p = write(ctrl.signal);
    await new Promise((r) => setTimeout(r, arg.afterMs));
    const t = performance.now();
    if (how === 'signal') ctrl.abort(); else engine.interruptGenerate();
    const out = await p.then(() => ({resolved: true}), (e) => ({name: e.name, message: e.message}));
    return {...out, ms: performance.now() - t};
  };
  const huge = doc('put', 'huge', arg.chars);
  await engine.index.createIndex({namespace: arg.namespace, collection: 'put', index: 'ix'});
  await engine.index.put([doc('put', 'small', 1500)]);
  const put = await stopMs((signal) => engine.index.put([huge], {signal}), 'signal');
  await engine.index.put([{...huge, path: {...huge.path, collection: 'create'}}]);  // no index: stored only
  const create = await stopMs((signal) => engine.index.createIndex(
    {namespace: arg.namespace, collection: 'create', index: 'ix'}, {signal}), 'interrupt');
  const listed = async (collection) => Object.fromEntries((await engine.index.list(
    {namespace: arg.namespace, collection})).documents.map((d) => [d.name, d.chunks]));
  return {put, create, listedPut: await listed('put'), listedCreate: await listed('create')};"""


def test_a_write_of_a_megabyte_document_stops_within_about_a_second(engine_page):
    out = engine_page.ok(HUGE_STOPPED, {"namespace": "huge-stop", "words": list(WORDS), "chars": 3_000_000,
                                        "afterMs": 2500}, timeout=120_000)
    print(f"3 MB document: index.put ended {out['put']['ms']:.0f} ms after its signal aborted, "
          f"index.createIndex {out['create']['ms']:.0f} ms after interruptGenerate()")
    assert out["put"]["name"] == "AbortError", out["put"]
    assert "0 of 1 documents were committed" in out["put"]["message"]
    assert out["create"]["name"] == "AbortError" and "interruptGenerate()" in out["create"]["message"], out["create"]
    # 0.03-0.75 s in most runs on a loaded 2-core machine, up to 3.1 s in a few; 8-10 s when one
    # embedding call held 32 chunks, minutes when a batch was cut before its first check (5 s: room
    # for a CI machine loaded twice as much; the CPython tests hold the stop to 1.5 s)
    assert out["put"]["ms"] < 5000 and out["create"]["ms"] < 5000, out
    assert list(out["listedPut"]) == ["small"]  # the huge one not written at all
    assert out["listedCreate"] == {"huge": {}}  # stored, and none of its chunks
