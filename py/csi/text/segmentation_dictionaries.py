"""Word boundaries inside runs of complex-script characters: ICU's word dictionaries, as ICU4X 2.4 uses them.

For Chinese/Japanese (Han, Hiragana) and Thai, Lao, Khmer, Burmese, a run of such characters is split into
per-language runs, and each is segmented by greedy longest match over its dictionary (``tables/unicode_dict``,
decoded on first use). ``complex_run`` is the ``ComplexRun`` that ``segmentation.word_breaks`` passes to the rules.
"""

from __future__ import annotations

import re
from base64 import b64decode
from bisect import bisect_right
from zlib import decompress

from .icu_trie import FINAL, INTERMEDIATE_VALUE, NO_MATCH, IcuTrie
from .segmentation_rules import GRAPHEME, WORD, rule_breaks


def complex_run(text: str, p: int, end: int, buf: bytes, base: int, cx: int,
             memo: dict | None) -> tuple[int | None, int, list[int], int]:
    """ICU4X's ``handle_complex_language``: dictionary boundaries for the run of complex characters from p - 1.

    Returns (boundary or None, new current position, boundaries, index of the next pending one). ``memo`` keeps the
    boundaries of the last run seen per run end: greedy matching restarted at one of its boundaries gives the
    same boundaries after it, so segmenting the rest of a long run again (as each chunk does) is free.
    """
    q = _run_end(text, p, end, buf, base, cx)
    a = p - 1
    cached = memo.get(q) if memo is not None else None
    if cached is not None and (cached[0] == a or a in cached[2]):
        absolute = cached[1]
        k = bisect_right(absolute, a)
    else:
        breaks, stranded = _complex_language_breaks(text[a:q])
        absolute = [a + b for b in breaks]
        k = 0
        if memo is not None:
            memo[q] = (a, absolute, frozenset(absolute) - {a + b for b in stranded})
    if k >= len(absolute):
        return None, p, [], 0
    if absolute[k] >= end:
        return end, p, [], 0
    return absolute[k], absolute[k], absolute, k + 1


def _run_end(text: str, p: int, end: int, buf: bytes, base: int, cx: int) -> int:
    """The first index after ``p`` whose word property is not ``cx`` (or ``end``)."""
    q = p + 1
    known = min(base + len(buf), end)
    other = re.compile(b"[^" + re.escape(bytes([cx])) + b"]")
    if q < known:
        m = other.search(buf, q - base, known - base)
        if m is not None:
            return m.start() + base
        q = known
    step = 256
    while q < end:
        piece = text[q:min(end, q + step)].translate(WORD.props).encode("latin-1")
        m = other.search(piece)
        if m is not None:
            return q + m.start()
        q += len(piece)
        step *= 2
    return end



_LANG_RANGES = (  # ICU4X's get_language: (first, last, language); Thai/Lao/Burmese/Khmer are lb=SA & script
    (0x0E01, 0x0E3A, "thai"), (0x0E40, 0x0E4E, "thai"),
    (0x0E81, 0x0E82, "lao"), (0x0E84, 0x0E84, "lao"), (0x0E86, 0x0E8A, "lao"), (0x0E8C, 0x0EA2, "lao"),
    (0x0EA5, 0x0EA5, "lao"), (0x0EA7, 0x0EBD, "lao"), (0x0EC0, 0x0EC4, "lao"), (0x0EC6, 0x0EC6, "lao"),
    (0x0EC8, 0x0ECE, "lao"), (0x0EDC, 0x0EDF, "lao"),
    (0x1000, 0x103F, "burmese"), (0x1050, 0x108F, "burmese"), (0x109A, 0x109F, "burmese"),
    (0x1780, 0x17D3, "khmer"), (0x17D7, 0x17D7, "khmer"), (0x17DC, 0x17DD, "khmer"),
    (0x2E80, 0x2E99, "cj"), (0x2E9B, 0x2EF3, "cj"), (0x2F00, 0x2FD5, "cj"), (0x3005, 0x3005, "cj"),
    (0x3007, 0x3007, "cj"), (0x3021, 0x3029, "cj"), (0x3038, 0x303B, "cj"), (0x3041, 0x3096, "cj"),
    (0x309D, 0x309F, "cj"), (0x3400, 0x4DBF, "cj"), (0x4E00, 0x9FFF, "cj"),
    (0xA9E0, 0xA9EF, "burmese"), (0xA9FA, 0xA9FE, "burmese"), (0xAA60, 0xAA7F, "burmese"),
    (0xF900, 0xFA6D, "cj"), (0xFA70, 0xFAD9, "cj"),
    (0x16FE2, 0x16FE3, "cj"), (0x16FF0, 0x16FF6, "cj"), (0x1B001, 0x1B11F, "cj"), (0x1B132, 0x1B132, "cj"),
    (0x1B150, 0x1B152, "cj"), (0x1F200, 0x1F200, "cj"), (0x20000, 0x2A6DF, "cj"), (0x2A700, 0x2B81D, "cj"),
    (0x2B820, 0x2CEAD, "cj"), (0x2CEB0, 0x2EBE0, "cj"), (0x2EBF0, 0x2EE5D, "cj"), (0x2F800, 0x2FA1D, "cj"),
    (0x30000, 0x3134A, "cj"), (0x31350, 0x33479, "cj"),
)
_LANG_STARTS = [r[0] for r in _LANG_RANGES]


def _language(c: str) -> str | None:
    cp = ord(c)
    i = bisect_right(_LANG_STARTS, cp) - 1
    if i >= 0 and cp <= _LANG_RANGES[i][1]:
        return _LANG_RANGES[i][2]
    return None


def _complex_language_breaks(s: str) -> tuple[list[int], list[int]]:
    """ICU4X's ``complex_language_segment_str``: per-language runs, each split by its dictionary.

    Also returns the boundaries after which a run's segmentation stopped short of its end (restarting there
    would segment the rest, so they are not valid restart points for the memo in ``complex_run``).
    """
    result: list[int] = []
    stranded: list[int] = []
    offset = 0
    while offset < len(s):
        lang = _language(s[offset])
        stop = offset + 1
        while stop < len(s) and _language(s[stop]) == lang:
            stop += 1
        trie = _dictionary(lang) if lang else None
        if trie is None:
            result.append(stop)
        else:
            found = _dictionary_breaks(trie, s[offset:stop])
            result.extend(offset + b for b in found)
            if found and found[-1] < stop - offset:
                stranded.append(offset + found[-1])
        offset = stop
    return result, stranded


def _dictionary_breaks(trie: IcuTrie, s: str) -> list[int]:
    """Greedy longest dictionary match, as ICU4X 2.4's ``DictionaryBreakIterator`` behaves.

    A match (final or not) only counts where a grapheme cluster ends; the longest counted match wins. With no
    match, the text up to the failing character is one segment, extended to the end of its grapheme cluster.
    A match that runs into the end of ``s`` leaves the rest without a boundary. (Inferred from the crate's
    output: the last sentence differs from ICU4X's published sources.)
    """
    graphemes = list(rule_breaks(GRAPHEME, s, 0, len(s), None))
    ends = set(graphemes)
    n = len(s)
    i = 0
    g = 0  # index of the next grapheme boundary to look at
    out: list[int] = []
    while True:
        state = trie.root
        match = 0
        match_g = 0
        prefix_seen = False
        last_g = 0
        found = -1
        while i < n:
            pos = i
            i += 1
            result, state = trie.next(state, s[pos])
            if result == FINAL or result == INTERMEDIATE_VALUE:
                while last_g < i:
                    if g < len(graphemes):
                        last_g = graphemes[g]
                        g += 1
                    else:
                        last_g = n
                if last_g != i:
                    continue
                match, match_g = i, g
                if result == FINAL:
                    found = i
                    break
            elif result == NO_MATCH:
                if match > 0:
                    i, g = match, match_g
                    found = match
                else:
                    while i not in ends:
                        i += 1
                    found = i
                break
            else:
                prefix_seen = True
        else:
            if match > 0:
                found = match
            elif prefix_seen:
                found = n
        if found < 0:
            return out
        out.append(found)


_TRIES: dict[str, IcuTrie] = {}


def _dictionary(lang: str) -> IcuTrie | None:
    """The dictionary for ``lang``, decoded on first use (the data module is only imported then)."""
    trie = _TRIES.get(lang)
    if trie is None:
        from .tables.unicode_dict import DICTIONARIES  # noqa: PLC0415 - 3 MB, only for CJK / South-East Asian text

        entry = DICTIONARIES.get(lang)
        if entry is None:
            return None
        kind, offset, encoded = entry
        trie = _TRIES[lang] = IcuTrie(kind, offset, decompress(b64decode(encoded)))
    return trie
