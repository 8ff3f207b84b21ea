"""Document-index types of the skill SDK (searching is served by the engine's document index)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, ClassVar


@dataclass(frozen=True)
class DocumentPath:
    """A document: ``name`` in ``collection`` in ``namespace``."""

    namespace: str
    collection: str
    name: str


@dataclass(frozen=True)
class IndexPath:
    """A search index of a collection."""

    namespace: str
    collection: str
    index: str


@dataclass
class _Condition:
    wire_name: ClassVar[str] = ""
    value: Any

    def wire(self) -> Any:
        value = self.value
        if isinstance(value, dt.datetime):
            if value.tzinfo is None:
                raise ValueError("date-times in filters must be timezone-aware")
            value = value.isoformat()
        return {self.wire_name: value}


@dataclass
class GreaterThan(_Condition):
    wire_name: ClassVar[str] = "greater_than"
    value: float


@dataclass
class GreaterThanOrEqualTo(_Condition):
    wire_name: ClassVar[str] = "greater_than_or_equal_to"
    value: float


@dataclass
class LessThan(_Condition):
    wire_name: ClassVar[str] = "less_than"
    value: float


@dataclass
class LessThanOrEqualTo(_Condition):
    wire_name: ClassVar[str] = "less_than_or_equal_to"
    value: float


@dataclass
class After(_Condition):
    wire_name: ClassVar[str] = "after"
    value: dt.datetime


@dataclass
class AtOrAfter(_Condition):
    wire_name: ClassVar[str] = "at_or_after"
    value: dt.datetime


@dataclass
class Before(_Condition):
    wire_name: ClassVar[str] = "before"
    value: dt.datetime


@dataclass
class AtOrBefore(_Condition):
    wire_name: ClassVar[str] = "at_or_before"
    value: dt.datetime


@dataclass
class EqualTo(_Condition):
    wire_name: ClassVar[str] = "equal_to"
    value: str | int | bool


@dataclass
class IsNull(_Condition):
    wire_name: ClassVar[str] = "is_null"
    value: bool = True

    def wire(self) -> Any:
        return "is_null"


FilterCondition = (GreaterThan | GreaterThanOrEqualTo | LessThan | LessThanOrEqualTo | After | AtOrAfter
                   | Before | AtOrBefore | EqualTo | IsNull)


@dataclass
class MetadataFilter:
    """``condition`` on the metadata ``field`` (dot nesting ``a.b``, arrays ``a[].b`` / ``a[1].b``)."""

    field: str
    condition: FilterCondition

    def wire(self) -> dict[str, Any]:
        return {"field": self.field, "condition": self.condition.wire()}


@dataclass
class Without:
    """None of the filters match."""

    value: list[MetadataFilter]

    def wire(self) -> dict[str, Any]:
        return {"without": [f.wire() for f in self.value]}


@dataclass
class WithOneOf:
    """At least one of the filters matches."""

    value: list[MetadataFilter]

    def wire(self) -> dict[str, Any]:
        return {"with_one_of": [f.wire() for f in self.value]}


@dataclass
class With:
    """All of the filters match (the seed's ``with-all``)."""

    value: list[MetadataFilter]

    def wire(self) -> dict[str, Any]:
        return {"with_all": [f.wire() for f in self.value]}


WithAll = With
SearchFilter = Without | With | WithOneOf


@dataclass
class SearchRequest:
    """One request of ``Csi.search_concurrent``."""

    index_path: IndexPath
    query: str
    max_results: int = 1
    min_score: float | None = None
    filters: list[SearchFilter] = field(default_factory=list)

    def wire(self) -> dict[str, Any]:
        p = self.index_path
        return {"index_path": {"namespace": p.namespace, "collection": p.collection, "index": p.index},
                "query": self.query, "max_results": self.max_results, "min_score": self.min_score,
                "filters": [f.wire() for f in self.filters]}


@dataclass
class Cursor:
    """A position in a document: item number and character position (inclusive)."""

    item: int
    position: int


@dataclass
class SearchResult:
    """A section of a document that matched a search, best first."""

    document_path: DocumentPath
    content: str
    score: float
    start: Cursor
    end: Cursor


@dataclass
class Text:
    """A text item of a document."""

    text: str
    modality: str = "text"


@dataclass
class Image:
    """An image item of a document (its contents are not exposed)."""

    modality: str = "image"


Modality = Text | Image
JsonSerializable = dict[str, Any] | list[Any] | str | int | float | bool | None


@dataclass
class Document:
    """A whole document: its items and metadata."""

    path: DocumentPath
    contents: list[Modality]
    metadata: JsonSerializable

    @property
    def text(self) -> str:
        """The text items joined by blank lines."""
        return "\n\n".join(c.text for c in self.contents if isinstance(c, Text))
