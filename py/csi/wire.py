"""What every face shares to read a request and to answer it: the strict base model and the one
request parser, which turns pydantic's first complaint into an ``InvalidInputError`` naming the
field; the base of reply models and the reply that is null."""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    RootModel,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
)

from .errors import InvalidInputError


class Strict(BaseModel):
    """Request models: unknown fields are refused, and no type is coerced into another."""

    model_config = ConfigDict(extra="forbid", strict=True)


class Reply(BaseModel):
    """Reply models: what the page receives, as ``model_dump(mode="json")`` gives it. A field whose
    default is ``None`` is sent only when it was set (``null`` included), the others always; so the
    page's types (worker/wire_types.d.ts) make exactly the fields with a ``None`` default optional."""

    @model_serializer(mode="wrap")
    def _leave_out_unset(self, handler: SerializerFunctionWrapHandler) -> Any:
        out = handler(self)
        fields = type(self).model_fields
        return {k: v for k, v in out.items() if k in self.model_fields_set or fields[k].default is not None}


class Null(RootModel[None]):
    """The reply of a message that has nothing to say: ``null``."""


NULL = Null(None)


MIN_REPETITION_PENALTY = 0.01
MAX_REPETITION_PENALTY = 100.0
"""The repetition penalties faces accept. HF, vLLM and WebLLM take any positive number, but the
penalty divides (positive) or multiplies (negative) float32 logits: 1e-320 turns them into
infinities and the log-probabilities into NaN. Within [0.01, 100] a logit grows at most 100-fold,
so it stays finite unless it was beyond 3.4e36 already (``processLogits`` also saturates it)."""

RepetitionPenalty = Annotated[float, Field(ge=MIN_REPETITION_PENALTY, le=MAX_REPETITION_PENALTY)]
"""HF's multiplicative repetition penalty, in every face that takes one (OpenAI, Spin)."""

M = TypeVar("M", bound=BaseModel)

# Discriminator tags and validator names pydantic puts into error locations.
_TAGS = {"system", "developer", "user", "assistant", "tool", "str", "list[str]", "list[TextContentPart]",
         "list[union[tagged-union[TextContentPart,MediaContentPart]]]", "constrained-int", "constrained-float", "int",
         "float", "bool", "text-item", "image-item", "text-part", "refusal-part", "media-part"}


def field_path(loc: tuple[int | str, ...]) -> str:
    """``('messages', 0, 'user', 'content')`` -> ``'messages[0].content'``."""
    out = ""
    for i, part in enumerate(loc):
        if isinstance(part, int):
            out += f"[{part}]"
        elif i and (part in _TAGS or "[" in part or "(" in part):  # a tag never comes first
            continue
        else:
            out += ("." if out else "") + part
    return out


def _branch_miss(err: Any) -> bool:
    """A union member the value is not even the type of (``str`` for a list): an error deeper in
    another member says more."""
    loc = err["loc"]
    return bool(loc) and isinstance(loc[-1], str) and str(err["type"]).endswith("_type") and (
        loc[-1] in _TAGS or "[" in loc[-1])


def parse_request(model: type[M], data: Any) -> M:
    """Validate ``data`` as ``model``; raise ``InvalidInputError`` for the first problem."""
    if not isinstance(data, dict):
        raise InvalidInputError("the request must be a JSON object", "request")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = min(exc.errors(), key=lambda e: (e["type"] == "union_tag_invalid", _branch_miss(e), len(e["loc"])))
        path = field_path(tuple(err["loc"]))
        kind = err["type"]
        if kind == "missing":
            message = f"`{path}` is required"
        elif kind == "extra_forbidden":
            message = f"unknown field `{path}`"
        else:
            message = f"`{path}`: {err['msg']}"
        raise InvalidInputError(message, path if err["loc"] else "request") from None


MAX_BATCH = 2048
"""The most items one batch call (CSI batches, embeddings inputs, RemoteLLM prompts) may hold."""


def parse_batch(model: type[M], items: Any, key: str = "requests") -> M:
    """A batch face's items (a JSON array), validated as ``{key: items}`` (paths read ``requests[i]...``)."""
    if isinstance(items, list) and len(items) > MAX_BATCH:
        raise InvalidInputError(f"`{key}` holds {len(items)} items; a batch holds at most {MAX_BATCH}", key)
    return parse_request(model, {key: items})
