"""Typed errors that cross the worker boundary as ``{name, message, param}``, and ``blame``, the one
way a field path reaches them."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class CsiError(Exception):
    """Base of all errors the engine reports to callers.

    ``name`` is what the page sees as ``Error.name``; ``param`` names the request field to blame.
    """

    name = "CsiError"

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "message": self.message, "param": self.param}


class InvalidInputError(CsiError):
    """The request does not validate; ``param`` names the offending field."""

    name = "InvalidInputError"


class ModelNotSupportedError(CsiError):
    """The request names a model that is not loaded (or cannot serve this kind of request)."""

    name = "ModelNotSupportedError"


class ContextWindowExceededError(CsiError):
    """The prompt (plus what must be generated) does not fit the model's context window."""

    name = "ContextWindowExceededError"


class ModelLoadError(CsiError):
    """A model could not be loaded (missing files, unsupported architecture, network)."""

    name = "ModelLoadError"


class PackageLoadError(CsiError):
    """A package a skill imports is not served here, or could not be loaded (the site's wheel did
    not load; in CPython, it is not installed)."""

    name = "PackageLoadError"


class NotFoundError(CsiError):
    """A namespace, collection, index or document the request names does not exist; ``param`` says which."""

    name = "NotFoundError"


class NotSupportedError(CsiError):
    """The request asks for something this engine does not do (``param`` names what)."""

    name = "NotSupportedError"


class InternalError(CsiError):
    """Something failed inside the engine or the backend; the message carries the cause."""

    name = "InternalError"


class AbortError(CsiError):
    """Work was stopped before it finished: its request was cancelled, or ``interruptGenerate()``
    was called (an index write between two batches, a tool call while the tool ran). Named as the
    DOM names an aborted call."""

    name = "AbortError"


class ServerError(CsiError):
    """The server of a remote model failed (an HTTP 5xx, or a reply that is not OpenAI's shape);
    the message carries the server's own."""

    name = "ServerError"


class ServerUnavailableError(ServerError):
    """The server of a remote model could not be reached (refused, no network, DNS, CORS)."""

    name = "ServerUnavailableError"


class ServerTimeoutError(ServerError):
    """The server of a remote model did not answer within the endpoint's ``timeout``."""

    name = "ServerTimeoutError"


class AuthenticationError(CsiError):
    """The server of a remote model refused the API key (HTTP 401 or 403)."""

    name = "AuthenticationError"


class RateLimitError(CsiError):
    """The server of a remote model asks to slow down (HTTP 429)."""

    name = "RateLimitError"


class SkillError(InternalError):
    """A skill raised (its code, or a CSI call it let through): the skill's fault, not the engine's.
    The seed's skill handler reports it as its ``internal`` error."""

    name = "SkillError"


class ToolFailed(Exception):  # noqa: N818 - pharia-skill's ToolError is made of it
    """A tool a skill called failed itself: it raised or rejected (``message`` is its own), or
    returned what is not JSON. Not a ``CsiError``: the skill gets it as a ``ToolError``, and may go on."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class SkillInterrupt(BaseException):  # noqa: N818 - like KeyboardInterrupt, not an error of the skill
    """Raised inside a skill's own code when its run must stop (time limit, ``interruptGenerate()``,
    cancel); a ``BaseException`` so that the skill's ``except Exception`` lets it through."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def error_to_dict(exc: BaseException) -> dict[str, Any]:
    """Turn any exception into the wire shape; unknown exceptions become ``InternalError``."""
    if isinstance(exc, CsiError):
        return exc.to_dict()
    return {"name": "InternalError", "message": f"{type(exc).__name__}: {exc}", "param": None}


def join_path(prefix: str, param: str | None) -> str:
    """``("requests[0]", "params.overlap")`` -> ``"requests[0].params.overlap"``; an index joins without a dot."""
    if not param:
        return prefix
    if not prefix:
        return param
    return f"{prefix}{'' if param.startswith('[') else '.'}{param}"


@contextmanager
def blame(prefix: str, *, only: tuple[type[CsiError], ...] = (), **renamed: str) -> Iterator[None]:
    """Put every ``CsiError`` raised inside under the field ``prefix``.

    Services raise errors about their own arguments (``param="overlap"``); the face that called
    them knows where that argument sits in the request: ``with blame(f"requests[{i}].params"):``
    turns it into ``requests[0].params.overlap``, in ``param`` and where the message quotes it.
    ``renamed`` maps a param to another before the prefix is added (``prompt=""``: the prefix itself);
    ``only`` limits it to these kinds of error.
    """
    try:
        yield
    except CsiError as exc:
        if only and not isinstance(exc, only):
            raise
        old = exc.param
        new = join_path(prefix, renamed.get(old, old) if old is not None else None)
        if old:
            exc.message = re.sub(rf"`{re.escape(old)}(?=[`.\[])", lambda _: f"`{new}", exc.message)
            exc.args = (exc.message,)
        exc.param = new or None
        raise
