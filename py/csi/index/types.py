"""Request and reply shapes of the document index: the seed's reads (``search``, ``documents``,
``document-metadata``) and csi-web's writes (``engine.index.*``)."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, JsonValue, RootModel, StringConstraints, Tag, field_validator

from ..wire import MAX_BATCH, Reply, Strict

# Names are free text without control characters; document names may be longer.
Name = Annotated[str, StringConstraints(min_length=1, max_length=256, pattern=r"^[^\x00-\x1f\x7f]+$")]
DocumentName = Annotated[str, StringConstraints(min_length=1, max_length=1000, pattern=r"^[^\x00-\x1f\x7f]+$")]
U32 = Annotated[int, Field(ge=0, le=2**32 - 1)]

MAX_DOCUMENT_CHARS = 4 * 1024 * 1024
"""The most characters of text one document's items may hold together."""
MAX_METADATA_CHARS = 1024 * 1024
"""The most characters a document's metadata may take as JSON text."""


class IndexPath(Strict):
    namespace: Name
    collection: Name
    index: Name


class DocumentPath(Strict):
    namespace: Name
    collection: Name
    name: DocumentName

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.namespace, self.collection, self.name)


class TextItem(Strict):
    text: str


def _item_kind(item: Any) -> str:
    return "image-item" if isinstance(item, str) else "text-item"


# A tagged union, so a bad text item's error names its field (``contents[0].text``).
Item = Annotated[Annotated[TextItem, Tag("text-item")] | Annotated[Literal["image"], Tag("image-item")],
                 Discriminator(_item_kind)]


class DocumentIn(Strict):
    path: DocumentPath
    contents: list[Item]
    metadata: Any = None

    @field_validator("contents")
    @classmethod
    def _text_fits(cls, contents: list[TextItem | str]) -> list[TextItem | str]:
        chars = sum(len(item.text) for item in contents if isinstance(item, TextItem))
        if chars > MAX_DOCUMENT_CHARS:
            raise ValueError(f"the document's text has {chars} characters; a document holds at most "
                             f"{MAX_DOCUMENT_CHARS}")
        return contents

    @field_validator("metadata")
    @classmethod
    def _metadata_fits(cls, metadata: Any) -> Any:
        try:
            chars = len(json.dumps(metadata, ensure_ascii=False, allow_nan=False))
        except (TypeError, ValueError, RecursionError):
            raise ValueError("the metadata must be plain JSON") from None
        if chars > MAX_METADATA_CHARS:
            raise ValueError(f"the metadata takes {chars} characters as JSON; the limit is {MAX_METADATA_CHARS}")
        return metadata


class DocumentBatch(Strict):
    documents: Annotated[list[DocumentIn], Field(max_length=MAX_BATCH)]


class PathBatch(Strict):
    requests: list[DocumentPath]


class CreateIndex(Strict):
    namespace: Name
    collection: Name
    index: Name
    model: str = "all-minilm-l6-v2"
    max_tokens: Annotated[int, Field(ge=1, le=2**32 - 1)] = 128
    overlap: U32 = 0
    hybrid: bool = False


class CollectionRef(Strict):
    """A collection, or with ``index`` one index of it."""

    namespace: Name
    collection: Name
    index: Name | None = None


class ListRequest(Strict):
    namespace: Name | None = None
    collection: Name | None = None


class SearchRequest(Strict):
    index_path: IndexPath
    query: str
    max_results: U32 = 1
    min_score: Annotated[float, Field(allow_inf_nan=False)] | None = None
    filters: list[Any] = []


class SearchBatch(Strict):
    requests: list[SearchRequest]


# ---- replies -------------------------------------------------------------------------------------

class SectionBound(Reply):
    """Where a found section starts or ends: the document's item, and the character in it."""

    item: int
    position: int


class SearchResult(Reply):
    document_path: DocumentPath
    content: str
    score: float
    """The cosine similarity (hybrid indexes: blended with the lexical score), in [-1, 1]."""
    start: SectionBound
    end: SectionBound


class SearchResults(RootModel[list[list[SearchResult]]]):
    """Per request the best sections first, in request order."""


class Document(Reply):
    path: DocumentPath
    contents: list[Item]
    metadata: JsonValue


class Documents(RootModel[list[Document]]):
    """The documents, in request order."""


class DocumentMetadata(RootModel[list[JsonValue]]):
    """Per path its document's metadata, ``None`` for a missing document."""


class IndexInfo(Reply):
    """An index's configuration (``dims``: its model's embedding size)."""

    namespace: str
    collection: str
    index: str
    model: str
    max_tokens: int
    overlap: int
    hybrid: bool
    dims: int


class IndexCreated(IndexInfo):
    created: bool
    """``False``: the index existed with this configuration (its missing documents were indexed)."""


class PutResult(Reply):
    documents: int
    chunks: int


class Deleted(RootModel[list[bool]]):
    """Per path whether its document existed."""


class CollectionInfo(Reply):
    namespace: str
    collection: str
    indexes: list[IndexInfo]


class DocumentChunks(Reply):
    name: str
    chunks: dict[str, int]
    """Index name -> the document's chunks in it."""


class Collections(Reply):
    collections: list[CollectionInfo]
    documents: list[DocumentChunks] | None = None
    """With ``namespace`` and ``collection``: the collection's documents, by name."""


class Dropped(Reply):
    dropped: Literal["collection", "index"]
