"""Token-bounded text chunking with the semantics of the Rust ``text-splitter`` crate (``TextSplitter``).

Chunks are identical to ``semantic-text-splitter`` 0.33.1's ``TextSplitter`` (as used by Pharia Kernel) for
the same text, sizer, capacity and overlap: text is split at the largest semantic level whose pieces fit -
runs of newlines (a longer run is a higher level), then ICU4X sentences, words, grapheme clusters, characters
- and neighbouring pieces are merged while the chunk still fits. Chunks are trimmed of surrounding whitespace
and ``overlap`` is the maximum number of tokens shared with the previous chunk.

The crate's algorithm is followed step by step, including its heuristics that measure text in UTF-8 bytes
(which level to probe, how far to look ahead) and its searches (which chunk sizes it asks for), since those
decide which of several fitting chunks is returned. Sizes come from a batch callback and are cached for the
whole call, so each distinct piece of text is counted once.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from itertools import accumulate

from ..errors import InvalidInputError
from .segmentation import GRAPHEME, SENTENCE, WORD, grapheme_breaks, properties, sentence_breaks, word_breaks

TokenCounter = Callable[[list[str]], list[int]]
"""Batch callback: the token count of each text, without special tokens, padding or truncation."""

_Span = tuple[int, int]  # (start, end) character indices
_Level = tuple[int, _Span, int | None]  # (level, its first section, the level below it to probe with)
_Step = Callable[[int, int, int, int], "tuple[int, int] | None"]

# Rust's char::is_whitespace (the White_Space property), which str::trim uses.
_WHITESPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
              "\u2028\u2029\u202f\u205f\u3000"
_NEWLINE_RUNS = re.compile(r"[\r\n]+")
_PROBE_OVERSHOOT_DIVISOR = 4
_PROBE_START_BYTE_FACTOR = 8

# Fallback levels, in the crate's order (FallbackLevel): lowest first.
_CHAR, _GRAPHEME, _WORD, _SENTENCE = 0, 1, 2, 3


def count_chars(texts: list[str]) -> list[int]:
    """A ``TokenCounter`` that counts characters (Unicode scalar values), like the crate's ``Characters``."""
    return [len(t) for t in texts]


def chunk_text(text: str, max_tokens: int, overlap: int, count_tokens: TokenCounter) -> list[tuple[int, str]]:
    """Chunks of ``text`` as (character offset into text, chunk string), in order, text-splitter semantics.

    ``max_tokens`` is the capacity of each chunk, ``overlap`` the most tokens a chunk may share with the one
    before; ``count_tokens`` sizes texts in batches. ``text[offset:offset + len(chunk)] == chunk`` always holds.
    """
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise InvalidInputError("`max_tokens` must be an integer of at least 1", param="max_tokens")
    if isinstance(overlap, bool) or not isinstance(overlap, int) or overlap < 0:
        raise InvalidInputError("`overlap` must be a non-negative integer", param="overlap")
    if overlap >= max_tokens:
        raise InvalidInputError(f"`overlap` ({overlap}) must be less than `max_tokens` ({max_tokens})",
                                param="overlap")
    return list(_TextChunks(text, max_tokens, overlap, count_tokens))


def _fits(size: int, capacity: int) -> int:
    """ChunkCapacity::fits for a fixed capacity: -1 room left, 0 full, 1 too big."""
    return -1 if size < capacity else (1 if size > capacity else 0)


class _Sizer:
    """Sizes of trimmed slices of the text, counted through the batch callback and cached by range."""

    def __init__(self, text: str, count_tokens: TokenCounter) -> None:
        self.text = text
        self.count_tokens = count_tokens
        self.cache: dict[tuple[int, int], int] = {}  # by (trimmed) range
        self.by_text: dict[str, int] = {}  # the same text elsewhere has the same size (kept for a while)
        self.by_text_chars = 0
        self.calls = 0
        self.chars = 0
        self.ratio = 0.25  # tokens per character of the latest batch, to guess which sizes a search needs next

    def trimmed(self, start: int, end: int) -> tuple[int, int]:
        text = self.text
        piece = text[start:end]
        head = len(piece) - len(piece.lstrip(_WHITESPACE))
        if head == len(piece):
            return end, end
        return start + head, end - (len(piece) - len(piece.rstrip(_WHITESPACE)))

    def size(self, start: int, end: int) -> int:
        """Tokens in ``text[start:end]`` after trimming (the crate's MemoizedChunkSizer::chunk_size)."""
        key = self.trimmed(start, end)
        size = self.cache.get(key)
        if size is None:
            self.fetch([key])
            size = self.cache[key]
        return size

    def fetch(self, keys: list[tuple[int, int]]) -> None:
        cache, by_text = self.cache, self.by_text
        wanted: dict[str, list[tuple[int, int]]] = {}
        for key in keys:
            if key in cache:
                continue
            piece = self.text[key[0]:key[1]]
            known = 0 if not piece else by_text.get(piece)
            if known is not None:
                cache[key] = known
            else:
                wanted.setdefault(piece, []).append(key)
        if not wanted:
            return
        texts = list(wanted)
        sizes = [int(s) for s in self.count_tokens(texts)]
        if len(sizes) != len(texts):
            raise ValueError(f"count_tokens returned {len(sizes)} sizes for {len(texts)} texts")
        self.calls += 1
        total = sum(map(len, texts))
        self.chars += total
        self.by_text_chars += total
        if self.by_text_chars > 4_000_000:  # bound the memory held by copies of counted texts
            by_text.clear()
            self.by_text_chars = total
        for piece, size in zip(texts, sizes, strict=True):
            by_text[piece] = size
            for key in wanted[piece]:
                cache[key] = size
        if total >= 64:
            self.ratio = sum(sizes) / total

    def known(self, start: int, end: int) -> int | None:
        return self.cache.get(self.trimmed(start, end))

    def prefetch(self, spans: list[tuple[int, int]]) -> None:
        """Size several spans in one call (only fills the cache; the searches still read exact sizes)."""
        keys = [self.trimmed(a, b) for a, b in spans]
        if any(k not in self.cache for k in keys):
            self.fetch(keys)


class _TextChunks:
    """The crate's ``TextChunks`` iterator over (char offset, chunk) for ``TextSplitter``."""

    def __init__(self, text: str, capacity: int, overlap: int, count_tokens: TokenCounter) -> None:
        self.text = text
        self.n = len(text)
        self.capacity = capacity
        self.overlap = overlap
        self.sizer = _Sizer(text, count_tokens)
        self.cursor = 0
        self.prev_item_end = 0
        self.max_chunk_bytes: int | None = None
        self.next_sections: list[_Span] = []
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
        self.range_cursor = 0
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

    # -- iteration --------------------------------------------------------------------------------------

    def __iter__(self) -> Iterator[tuple[int, str]]:
        while self.cursor < self.n:
            start, chunk = self._next_chunk()
            if not chunk:
                continue
            item_end = start + len(chunk)
            if item_end <= self.prev_item_end:  # content already emitted (overlap)
                continue
            self.prev_item_end = item_end
            yield start, chunk

    def _next_chunk(self) -> tuple[int, str]:
        self.range_cursor = bisect_left(self.range_starts, self.cursor, self.range_cursor)
        low = self._update_next_sections()
        start, end = self._binary_search_next_chunk(low)
        size = self.byte(end) - self.byte(start)
        self.max_chunk_bytes = size if self.max_chunk_bytes is None else max(self.max_chunk_bytes, size)
        self._update_cursor(end)
        ts, te = self.sizer.trimmed(start, end)
        return ts, self.text[ts:te]

    # -- semantic levels: newline runs -------------------------------------------------------------------

    def _level_ranges(self, level: int) -> tuple[list[int], list[int]]:
        """(starts, ends) of the newline runs of ``level`` or higher."""
        found = self.by_level.get(level)
        if found is None:
            picked = [(s, e) for lv, s, e in self.ranges if lv >= level]
            found = self.by_level[level] = ([s for s, _ in picked], [e for _, e in picked])
        return found

    def _semantic_chunks(self, level: int) -> Iterator[tuple[int, int]]:
        """Sections of the remaining text split at newline runs of ``level`` or higher (runs included)."""
        starts, ends = self._level_ranges(level)
        cursor = self.cursor
        i = bisect_left(starts, cursor)
        for k in range(i, len(starts)):
            s, e = starts[k], ends[k]
            if s > cursor:
                yield cursor, s
            yield s, e
            cursor = e
        if cursor < self.n:
            yield cursor, self.n

    def _fallback_sections(self, level: int) -> Iterator[tuple[int, int]]:
        cursor, n = self.cursor, self.n
        if level == _CHAR:
            return ((i, i + 1) for i in range(cursor, n))
        props = self.props.get(level)
        if props is None:  # classify the whole text once: each chunk segments the rest of it again
            props = self.props[level] = properties({_GRAPHEME: GRAPHEME, _WORD: WORD, _SENTENCE: SENTENCE}[level],
                                                   self.text)
        if level == _WORD:
            return _pairs(word_breaks(self.text, cursor, n, props, self.dictionary_memo))
        breaks = {_GRAPHEME: grapheme_breaks, _SENTENCE: sentence_breaks}[level](self.text, cursor, n, props)
        return _pairs(breaks)

    # -- choosing the level --------------------------------------------------------------------------------

    def _find_correct_level(self, levels: Iterable[_Level],
                            lower_boundaries_for: Callable[[int | None, int], Iterator[int]],
                            ) -> tuple[int | None, int | None]:
        """MemoizedChunkSizer::find_correct_level. ``levels`` yields (level, (start, end), lower level)."""
        semantic_level = None
        max_offset = None
        byte = self.byte
        for level, (start, end), lower in _coalesce_by_length(levels, byte):
            length = byte(end) - byte(start)
            if length > self.capacity:
                fits = self._chunk_fits_with_boundaries(start, end, lower_boundaries_for(lower, end))
                if fits > 0:
                    max_offset = end
                    break
            semantic_level = level
        return semantic_level, max_offset

    def _chunk_fits_with_boundaries(self, start: int, end: int, boundaries: Iterator[int]) -> int:
        """Whether text[start:end] fits, probing prefixes at lower-level boundaries to avoid sizing it all."""
        capacity, byte = self.capacity, self.byte
        chunk_end = byte(end)
        probe_max = capacity + max(capacity // _PROBE_OVERSHOOT_DIVISOR, 1)
        probe_start = min(byte(start) + max(capacity * _PROBE_START_BYTE_FACTOR, 1), chunk_end)
        if probe_start == chunk_end:
            return _fits(self.sizer.size(start, end), capacity)
        # The crate probes the 1st, 2nd, 4th, 8th, ... boundary from the first one past probe_start.
        first = next((b for b in boundaries if b > start and byte(b) >= probe_start), None)
        stream = [] if first is None else [first]

        def probe(k: int) -> int | None:  # boundary of the k-th probe (stream index 2**k - 1)
            i = (1 << k) - 1
            while len(stream) <= i:
                b = next(boundaries, None)
                if b is None:
                    return None
                stream.append(b)
            return stream[i]

        k = 0
        boundary = probe(0)
        while boundary is not None:
            if boundary > end:
                break
            if self.sizer.known(start, boundary) is None:
                self._prefetch_probes(start, end, k, probe, probe_max)
            size = self.sizer.size(start, boundary)
            if size > probe_max or boundary == end:
                return _fits(size, capacity)
            k += 1
            boundary = probe(k)
        return _fits(self.sizer.size(start, end), capacity)

    def _prefetch_probes(self, start: int, end: int, k: int, probe: Callable[[int], int | None],
                         probe_max: int) -> None:
        """Size, in one call, the probes likely needed before one exceeds ``probe_max`` (cf. _predict_path)."""
        spans: list[_Span] = []
        ratio = self.sizer.ratio
        while len(spans) < 6:
            boundary = probe(k)
            if boundary is None or boundary > end:
                spans.append((start, end))
                break
            spans.append((start, boundary))
            guess = (boundary - start) * ratio
            if boundary == end or guess > probe_max * 1.15 or abs(guess - probe_max) <= 0.15 * probe_max + 1:
                break
            k += 1
        self.sizer.prefetch(spans)

    def _update_next_sections(self) -> int:
        """Find the sections the next chunk is made of; returns the lowest index known to fit."""
        sections_out: list[_Span] = []
        self.next_sections = sections_out
        cursor = self.cursor
        levels = self.suffix_levels[self.range_cursor]

        def semantic_levels() -> Iterator[_Level]:
            lower = None
            for level in levels:
                first = next(self._semantic_chunks(level), None)
                candidate_lower = lower
                lower = level
                if first is not None:
                    yield level, first, candidate_lower

        def semantic_bounds(lower: int | None, chunk_end: int) -> Iterator[int]:
            if lower is None:
                return iter(())
            return _ends_until(self._semantic_chunks(lower), chunk_end)

        semantic_level, max_offset = self._find_correct_level(semantic_levels(), semantic_bounds)
        if semantic_level is not None:
            sections = self._semantic_chunks(semantic_level)
        else:
            def fallback_levels() -> Iterator[_Level]:
                for level in (_CHAR, _GRAPHEME, _WORD, _SENTENCE):
                    first = next(iter(self._fallback_sections(level)), None)
                    if first is not None:
                        yield level, first, (_WORD if level == _SENTENCE else None)

            def fallback_bounds(lower: int | None, chunk_end: int) -> Iterator[int]:
                if lower is None:
                    return iter(())
                return _ends_until(self._fallback_sections(lower), chunk_end)

            fallback_level, fallback_max = self._find_correct_level(fallback_levels(), fallback_bounds)
            if fallback_max is not None and max_offset is not None:
                max_offset = min(fallback_max, max_offset)
            elif fallback_max is not None:
                max_offset = fallback_max
            sections = self._fallback_sections(_CHAR if fallback_level is None else fallback_level)

        sections = (s for s in sections if s[0] < s[1])
        if max_offset is not None:
            limit = max_offset
            sections = _take_while_start(sections, limit)

        # Fill up the sections, sizing the chunk so far at growing distances (in bytes) from the cursor.
        byte = self.byte
        capacity = self.capacity
        cursor_byte = byte(cursor)
        low = 0
        prev_equals = None
        target = self.max_chunk_bytes if self.max_chunk_bytes is not None else capacity
        while True:
            prev_num = len(sections_out)
            for section in sections:
                sections_out.append(section)
                if byte(section[1]) > cursor_byte + target:
                    break
            new_num = len(sections_out)
            if new_num == prev_num:
                break
            text_end = sections_out[-1][1]
            final_offset = byte(text_end) - cursor_byte
            if final_offset < target:
                break
            if self.sizer.known(cursor, text_end) is None:
                spans = [(cursor, text_end)]
                if (text_end - cursor) * self.sizer.ratio > 1.15 * capacity + 1:
                    # probably the last look-ahead: the binary search over these sections comes next
                    spans += self._predict_path(low, new_num - 1, lambda m: (cursor, sections_out[m][1]), capacity,
                                                _search_step)
                self.sizer.prefetch(spans)
            size = self.sizer.size(cursor, text_end)
            fits = _fits(size, capacity)
            if fits <= 0:
                size1 = max(size, 1)
                diff = max(capacity - size1, 1)
                avg = -(-final_offset // size1)
                target = final_offset + diff * avg + -(-final_offset // 10)
            if fits < 0:
                low = new_num - 1
            elif fits == 0:
                if prev_equals is not None and prev_equals < size:
                    break
                prev_equals = size
            else:
                break
        return low

    # -- choosing the chunk --------------------------------------------------------------------------------

    def _binary_search_next_chunk(self, low: int) -> tuple[int, int]:
        sections = self.next_sections
        capacity = self.capacity
        start = end = self.cursor
        equals_found = False
        high = max(len(sections) - 1, 0)
        success_index: int | None = None
        success_size: int | None = None
        while low <= high:
            mid = low + (high - low) // 2
            text_end = sections[mid][1]
            if self.sizer.known(start, text_end) is None:
                self.sizer.prefetch(self._predict_path(low, high, lambda m: (start, sections[m][1]), capacity,
                                                       _search_step))
            size = self.sizer.size(start, text_end)
            fits = _fits(size, capacity)
            if fits < 0:
                if text_end > end:
                    end, success_index, success_size = text_end, mid, size
            elif fits == 0:
                if text_end < end or not equals_found:
                    end, success_index, success_size = text_end, mid, size
                equals_found = True
            elif mid == 0 and start == end:  # even the first section is too big: take it anyway
                end, success_index, success_size = text_end, mid, size
            if fits < 0:
                low = mid + 1
            elif mid > 0:
                high = mid - 1
            else:
                break
        if success_index is not None:
            assert success_size is not None  # always set together with success_index
            for index in range(success_index + 1, len(sections)):
                text_end = sections[index][1]
                if self.sizer.size(start, text_end) <= success_size:
                    end = max(end, text_end)
                else:
                    break
        return start, end

    def _predict_path(self, low: int, high: int, span_of: Callable[[int], _Span], capacity: int,
                      step: _Step) -> list[_Span]:
        """The probes a binary search will most likely make from (low, high), to size them in one call.

        The path follows predicted sizes (tokens per character of the latest batch) while the prediction is
        clearly on one side of ``capacity``; the first doubtful probe ends it.
        """
        spans: list[_Span] = []
        ratio = self.sizer.ratio
        while low <= high and len(spans) < 6:
            mid = low + (high - low) // 2
            a, b = span_of(mid)
            spans.append((a, b))
            known = self.sizer.known(a, b)
            guess = known if known is not None else (b - a) * ratio
            if known is None and abs(guess - capacity) <= 0.15 * capacity + 1:
                break
            nxt = step(mid, _fits(round(guess), capacity), low, high)
            if nxt is None:
                break
            low, high = nxt
        return spans

    def _update_cursor(self, end: int) -> None:
        """Move the cursor to ``end``, or back to the earliest section start within ``overlap`` tokens of it."""
        if self.overlap == 0:
            self.cursor = end
            return
        sections = self.next_sections
        start = end
        low = 0
        high = bisect_left([e for _, e in sections], end)
        while low <= high:
            mid = low + (high - low) // 2
            offset = sections[mid][0]
            if self.sizer.known(offset, end) is None:
                self.sizer.prefetch(self._predict_path(low, high, lambda m: (sections[m][0], end), self.overlap,
                                                       _overlap_step))
            fits = _fits(self.sizer.size(offset, end), self.overlap)
            if fits <= 0 and self.cursor < offset < start:
                start = offset
            if fits < 0 and mid > 0:
                high = mid - 1
            else:
                low = mid + 1
        self.cursor = start


def _search_step(mid: int, fits: int, low: int, high: int) -> tuple[int, int] | None:
    """How ``_binary_search_next_chunk`` narrows its range after probing ``mid``."""
    if fits < 0:
        return mid + 1, high
    return (low, mid - 1) if mid > 0 else None


def _overlap_step(mid: int, fits: int, low: int, high: int) -> tuple[int, int] | None:
    """How ``_update_cursor`` narrows its range after probing ``mid``."""
    return (low, mid - 1) if fits < 0 and mid > 0 else (mid + 1, high)


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


def _ends_until(sections: Iterator[tuple[int, int]], limit: int) -> Iterator[int]:
    for _, end in sections:
        if end > limit:
            return
        yield end


def _take_while_start(sections: Iterator[tuple[int, int]], limit: int) -> Iterator[tuple[int, int]]:
    for section in sections:
        if section[0] > limit:
            return
        yield section


def _coalesce_by_length(levels: Iterable[_Level], byte: Callable[[int], int]) -> Iterator[_Level]:
    """itertools' coalesce as the crate uses it: drop a level whose first section is not shorter than the next's."""
    prev = None
    for item in levels:
        if prev is not None:
            (_, (ps, pe), _), (_, (s, e), _) = prev, item
            if byte(pe) - byte(ps) >= byte(e) - byte(s):
                prev = item
                continue
            yield prev
        prev = item
    if prev is not None:
        yield prev
