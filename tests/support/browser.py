"""Debian's Chromium, and a page with ``window.engine`` created by web/engine.js."""

from __future__ import annotations

import json
from typing import Any

from tests.support.paths import ROOT

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]
LOCAL_PREFIXES = ("http://127.0.0.1:", "blob:", "data:")


class EnginePage:
    """A page with `window.engine` created by web/engine.js, and every request it made."""

    def __init__(self, page: Any, requests: list[str]) -> None:
        self.page = page
        self.requests = requests

    def call(self, script: str, arg: Any = None, timeout: float = 120_000) -> Any:
        """Evaluate an async function body `(engine, arg) => ...`; engine errors come back as dicts."""
        # page.evaluate itself never times out: a hang in the worker must fail the test, not block it
        out = self.page.evaluate(
            """async ([body, arg, ms]) => {
                 const fn = new Function('engine', 'arg', `return (async () => { ${body} })()`);
                 const timeout = new Promise((_, reject) => setTimeout(
                   () => reject(Object.assign(new Error(`no answer within ${ms} ms`), {name: 'TestTimeout'})), ms));
                 try { return {ok: true, value: await Promise.race([fn(window.engine, arg), timeout])}; }
                 catch (e) { return {ok: false, error: {name: e.name, message: e.message, param: e.param ?? null}}; }
               }""",
            [script, arg, timeout],
        )
        assert out["ok"] or out["error"]["name"] != "TestTimeout", out["error"]["message"]
        return out

    def ok(self, script: str, arg: Any = None, timeout: float = 120_000) -> Any:
        out = self.call(script, arg, timeout)
        assert out["ok"], f"engine call failed: {json.dumps(out['error'])}"
        return out["value"]

    def greedy(self) -> str:
        """tiny-chat's greedy continuation of a fixed prompt: what an engine that is unharmed answers."""
        return self.ok("""return (await engine.completions.create({prompt: 'The json module', max_tokens: 8,
                                                                      temperature: 0})).choices[0].text;""")

    def foreign_requests(self) -> list[str]:
        return [u for u in self.requests if not u.startswith(LOCAL_PREFIXES)]


def tracked_context(browser: Any) -> tuple[Any, list[str]]:
    """A new browser context, and the URLs of every request made in it (filled as they happen)."""
    context = browser.new_context()
    requests: list[str] = []
    context.on("request", lambda r: requests.append(r.url))
    return context, requests


def open_engine_page(browser: Any, site_url: str, models: list[str], device: str = "wasm") -> EnginePage:
    context, requests = tracked_context(browser)
    page = context.new_page()
    page.on("console", lambda m: print(f"[console.{m.type}] {m.text}") if m.type in ("error", "warning") else None)
    page.set_default_timeout(300_000)
    boot_engine(page, site_url, models, device)
    return EnginePage(page, requests)


def boot_engine(page: Any, site_url: str, models: list[str], device: str = "wasm") -> None:
    """(Re)load the page and create ``window.engine`` in a new worker."""
    page.goto(site_url + "web/engine.js")  # a same-origin document; index.html would start its own engine
    page.evaluate(
        """async ([models, device]) => {
             const { CreateWebWorkerEngine } = await import('/web/engine.js');
             window.progress = [];
             const worker = new Worker('/worker/worker.js', { type: 'module' });
             window.engine = await CreateWebWorkerEngine(worker, models, {
               device, initProgressCallback: (p) => window.progress.push(p) });
           }""",
        [models, device],
    )


# Every Content-Security-Policy and Trusted Types violation of a document, kept in window.__violations
# (add it with context.add_init_script before the page loads): what the browser blocked, and where.
WATCH_VIOLATIONS = """
window.__violations = [];
document.addEventListener('securitypolicyviolation', (e) => window.__violations.push(
  `${e.effectiveDirective} blocked ${e.blockedURI} (${e.sample}) at ${e.sourceFile}:${e.lineNumber}`));
"""


def violations(page: Any) -> list[str]:
    """The policy violations the page's document has seen (WATCH_VIOLATIONS must be on its context)."""
    found: list[str] = page.evaluate("window.__violations")
    return found


def load_axe(page: Any) -> None:
    """axe-core in the page, evaluated by the test's driver: a <script> tag would be an inline
    script, which the playground's Content-Security-Policy refuses."""
    if not page.evaluate("typeof window.axe === 'object'"):
        page.evaluate((ROOT / "node_modules" / "axe-core" / "axe.min.js").read_text())
