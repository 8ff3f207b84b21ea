"""A plain static server, as a static host is: right MIME types, no COOP/COEP or other special headers."""

from __future__ import annotations

import functools
import http.server
import threading
from pathlib import Path

from buildtools.serve import MIME


class PlainHandler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, **MIME}

    def handle(self) -> None:
        try:
            super().handle()
        except (ConnectionResetError, BrokenPipeError):
            pass

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        pass


def serve_plain(root: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    """Serve ``root`` on a free port of 127.0.0.1 in a daemon thread; returns the server and its URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(PlainHandler, directory=str(root)))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"
