"""The Endpoint panel: it shows this tab serving /v1/ with the loaded model, as /v1/models lists it;
each Copy button puts its snippet on the clipboard; the openai-client and fetch snippets, run from
another page of the site as they were copied, get the reply HF transformers gives for the same greedy request."""

from __future__ import annotations

import pytest

from tests.support.browser import LOCAL_PREFIXES
from tests.support.paths import ROOT
from tests.support.reference import hf_chat, hf_greedy_ids

pytestmark = pytest.mark.browser

# what the snippets ask: a greedy reply of at most 32 tokens
MESSAGES = [{"role": "user", "content": "Say hello."}]

RUN_MODULE = """async (code) => {
  const logged = [];
  const log = console.log;
  console.log = (...args) => logged.push(args.map(String).join(' '));
  try {
    await import(URL.createObjectURL(new Blob([code], {type: 'text/javascript'})));
    return {logged};
  } catch (e) {
    return {error: `${e.name}: ${e.message}`, logged};
  } finally {
    console.log = log;
  }
}"""


def test_endpoint_panel_shows_the_service_and_its_snippets_work(browser, site_url):
    context = browser.new_context(permissions=["clipboard-read", "clipboard-write"])
    requests: list[str] = []
    context.on("request", lambda r: requests.append(r.url))
    page = context.new_page()
    page.set_default_timeout(180_000)
    page.goto(site_url + "index.html?model=tiny-chat")
    page.wait_for_selector("body[data-ready='true']")
    listed = page.evaluate("""async () => {
        for (let i = 0; i < 100; i++) {
          const r = await fetch('/v1/models');
          if (r.ok) return (await r.json()).data.map((m) => m.id);
          await new Promise((ok) => setTimeout(ok, 100));
        }
        return null;
      }""")
    assert listed and "tiny-chat" in listed

    page.click("#tab-endpoint")
    page.click("#endpoint-check")
    page.wait_for_selector("#endpoint-result[data-status]")
    assert page.get_attribute("#endpoint-result", "data-status") == "200"
    assert page.get_attribute("#endpoint-result", "data-models") == ",".join(listed)
    assert page.locator("#endpoint-result").inner_text() == f"200: {', '.join(listed)}"
    assert page.locator("#endpoint-hosting").inner_text() == "yes"
    assert page.locator("#endpoint-worker").inner_text() == "active, controls this page"
    assert page.locator("#endpoint-models").inner_text() == ", ".join(listed)
    assert page.locator("#endpoint-url").inner_text() == site_url.rstrip("/") + "/v1"
    (ROOT / "test-results").mkdir(exist_ok=True)
    page.locator("#panel-endpoint").screenshot(path=str(ROOT / "test-results" / "endpoint-panel.png"))

    # the snippets run as another page of the site would run them: the playground's own policy runs
    # no script but the site's files (a blob: module is refused there)
    runner = context.new_page()
    runner.goto(site_url + "web/engine.js")
    tok, _ = hf_chat()
    expected = tok.decode(hf_greedy_ids(MESSAGES, 32), skip_special_tokens=True)
    assert expected.strip()
    for name in ("openai", "fetch", "curl"):
        box = page.locator(f"#endpoint-snippets [data-snippet='{name}']")
        box.locator("button.copy").click()
        copied_note = f"[data-snippet='{name}'] .copied"
        page.wait_for_function(f"""() => document.querySelector("{copied_note}").textContent === 'Copied.'""")
        copied = page.evaluate("navigator.clipboard.readText()")
        assert copied == box.locator("pre").text_content()
        assert site_url.rstrip("/") + "/v1" in copied and '"tiny-chat"' in copied
        if name == "curl":
            assert copied.startswith(f"curl {site_url.rstrip('/')}/v1/chat/completions")
            continue
        out = runner.evaluate(RUN_MODULE, copied)
        assert "error" not in out, out
        assert out["logged"] == [expected], name
    assert [u for u in requests if not u.startswith(LOCAL_PREFIXES)] == []
    context.close()
