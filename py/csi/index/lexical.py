"""Terms for the lexical (BM25) half of hybrid search: case-folded words; ideographs and kana,
written without spaces, count one character per term."""

from __future__ import annotations

import re

_NO_SPACE = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_TERM = re.compile(rf"[{_NO_SPACE}]|[^\W_{_NO_SPACE}]+")


def terms(text: str) -> list[str]:
    """The terms of ``text`` in order: ``"Hello, World_2"`` -> ``["hello", "world", "2"]``."""
    return [t.casefold() for t in _TERM.findall(text)]
