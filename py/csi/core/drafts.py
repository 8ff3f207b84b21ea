"""Drafts for speculative decoding from the text at hand (prompt lookup, no extra weights): the
tokens that followed the latest earlier occurrence of the context's last few tokens, and how many
to draft, adapted to how many are accepted.

A draft costs one forward pass over more tokens (cheap next to a step per token while decoding is
bound by reading the weights) and never changes the output: the backend chooses each token exactly
as plain decoding would and keeps the drafted ones only while they agree (``Verifying``).
"""

from __future__ import annotations

from collections.abc import Iterable

MIN_NGRAM, MAX_NGRAM = 2, 4
"""The n-grams looked up, longest first: a match of 2 tokens or more is followed often enough."""
START, MIN_LENGTH, MAX_LENGTH = 8, 2, 16
COOLDOWN_MAX = 32
"""Steps without drafts after drafts that all missed: 1, 2, 4, ... up to this many."""


class PromptLookup:
    """The context so far (prompt and reply), indexed by its n-grams."""

    def __init__(self, tokens: Iterable[int] = ()) -> None:
        self.tokens: list[int] = []
        # n-gram -> where the text after its latest occurrence starts; the n-grams ending at the
        # last token are left out, so a lookup of the context's tail finds an earlier occurrence
        self._after: dict[tuple[int, ...], int] = {}
        self.extend(tokens)

    def extend(self, tokens: Iterable[int]) -> None:
        for token in tokens:
            end = len(self.tokens)  # the n-grams ending at the token before this one go in now
            for n in range(MIN_NGRAM, MAX_NGRAM + 1):
                if end >= n:
                    self._after[tuple(self.tokens[end - n:end])] = end
            self.tokens.append(token)

    def propose(self, length: int) -> list[int]:
        """Up to ``length`` tokens that followed the latest earlier occurrence of the longest tail
        n-gram found (``[]``: none)."""
        for n in range(MAX_NGRAM, MIN_NGRAM - 1, -1):
            if len(self.tokens) < n:
                continue
            start = self._after.get(tuple(self.tokens[-n:]))
            if start is not None:
                return self.tokens[start:start + length]
        return []


class DraftLength:
    """How many tokens to draft: more while all are accepted, fewer after a miss; after drafts that
    all missed, none for a while (longer each time), so free text where lookups miss costs little."""

    def __init__(self, start: int = START, longest: int = MAX_LENGTH) -> None:
        self.length = start
        self.longest = longest
        self.cooldown = 0
        self._misses = 0
        self.drafted = 0
        self.accepted = 0

    def wanted(self) -> int:
        """The drafts to ask for at this step (0: a plain step)."""
        if self.cooldown:
            self.cooldown -= 1
            return 0
        return self.length

    def update(self, drafted: int, accepted: int) -> None:
        self.drafted += drafted
        self.accepted += accepted
        if accepted == drafted:
            self.length = min(self.longest, self.length * 2)
            self._misses = 0
        elif accepted == 0:
            self.length = max(MIN_LENGTH, self.length // 2)
            self.cooldown = min(COOLDOWN_MAX, 1 << self._misses)
            self._misses += 1
        else:
            self.length = max(MIN_LENGTH, accepted + 1)
            self._misses = 0
