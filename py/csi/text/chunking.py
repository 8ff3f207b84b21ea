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

This module is the iterator that walks the text chunk by chunk (the crate's ``TextChunks``); ``chunk_sections``
says where the text may be cut, ``chunk_levels`` at which level, and ``chunk_sizer`` sizes the pieces.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator

from ..errors import InvalidInputError
from .chunk_levels import Level, LevelFinder
from .chunk_sections import CHARS, GRAPHEMES, SENTENCES, WORDS, TextSections
from .chunk_sizer import ChunkSizer, Span, TokenCounter, fits

__all__ = ["TokenCounter", "chunk_steps", "chunk_text", "count_chars"]


def count_chars(texts: list[str]) -> list[int]:
    """A ``TokenCounter`` that counts characters (Unicode scalar values), like the crate's ``Characters``."""
    return [len(t) for t in texts]


def chunk_text(text: str, max_tokens: int, overlap: int, count_tokens: TokenCounter) -> list[tuple[int, str]]:
    """Chunks of ``text`` as (character offset into text, chunk string), in order, text-splitter semantics.

    ``max_tokens`` is the capacity of each chunk, ``overlap`` the most tokens a chunk may share with the one
    before; ``count_tokens`` sizes texts in batches. ``text[offset:offset + len(chunk)] == chunk`` always holds.
    """
    return list(chunk_steps(text, max_tokens, overlap, count_tokens))


def chunk_steps(text: str, max_tokens: int, overlap: int, count_tokens: TokenCounter) -> Iterator[tuple[int, str]]:
    """``chunk_text``'s chunks one at a time, each cut only when asked for (so a caller can stop, or
    let other work run, between two chunks of a long text). The arguments are checked at once."""
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise InvalidInputError("`max_tokens` must be an integer of at least 1", param="max_tokens")
    if isinstance(overlap, bool) or not isinstance(overlap, int) or overlap < 0:
        raise InvalidInputError("`overlap` must be a non-negative integer", param="overlap")
    if overlap >= max_tokens:
        raise InvalidInputError(f"`overlap` ({overlap}) must be less than `max_tokens` ({max_tokens})",
                                param="overlap")
    return iter(_TextChunks(text, max_tokens, overlap, count_tokens))


class _TextChunks:
    """The crate's ``TextChunks`` iterator over (char offset, chunk) for ``TextSplitter``."""

    def __init__(self, text: str, capacity: int, overlap: int, count_tokens: TokenCounter) -> None:
        self.text = text
        self.n = len(text)
        self.capacity = capacity
        self.overlap = overlap
        self.sizer = ChunkSizer(text, count_tokens)
        self.cursor = 0
        self.prev_item_end = 0
        self.max_chunk_bytes: int | None = None
        self.sections = TextSections(text)
        self.byte = self.sections.byte
        self.levels = LevelFinder(self.sizer, capacity, self.byte)

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
        low = self._update_next_sections()
        start, end = self._binary_search_next_chunk(low)
        size = self.byte(end) - self.byte(start)
        self.max_chunk_bytes = size if self.max_chunk_bytes is None else max(self.max_chunk_bytes, size)
        self._update_cursor(end)
        ts, te = self.sizer.trimmed(start, end)
        return ts, self.text[ts:te]

    # -- the sections of the next chunk ---------------------------------------------------------------------

    def _update_next_sections(self) -> int:
        """Find the sections the next chunk is made of; returns the lowest index known to fit."""
        sections_out: list[Span] = []
        self.next_sections = sections_out
        cursor = self.cursor
        levels = self.sections.newline_levels(cursor)

        def semantic_levels() -> Iterator[Level]:
            lower = None
            for level in levels:
                first = next(self.sections.semantic_sections(level, cursor), None)
                candidate_lower = lower
                lower = level
                if first is not None:
                    yield level, first, candidate_lower

        def semantic_bounds(lower: int | None, chunk_end: int) -> Iterator[int]:
            if lower is None:
                return iter(())
            return _ends_until(self.sections.semantic_sections(lower, cursor), chunk_end)

        semantic_level, max_offset = self.levels.find(semantic_levels(), semantic_bounds)
        if semantic_level is not None:
            sections = self.sections.semantic_sections(semantic_level, cursor)
        else:
            def fallback_levels() -> Iterator[Level]:
                for level in (CHARS, GRAPHEMES, WORDS, SENTENCES):
                    first = next(iter(self.sections.fallback_sections(level, cursor)), None)
                    if first is not None:
                        yield level, first, (WORDS if level == SENTENCES else None)

            def fallback_bounds(lower: int | None, chunk_end: int) -> Iterator[int]:
                if lower is None:
                    return iter(())
                return _ends_until(self.sections.fallback_sections(lower, cursor), chunk_end)

            fallback_level, fallback_max = self.levels.find(fallback_levels(), fallback_bounds)
            if fallback_max is not None and max_offset is not None:
                max_offset = min(fallback_max, max_offset)
            elif fallback_max is not None:
                max_offset = fallback_max
            sections = self.sections.fallback_sections(CHARS if fallback_level is None else fallback_level, cursor)

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
                    spans += self.sizer.predict_path(low, new_num - 1, lambda m: (cursor, sections_out[m][1]), capacity,
                                                _search_step)
                self.sizer.prefetch(spans)
            size = self.sizer.size(cursor, text_end)
            fit = fits(size, capacity)
            if fit <= 0:
                size1 = max(size, 1)
                diff = max(capacity - size1, 1)
                avg = -(-final_offset // size1)
                target = final_offset + diff * avg + -(-final_offset // 10)
            if fit < 0:
                low = new_num - 1
            elif fit == 0:
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
                self.sizer.prefetch(self.sizer.predict_path(low, high, lambda m: (start, sections[m][1]), capacity,
                                                       _search_step))
            size = self.sizer.size(start, text_end)
            fit = fits(size, capacity)
            if fit < 0:
                if text_end > end:
                    end, success_index, success_size = text_end, mid, size
            elif fit == 0:
                if text_end < end or not equals_found:
                    end, success_index, success_size = text_end, mid, size
                equals_found = True
            elif mid == 0 and start == end:  # even the first section is too big: take it anyway
                end, success_index, success_size = text_end, mid, size
            if fit < 0:
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
                self.sizer.prefetch(self.sizer.predict_path(low, high, lambda m: (sections[m][0], end), self.overlap,
                                                       _overlap_step))
            fit = fits(self.sizer.size(offset, end), self.overlap)
            if fit <= 0 and self.cursor < offset < start:
                start = offset
            if fit < 0 and mid > 0:
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
