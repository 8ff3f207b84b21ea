"""Which semantic level the next chunk is cut at: the highest whose first section still fits the capacity.

``LevelFinder`` follows the crate's ``MemoizedChunkSizer::find_correct_level``, including its byte heuristics:
a section longer than the capacity in UTF-8 bytes is sized by probing its prefixes at lower-level boundaries
(the 1st, 2nd, 4th, 8th ... past a start measured in bytes), so a long section need not be sized whole.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from .chunk_sizer import ChunkSizer, Span, fits

Level = tuple[int, Span, int | None]  # (level, its first section, the level below it to probe with)

_PROBE_OVERSHOOT_DIVISOR = 4
_PROBE_START_BYTE_FACTOR = 8


class LevelFinder:
    """Finds the level to cut at, sizing through ``sizer`` against ``capacity``; ``byte`` maps index -> UTF-8 offset."""

    def __init__(self, sizer: ChunkSizer, capacity: int, byte: Callable[[int], int]) -> None:
        self.sizer = sizer
        self.capacity = capacity
        self.byte = byte

    def find(self, levels: Iterable[Level], lower_boundaries_for: Callable[[int | None, int], Iterator[int]],
             ) -> tuple[int | None, int | None]:
        """MemoizedChunkSizer::find_correct_level: (the level to cut at, the end of the first section too big).

        ``levels`` yields (level, its first section, lower level), lowest level first; the answer is the level
        before the first whose section does not fit (None if none fits), and that section's end (None if all fit).
        ``lower_boundaries_for(lower, end)`` yields the ends of the lower level's sections up to ``end``.
        """
        semantic_level = None
        max_offset = None
        byte = self.byte
        for level, (start, end), lower in _coalesce_by_length(levels, byte):
            length = byte(end) - byte(start)
            if length > self.capacity:
                fit = self._fits_with_boundaries(start, end, lower_boundaries_for(lower, end))
                if fit > 0:
                    max_offset = end
                    break
            semantic_level = level
        return semantic_level, max_offset

    def _fits_with_boundaries(self, start: int, end: int, boundaries: Iterator[int]) -> int:
        """Whether text[start:end] fits, probing prefixes at lower-level boundaries to avoid sizing it all."""
        capacity, byte = self.capacity, self.byte
        chunk_end = byte(end)
        probe_max = capacity + max(capacity // _PROBE_OVERSHOOT_DIVISOR, 1)
        probe_start = min(byte(start) + max(capacity * _PROBE_START_BYTE_FACTOR, 1), chunk_end)
        if probe_start == chunk_end:
            return fits(self.sizer.size(start, end), capacity)
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
                return fits(size, capacity)
            k += 1
            boundary = probe(k)
        return fits(self.sizer.size(start, end), capacity)

    def _prefetch_probes(self, start: int, end: int, k: int, probe: Callable[[int], int | None],
                         probe_max: int) -> None:
        """Size, in one call, the probes likely needed before one exceeds ``probe_max`` (cf. ``predict_path``)."""
        spans: list[Span] = []
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


def _coalesce_by_length(levels: Iterable[Level], byte: Callable[[int], int]) -> Iterator[Level]:
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
