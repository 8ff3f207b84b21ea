"""Reading one page message as hostile input: JSON text in, a checked dict out, or an
``InvalidInputError`` whose ``param`` names the field (relative to ``request`` for what is inside it).

Refused: text that is not JSON, more than ``MAX_MESSAGE_CHARS``, nesting deeper than ``MAX_DEPTH``
(checked before parsing, so no parser recursion ever runs away), ``NaN``/``Infinity`` and numbers
that overflow a double, integers beyond what a JavaScript number holds exactly, strings with lone
surrogates (not Unicode text), and messages that are not an object with a string ``type``.
"""

from __future__ import annotations

import re
from json import JSONDecodeError, loads
from typing import Any

from ..core.json_depth import MAX_DEPTH, nesting
from ..errors import InvalidInputError

MAX_MESSAGE_CHARS = 64 * 1024 * 1024
MAX_SAFE_INTEGER = 2**53 - 1
MESSAGE_PARAM = "message"

_LEADING_ID = re.compile(r'\s*\{\s*"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?\d{1,15})\s*[,}]')


def leading_id(raw: str) -> str | int | None:
    """The ``id`` of a message that could not be read, when it comes first (as the page client
    writes it), so even that error reaches its caller."""
    m = _LEADING_ID.match(raw[:512])
    if m is None:
        return None
    try:
        value = loads(m.group(1))
    except ValueError:
        return None
    return value if isinstance(value, str | int) else None


def _refuse_constant(name: str) -> Any:
    raise InvalidInputError(f"`{name}` is not a JSON number: send finite numbers", MESSAGE_PARAM)


def _param(path: list[str | int]) -> str:
    """``["request", "messages", 0, "content"]`` -> ``messages[0].content``; outside the request,
    the field's own path."""
    if path and path[0] == "request":
        path = path[1:]
        if not path:
            return "request"
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else ("." if out else "") + p
    return out or MESSAGE_PARAM


def _check(value: Any) -> None:
    """Every number finite and exactly representable in JavaScript; every string Unicode text."""
    stack: list[tuple[Any, list[str | int]]] = [(value, [])]
    while stack:
        v, path = stack.pop()
        if isinstance(v, dict):
            for k, item in v.items():
                _check_text(k, path)
                stack.append((item, [*path, k]))
        elif isinstance(v, list):
            stack.extend((item, [*path, i]) for i, item in enumerate(v))
        elif isinstance(v, str):
            _check_text(v, path)
        elif (isinstance(v, float) and not abs(v) < float("inf")) or (
                isinstance(v, int) and not isinstance(v, bool) and abs(v) > MAX_SAFE_INTEGER):
            raise InvalidInputError(f"`{_param(path)}` is out of range: numbers must be finite, and integers "
                                    f"within ±{MAX_SAFE_INTEGER} (what a JavaScript number holds exactly)",
                                    _param(path))


def _check_text(s: str, path: list[str | int]) -> None:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(f"`{_param(path)}` holds a lone UTF-16 surrogate: it is not Unicode text",
                                _param(path)) from None


def decode_message(raw: Any) -> dict[str, Any]:
    """The message ``raw`` (JSON text) as a dict with a string ``type``, checked as above."""
    if not isinstance(raw, str):
        raise InvalidInputError("a message must be JSON text", MESSAGE_PARAM)
    if len(raw) > MAX_MESSAGE_CHARS:
        raise InvalidInputError(f"the message has {len(raw)} characters; the limit is {MAX_MESSAGE_CHARS}",
                                MESSAGE_PARAM)
    if nesting(raw, MAX_DEPTH) > MAX_DEPTH:
        raise InvalidInputError(f"the message nests deeper than {MAX_DEPTH} levels", MESSAGE_PARAM)
    try:
        # int() refuses numbers over 4,300 digits; a shorter bound keeps hostile ones cheap
        msg = loads(raw, parse_constant=_refuse_constant,
                    parse_int=lambda s: int(s) if len(s) <= 20 else float("inf"))
    except JSONDecodeError as exc:
        raise InvalidInputError(f"the message is not valid JSON: {exc}", MESSAGE_PARAM) from None
    except RecursionError:
        raise InvalidInputError(f"the message nests deeper than {MAX_DEPTH} levels", MESSAGE_PARAM) from None
    if not isinstance(msg, dict) or not isinstance(msg.get("type"), str):
        raise InvalidInputError("a message must be an object with a string `type`", "type")
    _check(msg)
    return msg
