"""How deep JSON text nests, measured without parsing it. Python's parser recurses once per level:
in the browser (Pyodide) a deep enough nesting overflows the JavaScript stack and kills the worker,
so JSON from outside (the page's messages, servers' answers) is measured before it is parsed."""

from __future__ import annotations

import json
import re
from typing import Any

MAX_DEPTH = 100
"""Deeper than any message or answer needs (OpenAI's events nest about 6 levels)."""

_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_BRACKETS = re.compile(r"[\[\]{}]")


def nesting(raw: str | bytes, limit: int = MAX_DEPTH) -> int:
    """How deep ``raw`` nests (0 when it has no more brackets than ``limit``; the count stops a
    level past ``limit``)."""
    text = raw.decode("latin-1") if isinstance(raw, bytes) else raw  # byte for byte: brackets and quotes are ASCII
    if text.count("[") + text.count("{") <= limit:
        return 0  # cannot nest deeper than it has brackets
    depth = deepest = 0
    for b in _BRACKETS.findall(_STRINGS.sub("", text)):
        if b in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    break
        else:
            depth -= 1
    return deepest


def loads(raw: str | bytes, **hooks: Any) -> Any:
    """``json.loads(raw, **hooks)``, refusing (``ValueError``) text that nests deeper than ``MAX_DEPTH``."""
    if nesting(raw) > MAX_DEPTH:
        raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels")
    try:
        return json.loads(raw, **hooks)
    except RecursionError:
        raise ValueError("JSON nested beyond reason") from None
