"""The playground as one app: every panel passes axe-core, works at phone width in light and dark,
is reachable from the keyboard, and logs no console error."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.browser import LOCAL_PREFIXES, WATCH_VIOLATIONS, load_axe, violations
from tests.support.paths import ROOT

pytestmark = pytest.mark.browser

ARTIFACTS = ROOT / "test-results"
PANELS = ["chat", "documents", "text", "skills", "insides", "models", "endpoint"]


class App:
    """The playground in a context of its own, with what it requested and logged."""

    def __init__(self, browser: Any, site_url: str, width: int, scheme: str) -> None:
        self.context = browser.new_context(viewport={"width": width, "height": 844}, color_scheme=scheme)
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.context.on("request", lambda r: self.requests.append(r.url))
        self.context.add_init_script(WATCH_VIOLATIONS)
        self.page = self.context.new_page()
        self.page.set_default_timeout(180_000)
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.goto(site_url + "index.html?model=tiny-chat&max_tokens=16&temperature=0")
        self.page.wait_for_selector("body[data-ready='true']")

    def axe(self, selector: str) -> list[dict[str, Any]]:
        """axe-core's serious and critical violations inside `selector`."""
        load_axe(self.page)
        found = self.page.evaluate(
            """async (sel) => (await axe.run(document.querySelector(sel),
                 {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice']}}))
                 .violations.map((v) => ({id: v.id, impact: v.impact, help: v.help,
                                          nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' '))}))""",
            selector)
        return [v for v in found if v["impact"] in ("serious", "critical")]


@pytest.fixture(params=[(1280, "light"), (390, "dark")], ids=["wide-light", "phone-dark"])
def app(request: Any, browser: Any, site_url: str) -> Iterator[App]:
    width, scheme = request.param
    a = App(browser, site_url, width, scheme)
    yield a
    a.context.close()


def test_every_panel_passes_axe_fits_the_width_and_logs_no_error(app: App) -> None:
    page = app.page
    width = page.viewport_size["width"]
    scheme = "dark" if width < 600 else "light"
    assert app.axe("header.topbar") == []
    for name in PANELS:
        page.click(f"#tab-{name}")
        panel = page.locator("[role=tabpanel]:not([hidden])")
        assert panel.count() == 1
        assert panel.get_attribute("aria-labelledby") == f"tab-{name}"
        page.wait_for_timeout(300)  # panels that render on show (charts, editors) settle
        assert app.axe("[role=tabpanel]:not([hidden])") == [], name
        # nothing wider than the screen: the page never scrolls sideways
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{name} panel is {overflow}px wider than the {width}px screen"
        page.screenshot(path=str(ARTIFACTS / f"app-{name}-{width}-{scheme}.png"))
    assert app.errors == []
    assert violations(page) == []  # its Content-Security-Policy and Trusted Types blocked nothing
    assert [u for u in app.requests if not u.startswith(LOCAL_PREFIXES)] == []


def test_the_keyboard_reaches_every_panel_and_lists_its_shortcuts(browser: Any, site_url: str) -> None:
    app = App(browser, site_url, 1280, "light")
    page = app.page
    try:
        page.locator("body").press("Alt+2")
        assert page.get_attribute("#tab-documents", "aria-selected") == "true"
        assert page.locator("#docs").is_visible() and page.locator("#panel-chat").is_hidden()
        assert page.evaluate("document.activeElement.id") == "tab-documents"
        page.keyboard.press("ArrowRight")
        assert page.evaluate("document.activeElement.id") == "tab-text"
        assert page.locator("#panel-text").is_visible()
        page.keyboard.press("End")
        assert page.evaluate("document.activeElement.id") == "tab-endpoint"
        page.keyboard.press("Home")
        assert page.evaluate("document.activeElement.id") == "tab-chat"
        # the panel is in the URL: a reload keeps it
        page.keyboard.press("ArrowLeft")
        assert page.evaluate("location.hash") == "#endpoint"
        page.reload()
        page.wait_for_selector("body[data-ready='true']")
        assert page.locator("#panel-endpoint").is_visible()
        # "?" lists the shortcuts; Escape closes the list
        page.locator("body").press("?")
        dialog = page.locator("#shortcuts")
        assert dialog.is_visible()
        listed = dialog.locator("dt").all_inner_texts()
        for keys in ("Escape", "Alt+1", "Alt+7", "?", "/"):
            assert keys in listed
        assert app.axe("#shortcuts") == []
        page.keyboard.press("Escape")
        assert dialog.is_hidden()
        # "/" goes to the prompt; typing "?" there types it
        page.locator("body").press("/")
        assert page.evaluate("document.activeElement.id") == "prompt"
        page.keyboard.type("what?")
        assert page.input_value("#prompt") == "what?" and dialog.is_hidden()
        assert app.errors == []
    finally:
        app.context.close()


def test_escape_stops_a_reply_being_written(browser: Any, site_url: str) -> None:
    app = App(browser, site_url, 1280, "light")
    page = app.page
    try:
        # (the page's URL now ends with the tab's #hash: the query is written anew, not appended to)
        page.goto(site_url + "index.html?model=tiny-chat&max_tokens=900&temperature=0&ignore_eos=1")
        page.wait_for_selector("body[data-ready='true']")
        page.fill("#prompt", "Tell me about the textwrap module.")
        page.press("#prompt", "Enter")
        page.wait_for_function("() => document.querySelector('.message.assistant .body')?.textContent.length > 0")
        page.keyboard.press("Escape")
        msg = page.wait_for_selector(".message.assistant[data-done='true']")
        assert msg.get_attribute("data-finish") == "abort"
        assert page.locator("#send").is_enabled()
        assert app.errors == []
    finally:
        app.context.close()


HOSTILE = ("<img src=http://127.0.0.1:9/raw.png onerror=alert(1)> [go](javascript:alert(2)) "
           "![x](http://127.0.0.1:9/md.png) <script>alert(3)</script> [ok](https://example.com)")


def test_a_reply_the_model_writes_as_hostile_markup_runs_and_loads_nothing(browser: Any, site_url: str) -> None:
    # the model is made to write exactly this by a grammar (the reply format), so the markup comes
    # through the whole path of a real reply: the worker, the stream, the renderer
    app = App(browser, site_url, 1280, "light")
    page = app.page
    dialogs: list[str] = []

    def dismiss(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", dismiss)
    try:
        page.goto(page.url.replace("max_tokens=16", "max_tokens=300"))
        page.wait_for_selector("body[data-ready='true']")
        page.click("#clear")
        if page.locator("#chat-settings details").get_attribute("open") is None:
            page.click("#chat-settings summary")
        page.click("#structure summary")
        page.select_option("#format", "grammar")
        page.fill("#grammar", f'root ::= "{HOSTILE}"')
        page.locator("#grammar").dispatch_event("change")
        page.fill("#prompt", "Say it.")
        page.press("#prompt", "Enter")
        done = page.wait_for_selector(".message.assistant[data-done='true']")
        body = done.query_selector(".body")
        page.wait_for_timeout(1000)
        assert dialogs == []
        assert [u for u in app.requests if ":9/" in u or "example.com" in u] == []
        assert body.query_selector_all("img, script, iframe, [onerror], [src]") == []
        hrefs = [a.get_attribute("href") for a in body.query_selector_all("a")]
        # links only to the web, opened by the user's click (GFM links bare addresses too)
        # (the javascript: link keeps its words, not its address)
        assert "https://example.com" in hrefs and all(h is None or h.startswith(("http://", "https://")) for h in hrefs)
        assert body.query_selector("a:not([href])").inner_text() == "go"
        assert "<script>alert(3)</script>" in body.inner_text()
        assert "[image: x (http://127.0.0.1:9/md.png)]" in body.inner_text()
        assert app.errors == []
        assert violations(page) == []  # the markup reached the page through csi-web's policy, as nodes
    finally:
        app.context.close()
