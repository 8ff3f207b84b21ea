"""Offline use (worker/service_worker.js, web/offline.js): after one visit the playground, the runtime
and a built-in model load with the site's server gone and the browser offline, and answer as they
did online; a new version of the site is picked up on the next visit and the person is told.

The tests serve their own copy of dist/ (links to its files) from a server of their own on a fixed
origin, which they stop and restart, and whose files they change. The site's version is computed
here from the served files, by the rule buildtools/site/assemble.py documents.

`python3 -m tests.browser.test_browser_offline` prints first- and repeat-visit load times."""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from buildtools.site.assemble import write_site_manifest
from buildtools.site.serve import Handler
from tests.support.browser import LOCAL_PREFIXES, tracked_context
from tests.support.paths import DIST, ROOT

pytestmark = pytest.mark.browser

PROMPT = "What does json.dumps do?"
PAGE = "index.html?model={model}&temperature=0&max_tokens=24"
MARKER = "/* offline test: the second version */"


class OwnSite:
    """A copy of dist/ served on one port, that can be stopped and started again on it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/"
        self.paths: list[str] = []  # every path requested, in order
        self.server: http.server.ThreadingHTTPServer | None = None

    def start(self) -> None:
        paths = self.paths

        class Logged(Handler):
            def send_head(self) -> Any:
                paths.append(self.path)
                return super().send_head()

        self.server = http.server.ThreadingHTTPServer(
            ("127.0.0.1", self.port), lambda *a: Logged(*a, directory=str(self.root)))
        self.server.daemon_threads = True
        self.server.handle_error = lambda request, client_address: None  # type: ignore[method-assign]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        assert self.server
        self.server.shutdown()
        self.server.server_close()
        self.server = None

    def change(self, rel: str, text: str) -> None:
        """Replace the served file ``rel`` (a link to dist/) by a file of its own with ``text`` added."""
        path = self.root / rel
        content = path.read_text() + text
        path.unlink()
        path.write_text(content)


@pytest.fixture
def own_site(tmp_path: Path) -> Iterator[OwnSite]:
    root = tmp_path / "site"
    shutil.copytree(DIST, root, copy_function=os.symlink, ignore=shutil.ignore_patterns("bench"))
    site = OwnSite(root)
    site.start()
    yield site
    if site.server:
        site.stop()


def expected_version(root: Path) -> str:
    """The site's version, by site.py's rule: sha256 over "<path> <sha256>\\n" of the files the
    service worker keeps (app shell, runtime, example skills, language data), sorted, then the
    service worker's source."""
    kept = [p for p in root.rglob("*") if p.is_file() and kept_offline(p.relative_to(root).as_posix())]
    lines = sorted(f"{p.relative_to(root).as_posix()} {hashlib.sha256(p.read_bytes()).hexdigest()}\n" for p in kept)
    source = (ROOT / "worker" / "service_worker.js").read_bytes()
    lines.append(f"sw.js {hashlib.sha256(source).hexdigest()}\n")
    return hashlib.sha256("".join(lines).encode()).hexdigest()[:16]


def kept_offline(rel: str) -> bool:
    top = rel.split("/")[0]
    return (rel in ("index.html", "models/models.json") or top in ("web", "app", "wheels", "lang", "skills")
            or (top == "worker" and rel != "worker/service_worker.js")
            or (top == "vendor" and not rel.startswith(("vendor/openai/", "vendor/ai-sdk/"))))


def open_page(browser: Any) -> tuple[Any, Any, list[str]]:
    context, requests = tracked_context(browser)
    page = context.new_page()
    page.set_default_timeout(300_000)
    page.on("console", lambda m: print(f"[console.{m.type}] {m.text}") if m.type in ("error", "warning") else None)
    return context, page, requests


def visit(page: Any, url: str) -> tuple[Any, float]:
    """Open the playground at ``url``; the navigation's response and the seconds until a model is ready."""
    start = time.monotonic()
    response = page.goto(url)
    page.wait_for_selector("body[data-ready='true']")
    return response, time.monotonic() - start


def controlled(page: Any) -> str:
    """Wait until the service worker controls the page (its version stored); that version."""
    page.wait_for_function("() => navigator.serviceWorker.controller !== null && !!document.body.dataset.siteVersion")
    return page.evaluate("document.body.dataset.siteVersion")


def ask(page: Any, prompt: str) -> str:
    done = page.locator(".message.assistant[data-done='true']")
    before = done.count()
    page.fill("#prompt", prompt)
    page.click("#send")
    done.nth(before).wait_for()
    return done.nth(before).locator(".body").inner_text()


def test_after_one_visit_the_app_and_tiny_chat_load_and_answer_with_no_network(browser, own_site):
    context, page, requests = open_page(browser)
    url = own_site.url + PAGE.format(model="tiny-chat")
    first, first_s = visit(page, url)
    assert not first.from_service_worker
    assert controlled(page) == expected_version(own_site.root)
    online = ask(page, PROMPT)
    assert online.strip()

    own_site.stop()  # nothing answers at the site's origin any more
    context.set_offline(True)
    failed: list[str] = []
    context.on("requestfailed", lambda r: failed.append(r.url))
    again, again_s = visit(page, url)
    assert again.from_service_worker
    assert again.status == 200
    assert page.evaluate("crossOriginIsolated")  # the stored page keeps its COOP/COEP headers: threads
    page.click("#clear")  # the reload reopened the conversation: ask in a new one, as the first time
    assert ask(page, PROMPT) == online
    assert page.locator(".update-notice").count() == 0
    assert failed == []  # everything the app asks for comes from the browser's storage
    (ROOT / "test-results").mkdir(exist_ok=True)
    page.screenshot(path=str(ROOT / "test-results" / "offline.png"))
    print(f"\ntiny-chat ready: first visit {first_s:.1f} s, offline repeat visit {again_s:.1f} s")
    assert [u for u in requests if not u.startswith(LOCAL_PREFIXES)] == []
    context.close()


def test_a_new_version_is_picked_up_on_the_next_visit_and_the_person_is_told(browser, own_site):
    context, page, requests = open_page(browser)
    url = own_site.url + PAGE.format(model="tiny-chat")
    visit(page, url)
    first = controlled(page)
    assert first == expected_version(own_site.root)
    assert page.locator(".update-notice").count() == 0

    own_site.change("app/styles/base.css", "\n" + MARKER + "\n")
    second = write_site_manifest(own_site.root, ROOT / "worker" / "service_worker.js")
    assert second == expected_version(own_site.root) != first
    served = len(own_site.paths)

    # the next visit: the page comes from the stored version, the new one installs and takes over
    visit(page, url)
    notice = page.locator(".update-notice")
    notice.wait_for()
    assert f"csi-web was updated (version {second}). Reload to use it." in notice.inner_text()
    assert notice.get_attribute("role") == "status"
    (ROOT / "test-results").mkdir(exist_ok=True)
    page.screenshot(path=str(ROOT / "test-results" / "offline-update.png"))
    assert page.evaluate("document.body.dataset.siteVersion") == second
    stored = page.evaluate("""async (names) => Promise.all(names.map(
                                 async (cacheName) => !!(await caches.match('/index.html', {cacheName}))))""",
                           [f"csi-site-{first}", f"csi-site-{second}"])
    assert stored == [False, True]  # the version before is deleted
    fetched = [p.split("?")[0] for p in own_site.paths[served:]]
    assert "/app/styles/base.css" in fetched
    assert "/vendor/pyodide/pyodide.asm.wasm" not in fetched  # unchanged files come from the version before

    # the visit after (the notice's Reload): the new version's files, and no notice again
    with page.expect_navigation():
        notice.get_by_role("button", name="Reload").click()
    page.wait_for_selector("body[data-ready='true']")
    assert controlled(page) == second
    assert MARKER in page.evaluate("async () => (await fetch('/app/styles/base.css')).text()")
    assert page.locator(".update-notice").count() == 0
    manifest = json.loads((own_site.root / "site-manifest.json").read_text())
    assert manifest["files"]["app/styles/base.css"] == hashlib.sha256(
        (own_site.root / "app/styles/base.css").read_bytes()).hexdigest()
    assert [u for u in requests if not u.startswith(LOCAL_PREFIXES)] == []
    context.close()


def measure(browser: Any, site_url: str, model: str) -> dict[str, float]:
    """Seconds from navigation to a ready model: first visit, repeat visit online, repeat visit offline."""
    context, page, _ = open_page(browser)
    url = site_url + PAGE.format(model=model)
    figures = {"first": visit(page, url)[1]}
    controlled(page)
    figures["repeat"] = visit(page, url)[1]
    context.set_offline(True)
    figures["repeat_offline"] = visit(page, url)[1]
    context.close()
    return figures


if __name__ == "__main__":
    from playwright.sync_api import sync_playwright

    from buildtools.site.serve import serve_in_thread
    from tests.support.browser import CHROMIUM, CHROMIUM_ARGS

    server, base = serve_in_thread(DIST)
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        for model_id in ("tiny-chat", "smollm2-135m-instruct"):
            print(model_id, {k: round(v, 2) for k, v in measure(chromium, base, model_id).items()})
        chromium.close()
    server.shutdown()
