"""Drafts from a draft model: a smaller loaded model with the target's vocabulary proposes the next
tokens (its greedy choices), which the target checks in one forward pass (``Verifying``), as with
drafts from the context (``core.drafts``). The draft model keeps its own KV cache of the context,
fitted anew before each proposal, so only the tokens it has not seen run through it."""

from __future__ import annotations

from collections.abc import Iterable

from .backend import Decoding

START, LONGEST = 4, 8
"""Draft lengths for a draft model: each drafted token costs a pass of the draft model."""


class ModelDrafts:
    """The context so far (prompt and reply), and the draft model that continues it."""

    def __init__(self, backend: Decoding, model_id: str, context_length: int, tokens: Iterable[int] = ()) -> None:
        self.backend = backend
        self.model_id = model_id
        self.context_length = context_length
        self.tokens: list[int] = list(tokens)

    def extend(self, tokens: Iterable[int]) -> None:
        self.tokens.extend(tokens)

    async def propose(self, length: int) -> list[int]:
        """Up to ``length`` tokens the draft model chooses after the context (fewer near the end of
        its context window)."""
        length = min(length, self.context_length - len(self.tokens))
        if length <= 0 or not self.tokens:
            return []
        kept = self.backend.reuse_prefix(self.model_id, self.tokens)
        feed = self.tokens[kept:]
        out: list[int] = []
        for _ in range(length):
            token = (await self.backend.step(self.model_id, feed)).token
            out.append(token)
            feed = [token]
        return out
