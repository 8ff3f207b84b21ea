"""The CSI ``chunking`` and ``language`` interfaces (pharia:skill@0.3.0, plus pharia 0.3.3's
``chunk-with-offsets``): batches of requests in, answers in request order."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import Field, RootModel

from ...errors import blame
from ...wire import Reply, Strict

if TYPE_CHECKING:
    from ...text.services import TextServices


class ChunkParams(Strict):
    model: str
    max_tokens: Annotated[int, Field(ge=1, le=2**32 - 1)]
    overlap: Annotated[int, Field(ge=0, le=2**32 - 1)] = 0


class ChunkRequest(Strict):
    text: str
    params: ChunkParams


class ChunkWithOffsetRequest(ChunkRequest):
    character_offsets: bool = True


class ChunkBatch(Strict):
    requests: list[ChunkRequest]


class ChunkWithOffsetBatch(Strict):
    requests: list[ChunkWithOffsetRequest]


class SelectLanguageRequest(Strict):
    text: str
    languages: list[str]


class SelectLanguageBatch(Strict):
    requests: list[SelectLanguageRequest]


class ChunkResults(RootModel[list[list[str]]]):
    """Each text's chunks, in request order."""


class ChunkWithOffset(Reply):
    text: str
    byte_offset: int
    """Where the chunk starts in the text's UTF-8 bytes."""
    character_offset: int | None
    """Where it starts in the text's code points (``None`` unless ``character_offsets``)."""


class ChunkWithOffsetResults(RootModel[list[list[ChunkWithOffset]]]):
    """Each text's chunks with their offsets, in request order."""


class LanguageResults(RootModel[list[str | None]]):
    """An ISO 639-3 code per request, or ``None`` when unclear."""


async def _chunks(text: TextServices, req: ChunkRequest, i: int) -> list[tuple[int, str]]:
    p = req.params
    with blame(f"requests[{i}].params"):
        return await text.chunk(req.text, p.model, p.max_tokens, p.overlap)


async def chunk(text: TextServices, batch: ChunkBatch) -> ChunkResults:
    """``chunking.chunk``: each text's chunks, trimmed of surrounding whitespace."""
    return ChunkResults([[c for _, c in await _chunks(text, req, i)] for i, req in enumerate(batch.requests)])


async def chunk_with_offsets(text: TextServices, batch: ChunkWithOffsetBatch) -> ChunkWithOffsetResults:
    """``chunking.chunk-with-offsets``: chunks with their UTF-8 byte offset and, if asked for,
    character (code point) offset into the text."""
    out = []
    for i, req in enumerate(batch.requests):
        chunks = await _chunks(text, req, i)
        source, done_chars, done_bytes = req.text, 0, 0
        items = []
        for offset, piece in chunks:
            done_bytes += len(source[done_chars:offset].encode("utf-8", "surrogatepass"))
            done_chars = offset
            items.append(ChunkWithOffset(text=piece, byte_offset=done_bytes,
                                         character_offset=offset if req.character_offsets else None))
        out.append(items)
    return ChunkWithOffsetResults(out)


async def select_language(text: TextServices, batch: SelectLanguageBatch) -> LanguageResults:
    """``language.select-language``: an ISO 639-3 code per request, or ``None`` when unclear."""
    out = []
    for i, req in enumerate(batch.requests):
        with blame(f"requests[{i}]"):
            out.append(await text.select_language(req.text, req.languages))
    return LanguageResults(out)
