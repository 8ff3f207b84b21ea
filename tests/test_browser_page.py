"""The chat page (index.html) as a user drives it."""

from __future__ import annotations

import pytest

from conftest import LOCAL_PREFIXES

pytestmark = pytest.mark.browser


def test_chat_page_streams_a_reply_and_stop_ends_it(browser, site_url):
    context = browser.new_context()
    requests: list[str] = []
    context.on("request", lambda r: requests.append(r.url))
    page = context.new_page()
    page.set_default_timeout(180_000)
    # 1. a reply that ends by itself; markup in the model's text must stay text
    page.goto(site_url + "index.html?max_tokens=24&temperature=0")
    page.wait_for_selector("body[data-ready='true']")
    assert page.locator("#loading").is_hidden()
    page.fill("#prompt", "What does json.dumps do? <b>bold</b>")
    page.press("#prompt", "Enter")
    done = page.wait_for_selector(".message.assistant[data-done='true']")
    assert done.query_selector(".body").inner_text().strip()
    assert page.locator(".message.user .body").inner_text() == "What does json.dumps do? <b>bold</b>"
    assert page.locator(".message b").count() == 0
    assert "tokens/s" in page.locator("#stats").inner_text()

    # 2. a long reply, streamed, stopped by the Stop button
    page.goto(site_url + "index.html?max_tokens=900&ignore_eos=1&temperature=0")
    page.wait_for_selector("body[data-ready='true']")
    page.fill("#prompt", "Tell me about the textwrap module.")
    page.click("#send")
    body = page.locator(".message.assistant .body")
    page.wait_for_function("document.querySelector('.message.assistant .body').textContent.length > 0")
    partial = body.inner_text()
    page.wait_for_function(
        "(n) => document.querySelector('.message.assistant .body').textContent.length > n", arg=len(partial))
    assert page.locator("#stop").is_enabled()
    page.click("#stop")
    msg = page.wait_for_selector(".message.assistant[data-done='true']")
    assert msg.get_attribute("data-finish") == "abort"
    assert page.locator("#send").is_enabled()
    assert [u for u in requests if not u.startswith(LOCAL_PREFIXES)] == []
    context.close()
