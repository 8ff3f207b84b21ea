"""Shared fixtures: the built site, a static server, Debian's Chromium, a page with an engine, a real
llama.cpp server (and one that is down), a real MCP server. Helpers live in ``tests.support``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.browser import CHROMIUM, CHROMIUM_ARGS, EnginePage, open_engine_page
from tests.support.llama_server import LlamaServer, down_url, running_llama_server
from tests.support.mcp_server import McpTestServer, running_mcp_server
from tests.support.paths import DIST


@pytest.fixture(scope="session")
def browser_type_launch_args() -> dict[str, Any]:
    """pytest-playwright launches Debian's Chromium (Playwright cannot download browsers here)."""
    return {"executable_path": CHROMIUM, "args": CHROMIUM_ARGS, "headless": True}


@pytest.fixture(scope="session")
def site_url() -> Iterator[str]:
    from buildtools.site.serve import serve_in_thread

    if not (DIST / "index.html").exists():
        pytest.fail("dist/ is not built: run `python3 build.py test`")
    server, url = serve_in_thread(DIST)
    yield url
    server.shutdown()


@pytest.fixture(scope="session")
def engine_page(browser: Any, site_url: str) -> Iterator[EnginePage]:
    """One worker with tiny-chat and all-minilm-l6-v2 on WASM, shared by the browser tests."""
    ep = open_engine_page(browser, site_url, ["tiny-chat", "all-minilm-l6-v2"], "wasm")
    yield ep
    ep.page.context.close()


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """llama-cpp-python's OpenAI-compatible server on the built-in model's GGUF, as ``smollm2-server``
    (built once by buildtools/deps/llama_server.py; ``build.py test`` prepares it)."""
    with running_llama_server(tmp_path_factory.mktemp("llama-server") / "server.log") as server:
        yield server


@pytest.fixture
def llama_server_down() -> str:
    """The base URL of a server that is down (a free port: connections are refused)."""
    return down_url()


@pytest.fixture(scope="session")
def mcp_server() -> Iterator[McpTestServer]:
    """The official MCP SDK's server with the tests' tools (and misbehaving endpoints), on 127.0.0.1."""
    with running_mcp_server() as server:
        yield server
