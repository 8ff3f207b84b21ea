"""A real OpenAI-compatible server for the remote-model tests: llama-cpp-python's ``llama_cpp.server``
serving the built-in model's GGUF (built by buildtools/deps/llama_server.py), its log captured to a file.

The server prints ``Disconnected from client (via refresh/close) Address(host=..., port=...)`` when a
client goes away mid-stream (and no ``llama_perf_context_print`` summary for that request, which a
finished one gets); ``LlamaServer.wait_for_disconnect`` waits for that line.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from buildtools.deps.llama_server import ensure_server

ALIAS = "smollm2-server"
N_CTX = 2048
DISCONNECT = "Disconnected from client (via refresh/close)"
START_TIMEOUT = 120.0


@dataclass
class LlamaServer:
    """A running server: its base URL (no ``/v1``), the model alias it lists, and its log file."""

    url: str
    model: str
    log_path: Path
    process: subprocess.Popen[bytes]

    def ask(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """The server asked directly (``/v1/<path>``, its own model): the reference the tests compare with."""
        reply = requests.post(f"{self.url}/v1/{path}", json={"model": self.model, **body}, timeout=120)
        reply.raise_for_status()
        out: dict[str, Any] = reply.json()
        return out

    def log(self, since: int = 0) -> str:
        """The log from byte offset ``since`` (a ``mark()``) on."""
        with open(self.log_path, "rb") as f:
            f.seek(since)
            return f.read().decode("utf-8", "replace")

    def mark(self) -> int:
        """The log's current length: pass it as ``since`` to look only at what comes after."""
        return self.log_path.stat().st_size

    def wait_for_log(self, pattern: str, since: int = 0, timeout: float = 10.0) -> str:
        """The first log line after ``since`` that matches the regex ``pattern``; AssertionError after
        ``timeout`` seconds, with the log's tail."""
        deadline = time.monotonic() + timeout
        regex = re.compile(pattern)
        while True:
            for line in self.log(since).splitlines():
                if regex.search(line):
                    return line
            if time.monotonic() > deadline:
                raise AssertionError(f"no log line matching {pattern!r} within {timeout} s; log ends:\n"
                                     + self.log(since)[-2000:])
            time.sleep(0.1)

    def disconnects(self, since: int = 0) -> list[str]:
        """The disconnect lines logged after ``since``: one per stream its client abandoned."""
        return [line for line in self.log(since).splitlines() if DISCONNECT in line]

    def wait_for_disconnect(self, since: int = 0, timeout: float = 10.0) -> str:
        """Waits until the server logs that a streaming client went away (after ``since``)."""
        return self.wait_for_log(re.escape(DISCONNECT), since, timeout)


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on (at the time of asking)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def down_url() -> str:
    """The base URL of a server that is down: a free port on 127.0.0.1 (connections are refused)."""
    return f"http://127.0.0.1:{free_port()}"


def _command(python: Path, model: Path, port: int) -> list[str]:
    return [str(python), "-m", "llama_cpp.server", "--model", str(model), "--model_alias", ALIAS,
            "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(N_CTX),
            "--embedding", "true",  # chat, completions and (per-token) embeddings from one model
            # One thread each: llama.cpp's OpenMP threads spin, and this machine's 2 cores are
            # shared with Chromium; SmolLM2 still decodes at ~150 tokens/s.
            "--n_threads", "1", "--n_threads_batch", "1",
            # By default a request arriving while another streams ends that stream early ([DONE]);
            # off, requests queue on the model's lock as they would on a one-slot llama.cpp server.
            "--interrupt_requests", "false",
            "--verbose", "true"]  # llama_perf summaries: one per request that ran to its end


def _ready(url: str) -> bool:
    try:
        return requests.get(f"{url}/v1/models", timeout=2).status_code == 200
    except requests.RequestException:
        return False


@contextmanager
def running_llama_server(log_path: Path) -> Iterator[LlamaServer]:
    """Starts the server on a free port, waits for ``/v1/models``, stops it on exit."""
    python, model = ensure_server()
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "OMP_WAIT_POLICY": "passive"}
    for _attempt in range(3):  # a free port can be taken between asking and binding
        port = free_port()
        log_path.write_bytes(b"")
        with open(log_path, "ab") as log:
            process = subprocess.Popen(_command(python, model, port), stdout=log, stderr=subprocess.STDOUT,
                                       env=env)
        server = LlamaServer(f"http://127.0.0.1:{port}", ALIAS, log_path, process)
        deadline = time.monotonic() + START_TIMEOUT
        while process.poll() is None and not _ready(server.url) and time.monotonic() < deadline:
            time.sleep(0.2)
        if process.poll() is None and _ready(server.url):
            break
        _stop(process)
        if "address already in use" not in server.log().lower():
            raise RuntimeError(f"llama_cpp.server did not start; its log ends:\n{server.log()[-3000:]}")
    else:
        raise RuntimeError("llama_cpp.server found no free port in 3 attempts")
    try:
        yield server
    finally:
        _stop(process)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
