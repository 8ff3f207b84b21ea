"""Skills calling the tools of an MCP server connected in their namespace, in CPython, through the
worker's own messages (``tools_connect``, ``skills_run`` with ``namespace``) against the real MCP
test server: the same skills and answers as tests/browser/test_browser_mcp.py."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from csi.backends.local_host import LocalHost
from csi.local import LOCAL_NAMESPACE, local_csi
from csi.runtime import build_runtime
from csi.servers.asyncio_http import AsyncioHttp
from csi.testing import ScriptedBackend
from csi.worker.app import WorkerApp
from tests.support.mcp_server import McpTestServer, down_url
from tests.support.mcp_skills import MCP_SLOW, MCP_USER, USER_INPUT, expected_user_output
from tests.support.paths import DIST

NAMESPACE = "mcp-tools"


@pytest.fixture
def server(mcp_server: McpTestServer) -> McpTestServer:
    return mcp_server


class Worker:
    """A worker's app in CPython, its messages answered on an event loop of its own, in a thread of its
    own (once a browser test has started Playwright's sync API, the main thread's loop is Playwright's)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = ThreadPoolExecutor(1)
        self.sent: list[dict[str, Any]] = []
        self.app = WorkerApp(build_runtime(ScriptedBackend([b"<eos>"], [0]), LocalHost(), http=AsyncioHttp()),
                             lambda text: self.sent.append(json.loads(text)))

    def run(self, coro: Any) -> Any:
        return self.thread.submit(self.loop.run_until_complete, coro).result()

    def ask(self, kind: str, request: Any = None, mid: str = "m1") -> dict[str, Any]:
        """The final reply (``result`` or ``error``) to one message."""
        body = {"id": mid, "type": kind} | ({} if request is None else {"request": request})
        self.run(self.app.serve(json.dumps(body)))
        return next(m for m in reversed(self.sent) if m["id"] == mid and m["type"] in ("result", "error"))

    def ok(self, kind: str, request: Any = None) -> Any:
        reply = self.ask(kind, request)
        assert reply["type"] == "result", reply
        return reply["result"]

    def sees(self, server: McpTestServer, event: str, label: str) -> None:
        """Until the server's slow tool called with ``label`` saw ``event``, the worker's loop running
        meanwhile (what it sends in the background goes out)."""
        async def poll() -> None:
            for _ in range(500):
                if (event, "slow", label) in server.log.events:
                    return
                await asyncio.sleep(0.02)

        self.run(poll())
        server.log.wait_for(event, label, timeout=0)

    def close(self) -> None:
        self.run(self.app.runtime.mcp.disconnect(NAMESPACE)) if self.app.runtime.mcp.serves(
            NAMESPACE) else None
        self.thread.submit(self.loop.close).result()
        self.thread.shutdown()


@pytest.fixture
def worker() -> Iterator[Worker]:
    w = Worker()
    yield w
    w.close()


def test_connect_lists_the_servers_tools(worker: Worker, server: McpTestServer) -> None:
    out = worker.ok("tools_connect", {"namespace": NAMESPACE, "url": server.mcp})
    assert (out["namespace"], out["url"], out["label"]) == (NAMESPACE, server.mcp, NAMESPACE)
    assert sorted(t["name"] for t in out["tools"]) == ["add", "fail", "lookup", "shape_area", "slow"]
    assert worker.ok("tools_servers") == [out]
    assert worker.ok("tools_disconnect", {"namespace": NAMESPACE}) == [out]
    assert worker.ok("tools_servers") == []
    err = worker.ask("tools_disconnect", {"namespace": NAMESPACE})["error"]
    assert (err["name"], err["param"]) == ("InvalidInputError", "namespace")


def test_a_skill_calls_the_tools_of_its_namespace(worker: Worker, server: McpTestServer) -> None:
    worker.ok("tools_connect", {"namespace": NAMESPACE, "url": server.mcp})
    worker.ok("skills_register", {"name": "mcp-user", "source": MCP_USER})
    assert worker.ok("skills_run", {"name": "mcp-user", "input": USER_INPUT, "namespace": NAMESPACE}) == \
        expected_user_output()
    # outside the namespace the skill sees the page's tools only (none here)
    err = worker.ask("skills_run", {"name": "mcp-user", "input": USER_INPUT})["error"]
    assert err["name"] == "SkillError" and "StopIteration" in err["message"]


@pytest.mark.parametrize(("url", "name", "says"), [
    ("down", "ServerUnavailableError", "could not be reached"),
    ("/bad/500", "ServerError", "it answered HTTP 500: upstream exploded"),
    ("/bad/malformed", "ServerError", "not a JSON-RPC message"),
])
def test_connecting_a_failing_server_is_a_typed_error_naming_it(worker: Worker, server: McpTestServer, url: str,
                                                                 name: str, says: str) -> None:
    url = down_url() if url == "down" else server.url + url
    err = worker.ask("tools_connect", {"namespace": NAMESPACE, "url": url, "label": "broken"})["error"]
    assert err["name"] == name and says in err["message"]
    assert f"MCP server 'broken' at {url}, listing its tools" in err["message"]
    assert worker.ok("tools_servers") == []


def test_a_tool_past_the_servers_timeout_fails_the_skill_and_the_server_cancels_it(worker: Worker,
                                                                                    server: McpTestServer) -> None:
    worker.ok("tools_connect", {"namespace": NAMESPACE, "url": server.mcp, "timeout_s": 1})
    worker.ok("skills_register", {"name": "mcp-slow", "source": MCP_SLOW})
    err = worker.ask("skills_run", {"name": "mcp-slow", "input": {"seconds": 30, "label": "skill-deadline"},
                                    "namespace": NAMESPACE})["error"]
    # the skill gets the typed error (it may catch it); raised out of the skill, it is the skill's failure
    assert err["name"] == "SkillError"
    assert (f"raised ServerTimeoutError: MCP server '{NAMESPACE}' at {server.mcp}, calling tool 'slow': "
            "no answer within 1 s") in err["message"]
    worker.sees(server, "cancelled", "skill-deadline")


def test_cancelling_the_skill_reaches_the_server(worker: Worker, server: McpTestServer) -> None:
    worker.ok("tools_connect", {"namespace": NAMESPACE, "url": server.mcp})
    worker.ok("skills_register", {"name": "mcp-slow", "source": MCP_SLOW})

    async def run_then_cancel() -> None:
        body = {"id": "run", "type": "skills_run", "request": {
            "name": "mcp-slow", "input": {"seconds": 30, "label": "skill-cancel"}, "namespace": NAMESPACE}}
        task = asyncio.ensure_future(worker.app.serve(json.dumps(body)))
        while ("started", "slow", "skill-cancel") not in server.log.events:
            await asyncio.sleep(0.02)
        worker.app.handle(json.dumps({"id": "c", "type": "cancel", "request": {"target": "run"}}))
        await asyncio.wait_for(task, 10)

    worker.run(run_then_cancel())
    err = next(m for m in worker.sent if m["id"] == "run" and m["type"] == "error")["error"]
    assert (err["name"], err["message"]) == ("SkillError", "skill mcp_slow was interrupted: the call was cancelled")
    worker.sees(server, "cancelled", "skill-cancel")


def test_bad_connect_requests_are_refused_by_field(worker: Worker, server: McpTestServer) -> None:
    for request, param in [({"namespace": "a b", "url": server.mcp}, "namespace"),
                           ({"namespace": NAMESPACE, "url": "ftp://x"}, "url"),
                           ({"namespace": NAMESPACE, "url": server.mcp, "headers": {"a b": "c"}}, "headers"),
                           ({"namespace": NAMESPACE, "url": server.mcp, "timeout_s": 0}, "timeout_s")]:
        err = worker.ask("tools_connect", request)["error"]
        assert (err["name"], err["param"]) == ("InvalidInputError", param), (request, err)
    err = worker.ask("skills_run", {"name": "summarize", "input": {}, "namespace": "a/b"})["error"]
    assert (err["name"], err["param"]) == ("InvalidInputError", "namespace")




def test_local_csi_serves_an_mcp_servers_tools_to_a_skill_called_from_python(server: McpTestServer) -> None:
    """The stand-in for the SDK's DevCsi, with ``tool_servers``: the same answers, the skill called directly."""
    module: dict[str, Any] = {}
    exec(compile(MCP_USER, "<mcp_user>", "exec", dont_inherit=True), module)  # not our __future__ imports
    with local_csi(DIST, [], tool_servers=[{"url": server.mcp, "headers": {"Authorization": "Bearer local"}}]) as csi:
        out = module["mcp_user"](csi, module["Input"](**USER_INPUT))
    assert server.log.authorizations.count("Bearer local") >= 6  # the session, the listings and the calls
    assert out.model_dump() == {**expected_user_output(), "unknown": expected_user_output()["unknown"].replace(
        "'mcp-tools'", f"'{LOCAL_NAMESPACE}'")}
