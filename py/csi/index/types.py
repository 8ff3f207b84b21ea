"""Request shapes of the document index: the seed's reads (``search``, ``documents``,
``document-metadata``) and csi-web's writes (``engine.index.*``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, StringConstraints, Tag

from ..wire import Strict

# Names are free text without control characters; document names may be longer.
Name = Annotated[str, StringConstraints(min_length=1, max_length=256, pattern=r"^[^\x00-\x1f\x7f]+$")]
DocumentName = Annotated[str, StringConstraints(min_length=1, max_length=1000, pattern=r"^[^\x00-\x1f\x7f]+$")]
U32 = Annotated[int, Field(ge=0, le=2**32 - 1)]


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


class DocumentBatch(Strict):
    documents: list[DocumentIn]


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
