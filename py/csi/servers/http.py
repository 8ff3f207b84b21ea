"""The HTTP port the server runners reach servers through: a request whose answer's body arrives in
pieces. Implemented over asyncio streams in CPython (``asyncio_http``) and over the browser's fetch in
the worker (``fetch_http``)."""

from __future__ import annotations

from typing import Protocol

from ..errors import ServerUnavailableError


class HttpResponse(Protocol):
    """An HTTP response whose body arrives in pieces."""

    status: int
    headers: dict[str, str]
    """The response's headers, names in lower case (in the browser, only those CORS lets the page read)."""

    async def read(self, timeout_s: float) -> bytes | None:
        """The next piece of the body; ``None`` at its end; ``TimeoutError`` when none comes
        within ``timeout_s``. Once ``close()`` is called, a pending read ends (any way it can)."""
        ...

    def close(self) -> None:
        """Stop reading and drop the connection (the server sees the request cancelled)."""
        ...


class HttpClient(Protocol):
    async def open(self, method: str, url: str, headers: dict[str, str], body: bytes | None) -> HttpResponse:
        """Send a request and return once the status and headers have come; ``ServerUnavailableError``
        when the server cannot be reached."""
        ...


def unreachable(where: str, cause: str) -> ServerUnavailableError:
    return ServerUnavailableError(f"{where} could not be reached: {cause}")
