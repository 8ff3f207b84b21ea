"""Cutting and embedding documents for an index write, in steps a stop can come between.

A write commits its documents in batches (``batches``: a few small documents together, a large one
alone). Each batch is cut into chunks with the index's tokenizer one chunk at a time, its lexical
terms taken, and its chunks embedded in calls sized to take about ``EMBED_CALL_S``; the write's
``WriteGuard`` is consulted between any two of these steps, so a document of megabytes is stopped
within its own chunking or embedding. Nothing here writes: the caller commits a batch once all of it
is ready.
"""

from __future__ import annotations

import time
from array import array
from typing import TYPE_CHECKING

from ..errors import InvalidInputError, blame
from . import lexical
from .cancel import WriteGuard
from .store import ChunkSet, IndexConfig
from .types import DocumentIn

if TYPE_CHECKING:
    from ..core.backend import ModelInfo
    from ..core.engine import Engine
    from ..core.scope import Scope
    from ..text.services import TextServices

EMBED_BATCH = 32
"""Chunks per embedding call at most."""
EMBED_TOKENS = 256
"""Tokens (``max_tokens`` per chunk) of a write's first embedding call: on WebAssembly a call of
4,096 took 6-9 s in one loaded Chromium run, and a stop waits for the call under way."""
EMBED_CALL_S = 0.2
"""The next calls hold as many chunks as the last call embedded in this long (at most twice as many
as it, and ``EMBED_BATCH``)."""


def size_guess(doc: DocumentIn) -> int:
    """About how many chunks ``doc`` makes in one index (four characters a token, 64-token chunks)."""
    size = sum(len(c.text) for c in doc.contents if not isinstance(c, str))
    return max(1, size // (4 * 64))


def batches(sizes: list[int], max_chunks: int, max_documents: int) -> list[list[int]]:
    """Documents (by position) grouped in order into commits of about ``max_chunks`` chunks
    (``sizes`` guessed) and at most ``max_documents`` documents; a large document goes alone."""
    out: list[list[int]] = []
    pending: list[int] = []
    chunks = 0
    for i, size in enumerate(sizes):
        pending.append(i)
        chunks += size
        if chunks >= max_chunks or len(pending) >= max_documents:
            out.append(pending)
            pending, chunks = [], 0
    if pending:
        out.append(pending)
    return out


def embed_batch(config: IndexConfig) -> int:
    """Chunks of the first embedding call for ``config``."""
    return max(1, min(EMBED_BATCH, EMBED_TOKENS // config.max_tokens))


def next_batch(done: int, took_s: float) -> int:
    """Chunks of the next embedding call, after ``done`` chunks took ``took_s``."""
    most = min(EMBED_BATCH, 2 * done)
    if took_s <= 0:
        return most
    return max(1, min(most, int(done * EMBED_CALL_S / took_s)))


class Ingest:
    """Cuts and embeds documents for indexes: the engine's embedding models, the text services' chunker."""

    def __init__(self, engine: Engine, text: TextServices) -> None:
        self.engine = engine
        self.text = text

    async def chunk_sets(self, docs: list[DocumentIn], config: IndexConfig, model: ModelInfo, where: list[str],
                         scope: Scope | None, guard: WriteGuard) -> list[ChunkSet]:
        """Each document's chunks for ``config``, embedded in calls across the documents; a
        document's chunking errors are blamed on ``where[i]``."""
        sets = []
        for doc, param in zip(docs, where, strict=True):
            await guard.pause()
            cs = ChunkSet()
            for item, content in enumerate(doc.contents):
                if isinstance(content, str):
                    continue  # images are stored, not indexed
                with blame(f"{param}.contents[{item}]"):
                    chunks = await self.text.chunk(content.text, config.model, config.max_tokens, config.overlap,
                                                   guard.pause)
                for offset, text in chunks:
                    cs.items.append(item)
                    cs.starts.append(offset)
                    cs.ends.append(offset + len(text) - 1)
                    cs.texts.append(text)
            sets.append(cs)
        texts = [t for cs in sets for t in cs.texts]
        vectors = array("f")
        step = embed_batch(config)
        done = 0
        while done < len(texts):
            await guard.pause()
            batch = texts[done:done + step]
            started = time.monotonic()
            out = await self.engine.embed(model, batch, scope)
            if out.dims != config.dims:
                raise InvalidInputError(f"model {config.model!r} now gives {out.dims}-dimensional embeddings, "
                                        f"the index holds {config.dims}", "model")
            for v in out.vectors:
                vectors.extend(v)
            done += len(batch)
            step = next_batch(len(batch), time.monotonic() - started)
        at = 0
        for cs in sets:
            n = len(cs) * config.dims
            cs.vectors = vectors[at:at + n]
            at += n
        return sets

    async def chunk_all(self, docs: list[DocumentIn], configs: list[tuple[IndexConfig, ModelInfo]],
                        where: list[str], scope: Scope | None, guard: WriteGuard) -> dict[str, list[ChunkSet]]:
        """Index name -> each document's chunks; indexes cut alike share one chunking and embedding."""
        shared: dict[tuple[str, int, int], list[ChunkSet]] = {}
        out = {}
        for config, model in configs:
            how = (config.model, config.max_tokens, config.overlap)
            if how not in shared:
                shared[how] = await self.chunk_sets(docs, config, model, where, scope, guard)
            sets = []
            for base in shared[how]:
                terms = []
                if config.hybrid:
                    for t in base.texts:
                        terms.append(" ".join(lexical.terms(t)))
                        await guard.pause()
                sets.append(ChunkSet(base.items, base.starts, base.ends, base.texts, terms, base.vectors))
            out[config.index] = sets
        return out
