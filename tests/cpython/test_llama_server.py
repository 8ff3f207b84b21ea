"""The llama.cpp server fixtures themselves: it lists its alias, its log shows a client that left
mid-stream (and not one that read to the end), and the down server refuses connections."""

from __future__ import annotations

from typing import Any

import pytest
import requests

from tests.support.llama_server import LlamaServer

STORY = [{"role": "user", "content": "Write a long story about a dragon."}]


def test_lists_its_alias(llama_server: LlamaServer) -> None:
    models = requests.get(f"{llama_server.url}/v1/models", timeout=10).json()
    assert [m["id"] for m in models["data"]] == ["smollm2-server"] == [llama_server.model]


def test_a_stream_read_to_its_end_logs_no_disconnect(llama_server: LlamaServer) -> None:
    since = llama_server.mark()
    body: dict[str, Any] = {"messages": STORY, "max_tokens": 8, "temperature": 0, "stream": True}
    with requests.post(f"{llama_server.url}/v1/chat/completions", json=body, stream=True, timeout=60) as r:
        lines = [line for line in r.iter_lines() if line]
    assert lines[-1] == b"data: [DONE]"
    llama_server.wait_for_log("llama_perf_context_print: +total time", since)
    assert llama_server.disconnects(since) == []


def test_a_client_leaving_mid_stream_is_logged(llama_server: LlamaServer) -> None:
    since = llama_server.mark()
    body: dict[str, Any] = {"messages": STORY, "max_tokens": 1500, "temperature": 0, "stream": True}
    with requests.post(f"{llama_server.url}/v1/chat/completions", json=body, stream=True, timeout=60) as r:
        for n, _line in enumerate(r.iter_lines()):
            if n >= 6:
                break
    line = llama_server.wait_for_disconnect(since)
    assert "127.0.0.1" in line
    # the generation stopped there: no summary for it (a finished request prints one), and the model
    # is free for the next request at once
    assert "llama_perf_context_print" not in llama_server.log(since)
    reply = requests.post(f"{llama_server.url}/v1/chat/completions", timeout=30,
                          json={"messages": STORY, "max_tokens": 2, "temperature": 0}).json()
    assert reply["usage"]["completion_tokens"] == 2


def test_the_down_server_refuses_connections(llama_server_down: str) -> None:
    with pytest.raises(requests.ConnectionError):
        requests.get(f"{llama_server_down}/v1/models", timeout=5)
