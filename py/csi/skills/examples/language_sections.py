"""Example skill: split a text into chunks with offsets and tell the language of each."""


from pharia_skill import ChunkParams, Csi, Language, SelectLanguageRequest, skill
from pydantic import BaseModel, Field


class Input(BaseModel):
    text: str
    languages: list[Language] = Field(min_length=1, description="The languages to choose from (ISO 639-3)")
    model: str = Field(default="all-minilm-l6-v2", description="The model whose tokenizer sizes the chunks")
    max_tokens: int = Field(default=64, ge=1)


class Section(BaseModel):
    offset: int = Field(description="Where the section starts in the text, in characters")
    text: str
    language: Language | None


class Output(BaseModel):
    sections: list[Section]


@skill
def language_sections(csi: Csi, input: Input) -> Output:
    """Sections of a multilingual text, each with its detected language."""
    chunks = csi.chunk(input.text, ChunkParams(input.model, input.max_tokens))
    found = csi.select_language_concurrent([SelectLanguageRequest(c.text, input.languages) for c in chunks])
    sections = [Section(offset=c.character_offset, text=c.text, language=lang)
                for c, lang in zip(chunks, found, strict=True)]
    return Output(sections=sections)
