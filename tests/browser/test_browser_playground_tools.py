"""The playground's Tools part (in the Skills panel) as a person uses it: add an MCP server's URL,
see the tools it lists, run a skill in the studio that calls one (beside the page's demo tools),
see a server that is down refused by name, disconnect it. The server is the real MCP test server
(tests/support/mcp_server.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.test_browser_skill_studio import axe_violations, open_studio, register, run_and_wait, type_skill
from tests.support.mcp_server import McpTestServer, down_url

pytestmark = pytest.mark.browser

CITY_FACT = '''from pydantic import BaseModel

from pharia_skill import Csi, skill


class Input(BaseModel):
    city: str = "Berlin"


class Output(BaseModel):
    fact: str
    tools: list[str]


@skill
def city_fact(csi: Csi, input: Input) -> Output:
    """Look a city up with the MCP server's tool."""
    return Output(fact=csi.invoke_tool("lookup", city=input.city).text(),
                  tools=sorted(t.name for t in csi.list_tools()))
'''


def add_server(page: Any, url: str, expect: str) -> str:
    page.fill("#mcp-url", url)
    page.click("#mcp-connect")
    page.wait_for_selector(f"#mcp-status[data-state='{expect}']")
    return page.inner_text("#mcp-status")


def test_a_person_adds_an_mcp_server_sees_its_tools_and_a_skill_calls_one(browser, site_url, mcp_server:
                                                                          McpTestServer):
    page, requests, dialogs = open_studio(browser, site_url, 1280)
    try:
        page.wait_for_selector("#mcp-connect:enabled")
        said = add_server(page, mcp_server.mcp, "ok")
        assert said == f"Connected {mcp_server.mcp}: 5 tools."
        shown = page.eval_on_selector_all("#mcp-servers [data-tool]", "ts => ts.map((t) => t.dataset.tool)")
        assert shown == ["add", "lookup", "slow", "fail", "shape_area"]  # as the server lists them
        page.click("#mcp-servers [data-tool='shape_area'] summary")
        assert '"$ref": "#/$defs/Point"' in page.inner_text("#mcp-servers [data-tool='shape_area'] pre")
        page.screenshot(path="test-results/playground-tools.png", full_page=True)
        assert axe_violations(page) == []

        type_skill(page, "city-fact", CITY_FACT)
        register(page, "ok")
        out = run_and_wait(page, "ok")  # the page's demo tools and the server's, side by side
        assert '"fact": "Berlin is the capital of Germany."' in out
        assert '"get_time"' in out and '"shape_area"' in out

        down = down_url()
        said = add_server(page, down, "error")
        assert said.startswith("ServerUnavailableError: MCP server") and down in said
        assert page.eval_on_selector_all("#mcp-servers .mcp-server", "s => s.map((x) => x.dataset.url)") == [
            mcp_server.mcp]

        page.click(f"#mcp-servers [data-url='{mcp_server.mcp}'] button")
        page.wait_for_selector("#mcp-status[data-state='ok']")
        assert page.inner_text("#mcp-status") == f"Disconnected {mcp_server.mcp}."
        assert page.eval_on_selector_all("#mcp-servers li", "s => s.length") == 0
        out = run_and_wait(page, "error")  # the tool is gone with its server
        assert "no tool named 'lookup'" in out
        assert [u for u in requests if not u.startswith("http://127.0.0.1:")] == []
        assert dialogs == []
    finally:
        page.context.close()
