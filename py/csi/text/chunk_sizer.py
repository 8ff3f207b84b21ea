"""Token sizes of pieces of the text being chunked: one batch callback, a cache, and guesses of what to size next.

``ChunkSizer`` plays the crate's ``MemoizedChunkSizer``: the size of a piece is that of the piece trimmed of
whitespace, counted once per distinct text through the caller's batch ``TokenCounter``. To make few calls, the
searches over chunk sizes ask it to size, together, the probes they will most likely make (``predict_path``).
"""

from __future__ import annotations

from collections.abc import Callable

TokenCounter = Callable[[list[str]], list[int]]
"""Batch callback: the token count of each text, without special tokens, padding or truncation."""

Span = tuple[int, int]  # (start, end) character indices
SearchStep = Callable[[int, int, int, int], "tuple[int, int] | None"]
"""(probed index, how it fits, low, high) -> the range a binary search goes on with, or None when it stops."""

# Rust's char::is_whitespace (the White_Space property), which str::trim uses.
WHITESPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
             "\u2028\u2029\u202f\u205f\u3000"


def fits(size: int, capacity: int) -> int:
    """ChunkCapacity::fits for a fixed capacity: -1 room left, 0 full, 1 too big."""
    return -1 if size < capacity else (1 if size > capacity else 0)


class ChunkSizer:
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
        """``(start, end)`` without surrounding whitespace; all whitespace trims to the empty ``(end, end)``."""
        text = self.text
        piece = text[start:end]
        head = len(piece) - len(piece.lstrip(WHITESPACE))
        if head == len(piece):
            return end, end
        return start + head, end - (len(piece) - len(piece.rstrip(WHITESPACE)))

    def size(self, start: int, end: int) -> int:
        """Tokens in ``text[start:end]`` after trimming (the crate's MemoizedChunkSizer::chunk_size)."""
        key = self.trimmed(start, end)
        size = self.cache.get(key)
        if size is None:
            self.fetch([key])
            size = self.cache[key]
        return size

    def fetch(self, keys: list[tuple[int, int]]) -> None:
        """Size the uncached trimmed ranges ``keys`` in one call (texts sized before are not counted again)."""
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
        """The size of ``text[start:end]`` if already counted, else None (never calls the counter)."""
        return self.cache.get(self.trimmed(start, end))

    def prefetch(self, spans: list[tuple[int, int]]) -> None:
        """Size several spans in one call (only fills the cache; the searches still read exact sizes)."""
        keys = [self.trimmed(a, b) for a, b in spans]
        if any(k not in self.cache for k in keys):
            self.fetch(keys)

    def predict_path(self, low: int, high: int, span_of: Callable[[int], Span], capacity: int,
                     step: SearchStep) -> list[Span]:
        """The probes a binary search will most likely make from (low, high), to size them in one call.

        The path follows predicted sizes (tokens per character of the latest batch) while the prediction is
        clearly on one side of ``capacity``; the first doubtful probe ends it.
        """
        spans: list[Span] = []
        ratio = self.ratio
        while low <= high and len(spans) < 6:
            mid = low + (high - low) // 2
            a, b = span_of(mid)
            spans.append((a, b))
            known = self.known(a, b)
            guess = known if known is not None else (b - a) * ratio
            if known is None and abs(guess - capacity) <= 0.15 * capacity + 1:
                break
            nxt = step(mid, fits(round(guess), capacity), low, high)
            if nxt is None:
                break
            low, high = nxt
        return spans
