"""The CSI ``chunking`` and ``language`` interfaces (seed 001, plus pharia 0.3.3's
``chunk-with-offsets``): batches of requests in, answers in request order."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from .validation import parse_request

if TYPE_CHECKING:
    from .engine import Engine


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class ChunkParams(_Strict):
    model: str
    max_tokens: Annotated[int, Field(ge=1, le=2**32 - 1)]
    overlap: Annotated[int, Field(ge=0, le=2**32 - 1)] = 0


class ChunkRequest(_Strict):
    text: str
    params: ChunkParams


class ChunkWithOffsetRequest(ChunkRequest):
    character_offsets: bool = True


class ChunkBatch(_Strict):
    requests: list[ChunkRequest]


class ChunkWithOffsetBatch(_Strict):
    requests: list[ChunkWithOffsetRequest]


class SelectLanguageRequest(_Strict):
    text: str
    languages: list[str]


class SelectLanguageBatch(_Strict):
    requests: list[SelectLanguageRequest]


async def _chunks(engine: Engine, req: ChunkRequest, i: int) -> list[tuple[int, str]]:
    p = req.params
    return await engine.text.chunk(req.text, p.model, p.max_tokens, p.overlap, f"requests[{i}].params")


async def csi_chunk(engine: Engine, requests: Any) -> list[list[str]]:
    """``chunking.chunk``: each text's chunks, trimmed of surrounding whitespace."""
    batch = parse_request(ChunkBatch, {"requests": requests})
    return [[c for _, c in await _chunks(engine, req, i)] for i, req in enumerate(batch.requests)]


async def csi_chunk_with_offsets(engine: Engine, requests: Any) -> list[list[dict[str, Any]]]:
    """``chunking.chunk-with-offsets``: chunks with their UTF-8 byte offset and, if asked for,
    character (code point) offset into the text."""
    batch = parse_request(ChunkWithOffsetBatch, {"requests": requests})
    out = []
    for i, req in enumerate(batch.requests):
        chunks = await _chunks(engine, req, i)
        text, done_chars, done_bytes = req.text, 0, 0
        items = []
        for offset, chunk in chunks:
            done_bytes += len(text[done_chars:offset].encode("utf-8", "surrogatepass"))
            done_chars = offset
            items.append({"text": chunk, "byte_offset": done_bytes,
                          "character_offset": offset if req.character_offsets else None})
        out.append(items)
    return out


async def csi_select_language(engine: Engine, requests: Any) -> list[str | None]:
    """``language.select-language``: an ISO 639-3 code per request, or ``None`` when unclear."""
    batch = parse_request(SelectLanguageBatch, {"requests": requests})
    return [await engine.text.select_language(req.text, req.languages, f"requests[{i}]")
            for i, req in enumerate(batch.requests)]
