"""No script but ours: the playground's Content-Security-Policy runs only the site's own modules and
its import map, and its Trusted Types let a string reach a DOM sink only through csi-web's one
policy. The whole playground runs with nothing blocked; a sink planted in the page is blocked."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.browser import WATCH_VIOLATIONS, violations

pytestmark = pytest.mark.browser

HOSTILE_REPLY = "<img src=x onerror=window.pwned.push('reply')> <script>window.pwned.push('reply2')</script> `ok`"


class Playground:
    def __init__(self, browser: Any, site_url: str, query: str) -> None:
        self.context = browser.new_context()
        self.context.add_init_script(WATCH_VIOLATIONS + "window.pwned = [];")
        self.page = self.context.new_page()
        self.page.set_default_timeout(180_000)
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.goto(site_url + "index.html?model=tiny-chat&temperature=0&" + query)
        self.page.wait_for_selector("body[data-ready='true']")


@pytest.fixture
def playground(browser: Any, site_url: str) -> Iterator[Playground]:
    p = Playground(browser, site_url, "max_tokens=300")
    yield p
    p.context.close()


def test_every_panel_runs_with_nothing_blocked(playground: Playground) -> None:
    page = playground.page
    # a reply the model is made to write as hostile markup (a grammar), rendered as Markdown
    page.click("#structure summary")
    page.select_option("#format", "grammar")
    page.fill("#grammar", 'root ::= "' + HOSTILE_REPLY.replace('"', '\\"') + '"')
    page.locator("#grammar").dispatch_event("change")
    page.fill("#prompt", "Say it.")
    page.press("#prompt", "Enter")
    body = page.wait_for_selector(".message.assistant[data-done='true'] .body")
    assert "<script>" in body.inner_text() and body.query_selector("code") is not None
    # the skill editor: typed into, searched, its errors marked on their line, an example registered
    page.click("#tab-skills")
    page.click("#skill-editor .cm-content")
    page.keyboard.press("Control+End")
    page.keyboard.insert_text("\ndef broken(:\n    '<img src=x onerror=alert(1)>'\n")
    page.keyboard.press("Control+s")
    page.wait_for_selector("#skill-editor .cm-lintRange-error")
    page.keyboard.press("Control+f")
    page.wait_for_selector(".cm-search input[name=search]").fill("img")
    page.keyboard.press("Escape")
    page.click("button[data-example='summarize']")
    page.click("#skill-register")
    page.wait_for_selector("#skill-status[data-state='ok']")
    # the insides' charts, with a tooltip (drawn as text on the canvas)
    page.click("#tab-insides")
    page.fill("#insides-prompt", "{b|bold} <b>tag</b>")
    page.click("#insides-show")
    page.wait_for_selector("#insides-charts[data-tokens]")
    box = page.locator("#insides-0").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_timeout(300)
    for name in ("documents", "text", "models", "endpoint", "chat"):
        page.click(f"#tab-{name}")
        page.wait_for_timeout(300)
    # the site's service worker was registered through the policy too
    script = page.evaluate("async () => (await navigator.serviceWorker.getRegistration())?.active?.scriptURL")
    assert script is not None and script.endswith("/sw.js")
    assert page.evaluate("window.pwned") == []
    assert violations(page) == []
    assert playground.errors == []


PLANT = """async () => {
  const { trustedScriptURL, withSanitizerPolicy } = await import('csi-web');
  const box = document.createElement('div');
  document.body.append(box);
  const out = {};
  const attempt = (name, f) => { try { f(); out[name] = 'ran'; } catch (e) { out[name] = e.name; } };
  attempt('innerHTML', () => { box.innerHTML = '<img src=x onerror="window.pwned.push(1)">'; });
  attempt('emptied by innerHTML', () => { box.innerHTML = ''; });
  attempt('outerHTML', () => { box.outerHTML = '<b>x</b>'; });
  attempt('insertAdjacentHTML', () => box.insertAdjacentHTML('beforeend', '<img src=x onerror="pwned.push(2)">'));
  attempt('DOMParser', () => new DOMParser().parseFromString('<b>x</b>', 'text/html'));
  attempt('script.text', () => { document.createElement('script').text = 'window.pwned.push(3)'; });
  attempt('script.src', () => { document.createElement('script').src = 'http://127.0.0.1:9/x.js'; });
  attempt('Worker', () => new Worker('worker/worker.js', { type: 'module' }));
  attempt('eval', () => eval('window.pwned.push(4)'));
  attempt('Function', () => new Function('window.pwned.push(5)')());
  attempt('another policy', () => trustedTypes.createPolicy('mine', { createHTML: (s) => s }));
  attempt('a second csi-web', () => trustedTypes.createPolicy('csi-web', { createHTML: (s) => s }));
  attempt('a script of another origin', () => trustedScriptURL('http://127.0.0.1:9/x.js'));
  attempt('markup out of the sanitizer', () => withSanitizerPolicy((p) => p.createHTML('<b>x</b>')));
  attempt('the policy kept past its sanitizer', () => {
    const kept = withSanitizerPolicy((p) => p);
    box.innerHTML = kept.createHTML('<img src=x onerror="window.pwned.push(6)">');
  });
  attempt('script.textContent', () => { document.createElement('script').textContent = 'window.pwned.push(7)'; });
  // an inline script made of a text node: its text is no TrustedScript, and no hash allows it
  const inline = document.createElement('script');
  inline.append(document.createTextNode('window.pwned.push(8)'));
  document.body.append(inline);
  // what the policy allows: a worker of the site
  attempt('a worker of the site',
          () => new Worker(trustedScriptURL('worker/worker.js'), { type: 'module' }).terminate());
  await new Promise((r) => setTimeout(r, 500));
  return { out, pwned: window.pwned, children: box.childNodes.length };
}"""


def test_a_string_planted_in_a_sink_is_blocked_and_reported(playground: Playground) -> None:
    page = playground.page
    assert violations(page) == []
    got = page.evaluate(PLANT)
    out = got.pop("out")
    assert out.pop("a worker of the site") == "ran"
    # a string is no TrustedScript, and the page allows no eval
    assert (out.pop("eval"), out.pop("Function")) == ("EvalError", "EvalError")
    assert out == {name: "TypeError" for name in out}, out
    assert got == {"pwned": [], "children": 0}
    found = violations(page)
    # Trusted Types for the sinks, the policy list for the foreign policies
    assert {v.split(" ")[0] for v in found} == {"require-trusted-types-for", "trusted-types"}, found
    for sample in ("Element innerHTML", "Worker constructor", "HTMLScriptElement src", "(mine)", "(csi-web)",
                   "window.pwned.push(8)"):
        assert any(sample in v for v in found), (sample, found)


def test_inline_script_the_policy_does_not_hash_is_refused(browser: Any, site_url: str) -> None:
    """The page as served, with its import map changed by one space, an inline script and an inline
    handler added: none of them runs (so neither does the app, its imports unmapped)."""
    context = browser.new_context()
    context.add_init_script(WATCH_VIOLATIONS + "window.pwned = [];")

    def tamper(route: Any) -> None:
        html = route.fetch().text()
        html = html.replace('"imports": {', '"imports":  {', 1)
        html = html.replace("<body>", "<body onload=\"window.pwned.push('attr')\">", 1)
        html = html.replace("</head>", "<script>window.pwned.push('inline')</script></head>", 1)
        route.fulfill(body=html, headers={"content-type": "text/html"})

    try:
        page = context.new_page()
        page.route("**/index.html*", tamper)
        page.goto(site_url + "index.html?model=tiny-chat")
        page.wait_for_timeout(2000)
        assert page.evaluate("window.pwned") == []
        assert page.evaluate("document.body.dataset.ready") is None
        found = violations(page)
        blocked = sorted(v.split(" ")[0] for v in found)
        assert blocked == ["script-src-attr", "script-src-elem", "script-src-elem"], found
    finally:
        context.close()
