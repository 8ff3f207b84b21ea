"""The document index under faults: two tabs writing one collection take turns (a Web Lock), and a
worker terminated, or the whole browser killed, at any point of an ingest leaves every acknowledged
document whole and nothing half-written."""

from __future__ import annotations

import json
import os
import random
import signal
import time
from pathlib import Path
from typing import Any

from tests.support.browser import boot_engine

MODEL = "all-minilm-l6-v2"
FAULT_POINTS = int(os.environ.get("CSI_FAULT_POINTS", "2"))  # build.py soak: 10
KILL_POINTS = int(os.environ.get("CSI_KILL_POINTS", "1"))  # build.py soak: 10
REPORT = os.environ.get("CSI_FAULT_REPORT")  # build.py soak: a file to append each test's figures to


def _report(test: str, **figures: Any) -> None:
    print(test, figures)
    if REPORT:
        with open(REPORT, "a", encoding="utf-8") as f:
            f.write(json.dumps({"test": test, **figures}) + "\n")
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
    expected, ingest_ms = _reference(page, docs)
    _call(page, CREATE, _index("faults", "i"))
    rng = random.Random(7)
    kept = []
    for point in range(FAULT_POINTS):
        # point k falls in the k-th of FAULT_POINTS equal stretches of the ingest (and a little after)
        delay = 1.2 * ingest_ms * (point + rng.random()) / FAULT_POINTS
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
        kept.append((len(out["acked"]), _check_and_clear(page, docs, expected, out["acked"], point)))
    context.close()
    _report("worker_terminated", acknowledged_kept=kept, documents_lost=0)


def _reference(page: Any, docs: list[dict[str, Any]]) -> tuple[dict[str, Any], float]:
    """Each document's chunks per index when the same documents are ingested without faults, and how
    many milliseconds that ingest took."""
    _call(page, CREATE, _index("reference", "i"))
    started = time.monotonic()
    _call(page, "return await engine.index.put(arg);", [{**d, "path": {**d["path"], "namespace": "reference"}}
                                                       for d in docs])
    ingest_ms = (time.monotonic() - started) * 1000
    return {d["name"]: d["chunks"] for d in _call(
        page, "return (await engine.index.list({namespace: 'reference', collection: 'c'})).documents;")}, ingest_ms


def _check_and_clear(page: Any, docs: list[dict[str, Any]], expected: dict[str, Any], acked: list[str],
                     point: int) -> int:
    """Every acknowledged document is there, every document there is whole; then delete them."""
    listed = _call(page, "return (await engine.index.list({namespace: 'faults', collection: 'c'})).documents;")
    present = {d["name"]: d["chunks"] for d in listed}
    for name in acked:
        assert name in present, (point, name)
    for name, chunks in present.items():
        assert chunks == expected[name], (point, name, chunks)  # whole, never half-written
    stored = _call(page, "return await engine.csi.documents(arg);",
                   [{"namespace": "faults", "collection": "c", "name": n} for n in sorted(present)])
    by_name = {d["path"]["name"]: d for d in docs}
    assert len(stored) == len(present)
    for doc in stored:
        assert doc["contents"][0]["text"] == by_name[doc["path"]["name"]]["contents"][0]["text"]
        assert doc["metadata"] == by_name[doc["path"]["name"]]["metadata"]
    _call(page, "return await engine.index.delete(arg);",
          [{"namespace": "faults", "collection": "c", "name": n} for n in present])
    return len(present)


def _browser_pid(profile: Path) -> int:
    """The browser process (not a renderer or helper) running on ``profile``."""
    for proc in Path("/proc").iterdir():
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError):
            continue
        if f"--user-data-dir={profile}".encode() in args and not any(a.startswith(b"--type=") for a in args):
            return int(proc.name)
    raise AssertionError(f"no browser process on {profile}")


def test_a_browser_killed_mid_ingest_loses_nothing_acknowledged_and_half_writes_nothing(
        browser_type, browser_type_launch_args, site_url, tmp_path):
    profile = tmp_path / "profile"
    docs = _docs("faults", "k", 60)  # two commits
    rng = random.Random(11)
    expected: dict[str, Any] = {}
    acked: list[str] = []
    kept = []
    ingest_ms = 0.0
    for point in range(KILL_POINTS + 1):
        context = browser_type.launch_persistent_context(str(profile), **browser_type_launch_args)
        page = _page(context, site_url)
        if point == 0:
            expected, ingest_ms = _reference(page, docs)
            _call(page, CREATE, _index("faults", "i"))
        else:  # the browser was killed: what did it keep?
            kept.append((len(acked), _check_and_clear(page, docs, expected, acked, point)))
        if point == KILL_POINTS:
            context.close()
            break
        acked.clear()
        page.expose_function("acked", lambda names: acked.extend(names))
        page.evaluate("(docs) => { window.engine.index.put(docs, {progress: (p) => window.acked(p.documents)}); }",
                      docs)
        # point k falls in the k-th of KILL_POINTS equal stretches of the ingest (and a little after)
        page.wait_for_timeout(1.2 * ingest_ms * (point + rng.random()) / KILL_POINTS)
        os.kill(_browser_pid(profile), signal.SIGKILL)
        try:
            context.close()
        except Exception:  # noqa: BLE001 - the browser is gone; Playwright may or may not notice first
            pass
    _report("browser_killed", ingest_ms=round(ingest_ms), acknowledged_kept=kept, documents_lost=0)
    assert len(kept) == KILL_POINTS
