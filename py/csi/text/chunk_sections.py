"""Where the rest of a text may be cut for chunking, level by level, and the UTF-8 byte offset of each position.

Semantic levels are runs of newlines (a run of more line breaks is a higher level); below them come the
crate's fallback levels: sentences, words, grapheme clusters (ICU4X's, from ``segmentation``) and characters.
Each ``*_sections`` method yields the (start, end) sections of ``text[cursor:]`` at one level, in order.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterator
from itertools import accumulate

from .segmentation import GRAPHEME, SENTENCE, WORD, grapheme_breaks, properties, sentence_breaks, word_breaks

_NEWLINE_RUNS = re.compile(r"[\r\n]+")

# Fallback levels, in the crate's order (FallbackLevel): lowest first.
CHARS, GRAPHEMES, WORDS, SENTENCES = 0, 1, 2, 3


class TextSections:
    """The sections of one text at each level, classified once for the whole text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.n = len(text)
        # UTF-8 byte offset of each char index (the crate measures its heuristics in bytes)
        if text.isascii():
            self.byte: Callable[[int], int] = _identity
        else:
            lengths = text.translate(_utf8_lengths()).encode("latin-1")
            self.byte = array("q", accumulate(lengths, initial=0)).__getitem__
        # Newline runs: (level = grapheme count, start, end), sorted by start.
        self.ranges: list[tuple[int, int, int]] = []
        for m in _NEWLINE_RUNS.finditer(text):
            run = m.group()
            self.ranges.append((len(run) - run.count("\r\n"), m.start(), m.end()))
        self.range_starts = [r[1] for r in self.ranges]
        self.range_cursor = 0  # index of the first newline run at or after the latest cursor
        # levels present in ranges[i:], ascending
        self.suffix_levels: list[tuple[int, ...]] = [()] * (len(self.ranges) + 1)
        seen: set[int] = set()
        levels: tuple[int, ...] = ()
        for i in range(len(self.ranges) - 1, -1, -1):
            level = self.ranges[i][0]
            if level not in seen:
                seen.add(level)
                levels = tuple(sorted(seen))
            self.suffix_levels[i] = levels
        self.by_level: dict[int, tuple[list[int], list[int]]] = {}
        self.props: dict[int, bytes] = {}
        self.dictionary_memo: dict = {}

    def newline_levels(self, cursor: int) -> tuple[int, ...]:
        """The levels of the newline runs in ``text[cursor:]``, ascending (cursors only move forward)."""
        self.range_cursor = bisect_left(self.range_starts, cursor, self.range_cursor)
        return self.suffix_levels[self.range_cursor]

    def _level_ranges(self, level: int) -> tuple[list[int], list[int]]:
        """(starts, ends) of the newline runs of ``level`` or higher."""
        found = self.by_level.get(level)
        if found is None:
            picked = [(s, e) for lv, s, e in self.ranges if lv >= level]
            found = self.by_level[level] = ([s for s, _ in picked], [e for _, e in picked])
        return found

    def semantic_sections(self, level: int, cursor: int) -> Iterator[tuple[int, int]]:
        """Sections of the remaining text split at newline runs of ``level`` or higher (runs included)."""
        starts, ends = self._level_ranges(level)
        i = bisect_left(starts, cursor)
        for k in range(i, len(starts)):
            s, e = starts[k], ends[k]
            if s > cursor:
                yield cursor, s
            yield s, e
            cursor = e
        if cursor < self.n:
            yield cursor, self.n

    def fallback_sections(self, level: int, cursor: int) -> Iterator[tuple[int, int]]:
        """Sections of the remaining text at fallback ``level`` (``CHARS`` ... ``SENTENCES``)."""
        n = self.n
        if level == CHARS:
            return ((i, i + 1) for i in range(cursor, n))
        props = self.props.get(level)
        if props is None:  # classify the whole text once: each chunk segments the rest of it again
            props = self.props[level] = properties({GRAPHEMES: GRAPHEME, WORDS: WORD, SENTENCES: SENTENCE}[level],
                                                   self.text)
        if level == WORDS:
            return _pairs(word_breaks(self.text, cursor, n, props, self.dictionary_memo))
        breaks = {GRAPHEMES: grapheme_breaks, SENTENCES: sentence_breaks}[level](self.text, cursor, n, props)
        return _pairs(breaks)


def _identity(i: int) -> int:
    return i


_UTF8_LENGTHS: str | None = None


def _utf8_lengths() -> str:
    """A str.translate table: code point -> chr(its UTF-8 length)."""
    global _UTF8_LENGTHS
    if _UTF8_LENGTHS is None:
        _UTF8_LENGTHS = "\1" * 0x80 + "\2" * 0x780 + "\3" * 0xF800 + "\4" * 0x100000
    return _UTF8_LENGTHS


def _pairs(breaks: Iterator[int]) -> Iterator[tuple[int, int]]:
    prev = next(breaks, None)
    if prev is None:
        return
    for b in breaks:
        yield prev, b
        prev = b
