"""An OpenAI-compatible server of the tests' own making that misbehaves as each request asks: the
misbehavior is the model the request names (or the first part of its path,
``/<misbehavior>/v1/chat/completions``), so one server serves every kind at once. Raw sockets, so it
can do what HTTP allows and a polite server never does (trickle, reset, hold a stream open, lie
about its framing). It counts the connections still open: a client that leaks a connection shows
as one that never drops."""

from __future__ import annotations

import json
import select
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.hostile_behaviors import BEHAVIORS, FUZZ, Exchange
from tests.support.hostile_fuzz import fuzz

MAX_REQUEST = 1 << 20
CORS = (b"Access-Control-Allow-Origin: *\r\nAccess-Control-Allow-Headers: authorization, content-type\r\n"
        b"Access-Control-Allow-Methods: POST, GET, OPTIONS\r\nAccess-Control-Max-Age: 600\r\n")


class PeerGone(Exception):  # noqa: N818 - a signal: the client dropped the connection
    """The client closed the connection."""


@dataclass
class _Conn:
    sock: socket.socket

    def send(self, data: bytes) -> None:
        """Send ``data``; ``PeerGone`` once the client has dropped the connection."""
        try:
            self.sock.sendall(data)
        except OSError:
            raise PeerGone from None

    def wait(self, seconds: float) -> None:
        """Hold the connection ``seconds``; ``PeerGone`` as soon as the client drops it."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            ready, _, _ = select.select([self.sock], [], [], min(left, 0.05))
            if ready:
                try:
                    if not self.sock.recv(4096, socket.MSG_PEEK):
                        raise PeerGone
                    self.sock.recv(4096)  # anything more the client sends is dropped
                except OSError:
                    raise PeerGone from None

    def reset(self) -> None:
        """Drop the connection with a TCP reset."""
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()


class HostileServer:
    """The server: ``base(name)`` is the base URL of a server that misbehaves as ``name`` says."""

    def __init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._lock = threading.Lock()
        self._open = 0
        self.served: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def base(self, behavior: str | None = None) -> str:
        """The base URL of the server (that misbehaves as ``behavior`` says, whatever model is asked for)."""
        return f"{self.url}/{behavior}/v1" if behavior else f"{self.url}/v1"

    def open_connections(self) -> int:
        with self._lock:
            return self._open

    def settled(self, timeout_s: float = 5.0) -> int:
        """The connections still open once ``timeout_s`` has passed or none is (0: none leaked)."""
        end = time.monotonic() + timeout_s
        while self.open_connections() and time.monotonic() < end:
            time.sleep(0.05)
        return self.open_connections()

    def close(self) -> None:
        self._stop.set()
        self._sock.close()

    def _accept(self) -> None:
        self._sock.settimeout(0.2)
        while not self._stop.is_set():
            try:
                sock, _ = self._sock.accept()
            except OSError:
                continue
            with self._lock:
                self._open += 1
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _serve(self, sock: socket.socket) -> None:
        conn = _Conn(sock)
        try:
            sock.settimeout(10)
            request = _read_request(sock)
            sock.settimeout(None)
            if request is None:
                return
            method, path, body = request
            if path == "/_stats":  # the tests' view of the server: connections open (besides this one), served
                with self._lock:
                    stats = json.dumps({"open": self._open - 1, "served": self.served}).encode()
                conn.send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                          + str(len(stats)).encode() + b"\r\nConnection: close\r\n\r\n" + stats)
                return
            if method == "OPTIONS":
                conn.send(b"HTTP/1.1 204 No Content\r\n" + CORS + b"Content-Length: 0\r\nConnection: close\r\n\r\n")
                return
            parts = path.split("?")[0].lstrip("/").split("/")
            behavior = parts.pop(0) if parts[0] in BEHAVIORS else str(body.get("model"))
            endpoint = "/".join(parts[1:] if parts[:1] == ["v1"] else parts)
            run = fuzz if behavior == FUZZ else BEHAVIORS.get(behavior)
            with self._lock:
                self.served[behavior] = self.served.get(behavior, 0) + 1
            if run is None:
                conn.send(b"HTTP/1.1 404 Not Found\r\n" + CORS + b"Content-Length: 0\r\nConnection: close\r\n\r\n")
                return
            run(Exchange(conn, endpoint, body, path))
        except PeerGone:
            pass
        except OSError:
            pass
        finally:
            try:
                sock.close()
            except OSError:
                pass
            with self._lock:
                self._open -= 1


def _read_request(sock: socket.socket) -> tuple[str, str, dict[str, Any]] | None:
    """The method, path and JSON body of one request (``None``: the client sent none)."""
    data = b""
    while b"\r\n\r\n" not in data:
        piece = sock.recv(65536)
        if not piece or len(data) > MAX_REQUEST:
            return None
        data += piece
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path = lines[0].split(" ")[:2]
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    while len(body) < min(length, MAX_REQUEST):
        piece = sock.recv(65536)
        if not piece:
            return None
        body += piece
    try:
        parsed = json.loads(body) if body else {}
    except ValueError:
        parsed = {}
    return method, path, parsed if isinstance(parsed, dict) else {}


class HostileProcess:
    """The server in a process of its own (its busy threads must not take the tests' interpreter lock)."""

    def __init__(self) -> None:
        self._proc = subprocess.Popen([sys.executable, "-m", "tests.support.hostile_server"], stdout=subprocess.PIPE,
                                      cwd=Path(__file__).resolve().parents[2], text=True)
        assert self._proc.stdout is not None
        self.url = self._proc.stdout.readline().strip()

    def base(self, behavior: str | None = None) -> str:
        """The base URL of the server (that misbehaves as ``behavior`` says, whatever model is asked for)."""
        return f"{self.url}/{behavior}/v1" if behavior else f"{self.url}/v1"

    def _stats(self) -> dict[str, Any]:
        with urllib.request.urlopen(self.url + "/_stats", timeout=10) as r:  # noqa: S310 - 127.0.0.1
            out: dict[str, Any] = json.loads(r.read())
        return out

    @property
    def served(self) -> dict[str, int]:
        """How many requests each misbehavior served."""
        out: dict[str, int] = self._stats()["served"]
        return out

    def settled(self, timeout_s: float = 5.0) -> int:
        """The connections still open once ``timeout_s`` has passed or none is (0: none leaked)."""
        end = time.monotonic() + timeout_s
        while (left := int(self._stats()["open"])) and time.monotonic() < end:
            time.sleep(0.1)
        return left

    def close(self) -> None:
        self._proc.terminate()
        self._proc.wait(10)


@contextmanager
def running_hostile_server() -> Iterator[HostileProcess]:
    server = HostileProcess()
    try:
        yield server
    finally:
        server.close()


if __name__ == "__main__":
    hostile = HostileServer()
    print(hostile.url, flush=True)
    threading.Event().wait()
