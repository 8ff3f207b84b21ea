"""A static server for dist/ on 127.0.0.1 with COOP/COEP (crossOriginIsolated) and right MIME types;
or, with ``isolate=False``, a plain one, as most static hosts are (no special headers)."""

from __future__ import annotations

import functools
import http.server
import threading
from pathlib import Path

MIME = {
    ".js": "text/javascript",
    ".mjs": "text/javascript",
    ".wasm": "application/wasm",
    ".json": "application/json",
    ".whl": "application/zip",
    ".zip": "application/zip",
    ".onnx": "application/octet-stream",
    ".safetensors": "application/octet-stream",
    ".html": "text/html; charset=utf-8",
    ".css": "text/css",
}


class PlainHandler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, **MIME}

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
