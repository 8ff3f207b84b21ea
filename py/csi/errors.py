"""Typed errors that cross the worker boundary as ``{name, message, param}``."""

from __future__ import annotations

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


class NotFoundError(CsiError):
    """A namespace, collection, index or document the request names does not exist; ``param`` says which."""

    name = "NotFoundError"


class InternalError(CsiError):
    """Something failed inside the engine or the backend; the message carries the cause."""

    name = "InternalError"


def error_to_dict(exc: BaseException) -> dict[str, Any]:
    """Turn any exception into the wire shape; unknown exceptions become ``InternalError``."""
    if isinstance(exc, CsiError):
        return exc.to_dict()
    return {"name": "InternalError", "message": f"{type(exc).__name__}: {exc}", "param": None}
