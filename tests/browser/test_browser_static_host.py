"""Any base path, any static host: dist/ served by a plain static server that sends no COOP/COEP
headers (only right MIME types), at `/` and under `/a/b/` (a GitHub Pages project site). The
playground answers with the real model; the first load is not cross-origin isolated, the page
reloads itself once when the service worker takes over, and is isolated from then on (its worker
too: threads, and Python's interrupts through a SharedArrayBuffer); it answers the same offline;
`<base>v1/` answers the official `openai` client; every request the browser makes stays under the
base on 127.0.0.1."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Error as PlaywrightError

from buildtools.site.serve import PlainHandler
from buildtools.soak.interrupts import SPIN
from tests.browser.test_browser_offline import ask
from tests.support.browser import LOCAL_PREFIXES, tracked_context
from tests.support.paths import DIST

pytestmark = pytest.mark.browser

MODEL = "smollm2-135m-instruct"
PAGE = f"index.html?model={MODEL}&temperature=0&max_tokens=24"
QUESTION = "What is the capital of France?"

# Each document of the tab notes whether it was isolated and controlled, in the tab's sessionStorage.
RECORD_LOADS = """
  if (window.top === window) {
    const loads = JSON.parse(sessionStorage.getItem('test-loads') ?? '[]');
    loads.push({isolated: self.crossOriginIsolated, controlled: !!navigator.serviceWorker?.controller});
    sessionStorage.setItem('test-loads', JSON.stringify(loads));
  }
"""

OPENAI = """async ([model, question]) => {
  const { OpenAI } = await import(new URL('vendor/openai/index.mjs', document.baseURI).href);
  const client = new OpenAI({baseURL: new URL('v1', document.baseURI).href, apiKey: 'unused',
                             dangerouslyAllowBrowser: true, maxRetries: 0});
  for (let i = 0; i < 100 && !(await fetch(new URL('v1/models', document.baseURI))).ok; i++) {
    await new Promise((ok) => setTimeout(ok, 100));  // the page offers its engine once its model is loaded
  }
  const r = await client.chat.completions.create({model, temperature: 0, max_tokens: 24,
                                                  messages: [{role: 'user', content: question}]});
  return r.choices[0].message.content;
}"""

# A skill that keeps Python busy, past a 1 s time limit: only Python's interrupt, which the page
# trips through a SharedArrayBuffer (cross-origin isolation), stops it; otherwise the page gives up
# on it 3 s past its limit and the worker stays busy.
INTERRUPT = """async ([spin, site]) => {
  const { CreateWebWorkerEngine } = await import(new URL('web/engine.js', site).href);
  const engine = await CreateWebWorkerEngine(
    new Worker(new URL('worker/worker.js', site), {type: 'module'}), ['tiny-chat']);
  await engine.skills.register({name: 'spin', source: spin});
  const t = performance.now();
  const stopped = await engine.skills.run('spin', {}, {timeLimitMs: 1000})
    .then(() => null, (e) => ({name: e.name, message: e.message, ms: performance.now() - t}));
  const after = await engine.completions.create({prompt: 'The json module', max_tokens: 4, temperature: 0});
  return {shared: engine.interrupts.interruptBuffer !== null, stopped, after: after.choices[0].finish_reason};
}"""


class PlainHost:
    """A folder served as a static host serves it (buildtools/site/serve.py's PlainHandler: MIME types, no
    COOP/COEP/CORP), noting every path asked for."""

    def __init__(self, root: Path) -> None:
        paths: list[str] = []

        class Logged(PlainHandler):
            def send_head(self) -> Any:
                paths.append(self.path)
                return super().send_head()

        self.paths = paths  # in order
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), lambda *a: Logged(*a, directory=str(root)))
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def plain_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PlainHost]:
    """dist/ at `/` (links to its top-level entries) and at `/a/b/` (a link to it)."""
    root = tmp_path_factory.mktemp("static-host")
    for entry in DIST.iterdir():
        if entry.name != "bench":
            (root / entry.name).symlink_to(entry)
    (root / "a").mkdir()
    (root / "a" / "b").symlink_to(DIST)
    host = PlainHost(root)
    yield host
    host.server.shutdown()
    host.server.server_close()


def wait_ready(page: Any, timeout_s: float = 240) -> None:
    """Wait, across the page's own reload, until it is isolated and its model is ready."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if page.evaluate("crossOriginIsolated && document.body?.dataset.ready === 'true'"):
                return
        except PlaywrightError:
            pass  # the page reloaded while it was asked
        assert time.monotonic() < deadline, "the page did not become isolated with its model ready"
        time.sleep(0.25)


class Laps:
    """Seconds each part of a test took, for its printout."""

    def __init__(self) -> None:
        self.start = time.monotonic()
        self.parts: list[str] = []

    def __call__(self, what: str) -> None:
        now = time.monotonic()
        self.parts.append(f"{what} {now - self.start:.1f} s")
        self.start = now

    def __str__(self) -> str:
        return ", ".join(self.parts)


def loads(page: Any) -> list[dict[str, bool]]:
    return page.evaluate("JSON.parse(sessionStorage.getItem('test-loads'))")


def busy_skill_is_interrupted(context: Any, site: str) -> None:
    """A new page of the site, isolated by its service worker: its engine's worker is isolated too,
    and Python's interrupts (through a SharedArrayBuffer) stop a busy skill at its time limit."""
    other = context.new_page()
    other.set_default_timeout(240_000)
    other.goto(site + "web/engine.js")  # a document of the site, served by its service worker
    assert other.evaluate("crossOriginIsolated")
    out = other.evaluate(INTERRUPT, [SPIN, site])
    assert out["shared"], out
    assert out["stopped"]["name"] == "SkillError" and "time limit of 1 s" in out["stopped"]["message"], out
    assert "abandoned" not in out["stopped"]["message"] and out["stopped"]["ms"] < 3000, out
    assert out["after"] in ("stop", "length")
    assert other.workers and all(w.evaluate("self.crossOriginIsolated") for w in other.workers)
    other.close()


@pytest.mark.parametrize("base", ["", "a/b/"], ids=["root", "sub-path"])
def test_the_site_isolates_itself_answers_offline_and_serves_v1_under_its_base(
        browser: Any, plain_host: PlainHost, base: str) -> None:
    site = plain_host.url + base
    served = len(plain_host.paths)
    laps = Laps()
    context, requests = tracked_context(browser)
    page = context.new_page()
    page.set_default_timeout(240_000)
    page.on("console", lambda m: print(f"[console.{m.type}] {m.text}") if m.type in ("error", "warning") else None)
    page.add_init_script(RECORD_LOADS)
    first = page.goto(site + PAGE)
    assert first is not None and "cross-origin-embedder-policy" not in first.headers  # the host sends none
    wait_ready(page)
    # not isolated, then the one reload of its own once the service worker controls it
    assert loads(page) == [{"isolated": False, "controlled": False}, {"isolated": True, "controlled": True}]
    laps("isolated after its reload")
    answer = ask(page, QUESTION)
    assert "Paris" in answer, answer
    laps("answered")

    # v1/ under the base, through the official client
    reply = page.evaluate(OPENAI, [MODEL, QUESTION])
    assert "Paris" in reply, reply
    assert any(u.startswith(site + "v1/chat/completions") for u in requests)
    page.click("#tab-endpoint")
    assert page.locator("#endpoint-url").inner_text() == site + "v1"
    page.click("#tab-chat")
    laps("v1/ answered")

    if base:  # (once: the same service worker isolates the site at either base)
        busy_skill_is_interrupted(context, site)
        laps("a busy skill interrupted")

    # offline: the stored site, isolated by the service worker, answers the same
    context.set_offline(True)
    again = page.reload()
    assert again is not None and again.from_service_worker
    wait_ready(page)
    assert loads(page)[-1] == {"isolated": True, "controlled": True} and len(loads(page)) == 3
    page.click("#clear")
    assert ask(page, QUESTION) == answer
    laps("answered offline")
    print(f"\n{base or '/'}: {laps}")

    assert [u for u in requests if not u.startswith(LOCAL_PREFIXES)] == []
    # nothing is asked of the host outside the site's base (but the browser's own /favicon.ico, for
    # the page that shows web/engine.js: a script has no <link rel="icon">)
    outside = [p for p in plain_host.paths[served:] if not p.startswith("/" + base) and p != "/favicon.ico"]
    assert outside == []
    context.close()
