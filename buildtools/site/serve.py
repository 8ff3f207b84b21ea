"""A static server for dist/ on 127.0.0.1 with COOP/COEP (crossOriginIsolated) and right MIME types;
or, with ``isolate=False``, a plain one, as most static hosts are (no special headers)."""

from __future__ import annotations

import functools
import http.server
import os
import re
import threading
from pathlib import Path
from typing import Any, BinaryIO

MIME = {
    ".js": "text/javascript",
    ".mjs": "text/javascript",
    ".wasm": "application/wasm",
    ".json": "application/json",
    ".whl": "application/zip",
    ".zip": "application/zip",
    ".onnx": "application/octet-stream",
    ".safetensors": "application/octet-stream",
    ".gguf": "application/octet-stream",
    ".html": "text/html; charset=utf-8",
    ".css": "text/css",
}


class _Part:
    """``length`` bytes of an open file, from where it is: the body of a 206 answer."""

    def __init__(self, f: BinaryIO, length: int) -> None:
        self.f, self.left = f, length

    def read(self, n: int = -1) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        data = self.f.read(n)
        self.left -= len(data)
        return data

    def close(self) -> None:
        self.f.close()


class PlainHandler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, **MIME}

    def send_head(self) -> Any:
        """A file's byte range for ``Range: bytes=a-b`` (what a GGUF's header is read with, before
        the file is downloaded); anything else as the standard library serves it."""
        wanted = re.fullmatch(r"bytes=(\d+)-(\d*)", (self.headers.get("Range") or "").strip())
        path = self.translate_path(self.path)
        if wanted is None or not os.path.isfile(path):
            return super().send_head()
        size = os.path.getsize(path)
        start, end = int(wanted[1]), min(int(wanted[2]) if wanted[2] else size - 1, size - 1)
        if start >= size or end < start:
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{size}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        f = open(path, "rb")  # noqa: SIM115 - closed by do_GET once sent
        f.seek(start)
        self.send_response(206)
        self.send_header("Content-Type", self.guess_type(path))
        self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.send_header("Content-Length", str(end - start + 1))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        return _Part(f, end - start + 1)

    def handle(self) -> None:
        try:
            super().handle()
        except (ConnectionResetError, BrokenPipeError):
            pass  # the browser dropped a connection (page closed, request aborted)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        if getattr(self.server, "verbose", False):
            super().log_message(format, *args)


class Handler(PlainHandler):
    def end_headers(self) -> None:
        self.send_header("Cross-Origin-Opener-Policy", "same-origin")
        self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
        self.send_header("Cross-Origin-Resource-Policy", "same-origin")
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()


def make_server(root: Path, port: int = 8000, verbose: bool = False,
                isolate: bool = True) -> http.server.ThreadingHTTPServer:
    handler = Handler if isolate else PlainHandler
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), functools.partial(handler, directory=str(root)))
    server.handle_error = lambda request, client_address: None  # type: ignore[method-assign]
    server.daemon_threads = True
    server.verbose = verbose  # type: ignore[attr-defined]
    return server


def serve_in_thread(root: Path, port: int = 0, isolate: bool = True) -> tuple[http.server.ThreadingHTTPServer, str]:
    """Start a server in a daemon thread; returns it and its base URL (port 0 = any free port)."""
    server = make_server(root, port, isolate=isolate)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"
