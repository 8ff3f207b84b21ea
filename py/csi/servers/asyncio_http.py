"""``HttpClient`` for CPython: HTTP/1.1 over asyncio streams (TLS for https), one connection per
request, the body read as it arrives (chunked or not), so that closing the response drops the
connection and the server sees the request cancelled, as the browser's fetch abort does."""

from __future__ import annotations

import asyncio
import ssl
from urllib.parse import urlsplit

from ..errors import ServerUnavailableError
from .http import unreachable

MAX_HEADER = 64 << 10
MAX_HEADERS = 256


class _Response:
    def __init__(self, status: int, headers: dict[str, str], reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter, where: str) -> None:
        self.status = status
        self._where = where
        self.headers = headers
        self._reader, self._writer = reader, writer
        self._chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        length = headers.get("content-length")
        self._left = int(length) if length and length.isdigit() and not self._chunked else None
        self._done = False
        self._chunk_left = 0

    async def read(self, timeout_s: float) -> bytes | None:
        if self._done:
            return None
        try:
            return await asyncio.wait_for(self._read(), timeout_s)
        except TimeoutError:  # an OSError: not a broken connection
            raise
        except (OSError, ValueError, asyncio.IncompleteReadError) as exc:
            self.close()
            raise ServerUnavailableError(f"{self._where} broke the connection mid-answer "
                                         f"({exc or type(exc).__name__})") from None

    async def _read(self) -> bytes | None:
        if self._chunked:
            if not self._chunk_left:
                size_line = await self._reader.readline()
                size = int(size_line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.close()
                    return None
                self._chunk_left = size
            data = await self._reader.readexactly(min(self._chunk_left, 1 << 16))  # a huge chunk in bounded reads
            self._chunk_left -= len(data)
            if not self._chunk_left:
                await self._reader.readexactly(2)
            return data
        if self._left is not None:
            if self._left <= 0:
                self.close()
                return None
            data = await self._reader.read(min(self._left, 1 << 16))
            self._left -= len(data)
        else:
            data = await self._reader.read(1 << 16)
        if not data:
            self.close()
            return None
        return data

    def close(self) -> None:
        self._done = True
        self._writer.close()


class AsyncioHttp:
    """An ``HttpClient`` on asyncio streams."""

    async def open(self, method: str, url: str, headers: dict[str, str], body: bytes | None) -> _Response:
        parts = urlsplit(url)
        https = parts.scheme == "https"
        host = parts.hostname or ""
        port = parts.port or (443 if https else 80)
        where = url.split("?")[0]
        try:
            reader, writer = await asyncio.open_connection(host, port, ssl=ssl.create_default_context() if https
                                                           else None, limit=MAX_HEADER)
        except (OSError, ssl.SSLError) as exc:
            raise unreachable(where, str(exc) or type(exc).__name__) from None
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        lines = [f"{method} {target} HTTP/1.1", f"Host: {parts.netloc}", "Connection: close",
                 f"Content-Length: {len(body or b'')}", *(f"{k}: {v}" for k, v in headers.items())]
        try:
            writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b""))
            await writer.drain()
            status_line = await reader.readline()
            fields: dict[str, str] = {}
            while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
                if len(fields) >= MAX_HEADERS:
                    raise ValueError(f"more than {MAX_HEADERS} header fields")
                name, _, value = line.decode("latin-1").partition(":")
                fields[name.strip().lower()] = value.strip()
            status = _status(status_line)
        except (OSError, ValueError, IndexError, asyncio.IncompleteReadError) as exc:
            writer.close()
            raise unreachable(where, f"no HTTP answer ({exc or type(exc).__name__})") from None
        except BaseException:  # cancelled while waiting for the answer: drop the connection
            writer.close()
            raise
        return _Response(status, fields, reader, writer, where)


def _status(line: bytes) -> int:
    """The status of an HTTP/1.x status line (``ValueError``: it is not one)."""
    parts = line.split()
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit() or len(parts[1]) != 3:
        raise ValueError(f"a status line of {line[:80]!r}" if line else "the connection closed")
    return int(parts[1])
