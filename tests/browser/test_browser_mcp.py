"""MCP servers as tool sources in Chromium: ``engine.tools.connect`` puts a real MCP server's tools
(the official SDK's, on another 127.0.0.1 port, with CORS) behind the CSI for the skills run in a
namespace; the worker calls it over fetch. The skills and answers are tests/cpython/test_mcp_skills.py's.
A server that is down or fails is a typed error naming it, a call past the timeout fails the skill,
and an aborted skill run reaches the server (its tool is cancelled); the worker serves on."""

from __future__ import annotations

import pytest

from tests.support.browser import open_engine_page
from tests.support.mcp_server import down_url
from tests.support.mcp_skills import MCP_SLOW, MCP_USER, USER_INPUT, expected_user_output

pytestmark = pytest.mark.browser

NAMESPACE = "mcp-tools"


@pytest.fixture(scope="module")
def mcp_page(browser, site_url, mcp_server):
    """A page of its own, with tiny-chat, the two skills registered and the server connected."""
    ep = open_engine_page(browser, site_url, ["tiny-chat"])
    ep.ok("""await engine.skills.register({name: 'mcp-user', source: arg[0]});
             await engine.skills.register({name: 'mcp-slow', source: arg[1]});""", [MCP_USER, MCP_SLOW])
    yield ep
    ep.page.context.close()


def connect(ep, url: str, **more) -> dict:
    return ep.ok("return await engine.tools.connect(arg);", {"namespace": NAMESPACE, "url": url, **more})


def test_a_skill_calls_the_tools_of_a_connected_server(mcp_page, mcp_server):
    ep = mcp_page
    server = connect(ep, mcp_server.mcp)
    assert (server["namespace"], server["url"], server["label"]) == (NAMESPACE, mcp_server.mcp, NAMESPACE)
    tools = {t["name"]: t for t in server["tools"]}
    assert sorted(tools) == ["add", "fail", "lookup", "shape_area", "slow"]
    assert tools["shape_area"]["input_schema"]["$defs"]["Point"]["required"] == ["x", "y"]
    assert ep.ok("return await engine.tools.servers();") == [server]
    run = "return await engine.skills.run('mcp-user', arg, {namespace: 'mcp-tools'});"
    assert ep.ok(run, USER_INPUT) == expected_user_output()  # what CPython answers
    # beside the page's own tools
    ep.ok("await engine.tools.register({name: 'echo', input_schema: {}}, () => 'echo');")
    assert ep.ok(run, USER_INPUT) == expected_user_output(("echo",))
    ep.ok("await engine.tools.remove('echo');")
    # outside the namespace the skill sees none of them
    err = ep.call("return await engine.skills.run('mcp-user', arg);", USER_INPUT)["error"]
    assert err["name"] == "SkillError" and "StopIteration" in err["message"]
    assert ep.foreign_requests() == []


@pytest.mark.parametrize(("where", "name", "says"), [
    ("down", "ServerUnavailableError", "could not be reached"),
    ("/bad/500", "ServerError", "it answered HTTP 500: upstream exploded"),
    ("/bad/malformed", "ServerError", "not a JSON-RPC message"),
])
def test_connecting_a_failing_server_is_a_typed_error_naming_it(mcp_page, mcp_server, where, name, says):
    ep = mcp_page
    url = down_url() if where == "down" else mcp_server.url + where
    err = ep.call("return await engine.tools.connect(arg);", {"namespace": "broken", "url": url})["error"]
    assert err["name"] == name and says in err["message"], err
    assert f"MCP server 'broken' at {url}, listing its tools" in err["message"]
    assert "broken" not in [s["namespace"] for s in ep.ok("return await engine.tools.servers();")]


def test_an_endless_answer_times_out_and_the_engine_serves_on(mcp_page, mcp_server):
    ep = mcp_page
    err = ep.call("return await engine.tools.connect(arg);",
                  {"namespace": "endless", "url": mcp_server.url + "/bad/endless", "timeoutMs": 1000})["error"]
    assert err["name"] == "ServerTimeoutError" and "listing its tools: no answer within 1 s" in err["message"], err
    assert ep.greedy()  # the engine still answers


def test_a_tool_past_the_timeout_fails_the_skill_and_the_server_cancels_it(mcp_page, mcp_server):
    ep = mcp_page
    connect(ep, mcp_server.mcp, timeoutMs=1000)
    err = ep.call("return await engine.skills.run('mcp-slow', arg, {namespace: 'mcp-tools'});",
                  {"seconds": 30, "label": "browser-deadline"})["error"]
    assert err["name"] == "SkillError"
    assert (f"raised ServerTimeoutError: MCP server '{NAMESPACE}' at {mcp_server.mcp}, calling tool 'slow': "
            "no answer within 1 s") in err["message"], err
    mcp_server.log.wait_for("cancelled", "browser-deadline")
    connect(ep, mcp_server.mcp)  # replaced, with the default timeout


def test_aborting_a_skill_run_reaches_the_server(mcp_page, mcp_server):
    ep = mcp_page
    connect(ep, mcp_server.mcp)
    ep.ok("""window.abortRun = new AbortController();
             window.slowRun = engine.skills.run('mcp-slow', arg, {namespace: 'mcp-tools', signal: abortRun.signal})
               .then((out) => ({out}), (e) => ({name: e.name, message: e.message}));""",
          {"seconds": 30, "label": "browser-abort"})
    mcp_server.log.wait_for("started", "browser-abort", timeout=60)
    out = ep.ok("abortRun.abort(); const t = performance.now(); const r = await slowRun; "
                "return {...r, ms: performance.now() - t};")
    assert out["name"] == "SkillError" and "was cancelled" in out["message"], out
    assert out["ms"] < 3000
    mcp_server.log.wait_for("cancelled", "browser-abort")
    # the server and the engine serve on
    assert ep.ok("return await engine.skills.run('mcp-slow', arg, {namespace: 'mcp-tools'});",
                 {"seconds": 0.01, "label": "after"}) == {"text": "slept 0.01 s"}
    gone = ep.ok("return await engine.tools.disconnect({namespace: 'mcp-tools'});")
    assert [s["url"] for s in gone] == [mcp_server.mcp]
    assert ep.foreign_requests() == []
