"""A Hugging Face Hub mirror on 127.0.0.1: serves model folders in the Hub's URL layout.

``GET /<org>/<name>/resolve/<revision>/<file>`` answers with ``<folder>/<file>`` (404 when there
is none; a byte range when one is asked for), with the Hub's CORS header, so a page of another
origin (a cross-origin-isolated one) can fetch it. ``throttle`` (bytes per second) slows bodies
down, for tests that cancel a download; every request is logged with the bytes it sent and
whether the body went out whole.
"""

from __future__ import annotations

import http.server
import io
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

RESOLVE = re.compile(r"/([^/]+/[^/]+)/resolve/[^/]+/(.+)")
RANGE = re.compile(r"bytes=(\d+)-(\d*)")
CHUNK = 16 * 1024
NOT_FOUND = b"Entry not found"


@dataclass
class Served:
    """One request: its path, status, the body bytes sent and whether the whole body went out."""

    path: str
    status: int
    sent: int = 0
    whole: bool = False


@dataclass
class Mirror:
    repos: dict[str, Path]
    throttle: float | None = None
    log: list[Served] = field(default_factory=list)
    server: http.server.ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}/"

    def file(self, path: str) -> Path | None:
        match = RESOLVE.fullmatch(path.split("?")[0])
        if not match or match[1] not in self.repos or ".." in match[2]:
            return None
        f = self.repos[match[1]] / match[2]
        return f if f.is_file() else None

    def start(self) -> Mirror:
        mirror = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - stdlib naming
                self._answer(body=True)

            def do_HEAD(self) -> None:  # noqa: N802
                self._answer(body=False)

            def _answer(self, body: bool) -> None:
                f = mirror.file(self.path)
                served = Served(self.path, 200 if f else 404)
                mirror.log.append(served)
                size = f.stat().st_size if f else len(NOT_FOUND)
                first, last = 0, size - 1
                wanted = RANGE.fullmatch(self.headers.get("Range") or "")
                if f and wanted:  # the Hub answers byte ranges; transformers.js reads sizes with one
                    first = int(wanted[1])
                    last = min(size - 1, int(wanted[2])) if wanted[2] else size - 1
                    served.status = 206
                self.send_response(served.status)
                if served.status == 206:
                    self.send_header("Content-Range", f"bytes {first}-{last}/{size}")
                self.send_header("Accept-Ranges", "bytes")
                self.send_header("Access-Control-Allow-Origin", "*")
                self.send_header("Access-Control-Expose-Headers", "Content-Length, Content-Range, ETag")
                self.send_header("Content-Type", "application/octet-stream" if f else "text/plain")
                self.send_header("Content-Length", str(last + 1 - first))
                self.end_headers()
                if not body:
                    return
                try:
                    with (f.open("rb") if f else io.BytesIO(NOT_FOUND)) as src:  # streamed: models are GBs
                        src.seek(first)
                        left = last + 1 - first
                        while left > 0:
                            piece = src.read(min(CHUNK if mirror.throttle else 1 << 20, left))
                            left -= len(piece)
                            self.wfile.write(piece)
                            self.wfile.flush()
                            served.sent += len(piece)
                            if mirror.throttle:
                                time.sleep(len(piece) / mirror.throttle)
                    served.whole = True
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the browser stopped reading: a cancelled download

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None
