"""Chunk a text, tell its language and complete a prompt from its first chunk: more of the CSI."""

from pharia_skill import ChunkParams, CompletionParams, Csi, Language, skill
from pydantic import BaseModel


class Text(BaseModel):
    text: str


class Report(BaseModel):
    chunks: list[str]
    offsets: list[int]
    language: str | None
    headline: str


@skill
def tour(csi: Csi, input: Text) -> Report:
    chunks = csi.chunk(input.text, ChunkParams("llama-3.1-8b-instruct", max_tokens=16))
    language = csi.select_language(input.text, [Language.English, Language.German])
    prompt = f"A headline for: {chunks[0].text}\nHeadline:"
    completion = csi.complete("llama-3.1-8b-instruct", prompt, CompletionParams(max_tokens=12, stop=["\n"]))
    return Report(
        chunks=[chunk.text for chunk in chunks],
        offsets=[chunk.character_offset for chunk in chunks],
        language=language.value if language else None,
        headline=completion.text.strip(),
    )
