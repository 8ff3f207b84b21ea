"""Turn pydantic validation failures into ``InvalidInputError`` naming the field."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from .errors import InvalidInputError

M = TypeVar("M", bound=BaseModel)

# Discriminator tags and validator names pydantic puts into error locations.
_TAGS = {"system", "user", "assistant", "tool", "str", "list[str]", "list[TextContentPart]",
         "constrained-int", "constrained-float", "int", "float", "text-item", "image-item"}


def field_path(loc: tuple[int | str, ...]) -> str:
    """``('messages', 0, 'user', 'content')`` -> ``'messages[0].content'``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in _TAGS or "[" in part or "(" in part:
            continue
        else:
            out += ("." if out else "") + part
    return out


def parse_request(model: type[M], data: Any) -> M:
    """Validate ``data`` as ``model``; raise ``InvalidInputError`` for the first problem."""
    if not isinstance(data, dict):
        raise InvalidInputError("the request must be a JSON object", None)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = min(exc.errors(), key=lambda e: (e["type"] == "union_tag_invalid", len(e["loc"])))
        path = field_path(tuple(err["loc"]))
        kind = err["type"]
        if kind == "missing":
            message = f"`{path}` is required"
        elif kind == "extra_forbidden":
            message = f"unknown field `{path}`"
        else:
            message = f"`{path}`: {err['msg']}"
        raise InvalidInputError(message, path or None) from None
