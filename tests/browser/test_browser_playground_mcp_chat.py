"""The playground's chat with an MCP server connected, as a person uses it (issue 42): connect the
real MCP test server (tests/support/mcp_server.py) in the Skills panel's Tools part, see the chat
offer its tools, ask the real model about a city with "one call first, then the answer", and read
the call in the reply (the tool's name, its arguments, the server's own answer) with the reply's
text after it. The call is kept with the conversation (a reload shows it again, an export holds it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.browser.test_browser_app import ARTIFACTS, App
from tests.support.mcp_server import CITIES, McpTestServer

pytestmark = pytest.mark.browser

MODEL = "smollm2-135m-instruct"


def test_a_chat_reply_shows_the_mcp_call_the_model_made_and_its_result(browser: Any, site_url: str,
                                                                      mcp_server: McpTestServer) -> None:
    app = App(browser, site_url, 1280, "light")
    page = app.page
    try:
        page.goto(site_url + f"index.html?model={MODEL}&max_tokens=64&temperature=0#skills")
        page.wait_for_selector("body[data-ready='true']")
        assert page.locator("#mcp-offer").is_hidden()  # nothing connected: the chat is as it was
        page.wait_for_selector("#mcp-connect:enabled")
        page.fill("#mcp-url", mcp_server.mcp)
        page.click("#mcp-connect")
        page.wait_for_selector("#mcp-status[data-state='ok']")

        page.click("#tab-chat")
        page.wait_for_selector("#mcp-offer:visible")
        offer = page.inner_text("#mcp-offer-text")
        assert "5 tools of 1 MCP server" in offer and "lookup" in offer
        page.select_option("#mcp-use", "required")
        page.fill("#prompt", "What does the lookup tool say about Paris?")
        page.press("#prompt", "Enter")

        reply = page.wait_for_selector(".message.assistant[data-done='true']", timeout=60_000)
        assert reply.get_attribute("data-finish") == "stop"
        call = page.locator(".message.assistant .mcp-call")
        assert call.count() == 1
        assert call.get_attribute("data-name") == "lookup" and call.get_attribute("data-status") == "completed"
        summary = page.inner_text(".mcp-call summary")
        assert "lookup" in summary and "Paris" in summary and "done" in summary
        page.click(".mcp-call summary")
        arguments = json.loads(page.inner_text(".mcp-call-arguments pre"))
        assert arguments["city"].lower() == "paris"
        assert page.inner_text(".mcp-call-result pre") == CITIES["paris"]  # the server's own answer, as text
        steps = page.eval_on_selector_all(".message.assistant .body > *", "es => es.map((e) => e.className)")
        assert steps[0] == "mcp-call" and steps[-1].startswith("reply-text")  # the call, then the words
        assert page.inner_text(".message.assistant .reply-text").strip()
        assert "tokens" in page.inner_text(".message.assistant .meta")
        page.screenshot(path=str(ARTIFACTS / "playground_mcp_chat.png"), full_page=True)
        assert app.axe("#panel-chat") == []

        page.wait_for_function("() => !document.querySelector('#messages').dataset.saving")
        page.reload()  # the conversation is kept with its call
        page.wait_for_selector("body[data-ready='true']")
        page.wait_for_selector(".message.assistant .mcp-call[data-name='lookup'][data-status='completed']")
        with page.expect_download() as info:  # exported with the reply, and the import's check takes it
            page.click("#conv-export")
        exported = Path(info.value.path()).read_text()
        (stored,) = [m for c in json.loads(exported)["conversations"] for m in c["messages"] if m.get("mcp_calls")]
        assert [(c["name"], c["output"], c["at"]) for c in stored["mcp_calls"]] == [("lookup", CITIES["paris"], 0)]
        assert page.evaluate("async (t) => (await import('./app/conversations/validate.js')).parseExport(t).length",
                             exported) == 1
        assert [u for u in app.requests if not u.startswith("http://127.0.0.1:")] == []
        assert app.errors == []
    finally:
        app.context.close()
