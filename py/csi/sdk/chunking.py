"""Chunking types of the skill SDK."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class ChunkParams:
    """Chunk for ``model``'s tokenizer: at most ``max_tokens`` per chunk, ``overlap`` (< max_tokens)
    tokens at most shared by neighbours."""

    model: str
    max_tokens: int
    overlap: int = 0


@dataclass
class ChunkRequest:
    """One request of ``Csi.chunk_concurrent``."""

    text: str
    params: ChunkParams


@dataclass
class Chunk:
    """A chunk and where it starts in the original text (in characters, i.e. Python str indices)."""

    text: str
    offset: int
