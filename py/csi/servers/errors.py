"""A server's HTTP errors as csi-web's errors of that kind, with the server's own message (and the
field it names): OpenAI's error shape, FastAPI's validation errors, plain text."""

from __future__ import annotations

import json
import re
from typing import Any

from ..errors import (
    AuthenticationError,
    ContextWindowExceededError,
    CsiError,
    InvalidInputError,
    ModelNotSupportedError,
    RateLimitError,
    ServerError,
)

MAX_ERROR_TEXT = 2000

_BODY_FIELD = re.compile(r"'loc': \('body', ((?:'[^']*'|\d+)(?:, (?:'[^']*'|\d+))*)\)")
"""FastAPI's validation error, as llama-cpp-python reports it: a 500 whose message names the field."""
_CONTEXT = re.compile(r"context (window|length)|maximum context|too many tokens|exceeds? the|n_ctx", re.I)


def _server_message(raw: bytes) -> tuple[str, str | None]:
    """The message (and ``param``, if it names one) of a server's error body, OpenAI's shape or not."""
    text = raw.decode("utf-8", "replace")
    try:
        body = json.loads(text)
    except ValueError:
        return text.strip()[:MAX_ERROR_TEXT] or "(no message)", None
    err = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(err, dict):
        message = err.get("message") or err.get("detail") or json.dumps(err)
        param = err.get("param") if isinstance(err.get("param"), str) else None
        if isinstance(message, list):  # FastAPI's validation errors
            parts = [m for m in message if isinstance(m, dict)]
            message = "; ".join(str(m.get("msg", m)) for m in parts) or json.dumps(message)
            locs: list[list[Any]] = [m["loc"] for m in parts if isinstance(m.get("loc"), list)]
            if param is None and locs and len(locs[0]) > 1:
                param = _field_path(locs[0][1:])
        return str(message)[:MAX_ERROR_TEXT], param
    return str(err)[:MAX_ERROR_TEXT], None


def http_error(status: int, raw: bytes, where: str) -> CsiError:
    """A server's HTTP error as csi-web's error of that kind, with the server's message."""
    message, param = _server_message(raw)
    said = f"{where} answered {status}: {message}"
    if status in (401, 403):
        return AuthenticationError(said, "api_key")
    if status == 429:
        return RateLimitError(said)
    if status == 404:
        return ModelNotSupportedError(said, param or "model")
    field = _BODY_FIELD.search(message)
    if field is not None and param is None:
        param = _field_path([p.strip().strip("'") for p in field.group(1).split(",")])
    if 400 <= status < 500 or (field is not None and "validation error" in message):
        if status == 413 or _CONTEXT.search(message):
            return ContextWindowExceededError(said, param or "messages")
        return InvalidInputError(said, param)
    return ServerError(said)


def _field_path(loc: list[Any]) -> str:
    """``["messages", 0, "content"]`` -> ``messages[0].content``."""
    path = ""
    for part in (str(p) for p in loc):
        path += f"[{part}]" if part.isdigit() else ("." if path else "") + part
    return path
