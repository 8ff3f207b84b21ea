"""Server-sent events as a stream's bytes bring them, the way the HTML standard reads them: ``data``
lines joined until a blank line ends the event, comments (keep-alives) skipped; llama.cpp's
``error:`` lines kept as an event of their own. Bounded: no line or event grows past ``limit``."""

from __future__ import annotations


class EventTooLarge(Exception):  # noqa: N818 - the caller names the server
    """A line or an event grew past the parser's limit."""


class SseParser:
    """Feed it the body's pieces; it answers the whole events they complete, as ``(kind, data)``:
    ``("data", ...)`` for a standard event, ``("error", ...)`` for an ``error:`` line."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._line = bytearray()
        self._data: list[bytes] = []
        self._size = 0

    def feed(self, piece: bytes) -> list[tuple[str, bytes]]:
        out: list[tuple[str, bytes]] = []
        self._line += piece
        if b"\n" not in piece:
            if len(self._line) > self._limit:
                raise EventTooLarge
            return out
        *lines, rest = bytes(self._line).split(b"\n")
        self._line = bytearray(rest)
        for line in lines:
            self._take(line.removesuffix(b"\r"), out)
        if len(self._line) > self._limit:
            raise EventTooLarge
        return out

    def _take(self, line: bytes, out: list[tuple[str, bytes]]) -> None:
        if not line:
            if data := b"\n".join(self._data):  # the standard dispatches no empty event
                out.append(("data", data))
            self._data, self._size = [], 0
            return
        if line.startswith(b":"):
            return
        name, _, value = line.partition(b":")
        value = value.removeprefix(b" ")
        if name == b"data":
            self._size += len(value) + 1
            if self._size > self._limit:
                raise EventTooLarge
            self._data.append(value)
        elif name == b"error":
            out.append(("error", value))
