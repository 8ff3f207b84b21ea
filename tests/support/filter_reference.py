"""A deliberately simple reference for the document index's metadata filters, and generators of
metadata and filters to compare against it (used by the filter, index and browser tests)."""

from __future__ import annotations

import random
import re
from datetime import datetime
from typing import Any

# --- a deliberately simple reference ----------------------------------------------------------------------------


def ref_nodes(value: Any, path: str = "") -> list[tuple[str, Any]]:
    """Every node of ``value`` with its concrete path (``a.b[0].c``), found by walking it recursively."""
    out = [(path, value)]
    if isinstance(value, dict):
        for key, child in value.items():
            out += ref_nodes(child, f"{path}.{key}" if path else key)
    elif isinstance(value, list):
        for i, child in enumerate(value):
            out += ref_nodes(child, f"{path}[{i}]")
    return out


def ref_field_regex(field: str) -> str:
    """``a[].b[2]`` -> a regex over concrete paths: ``[]`` is any index, ``[n]`` exactly n."""
    out = ""
    for token in re.findall(r"\[\d*\]|[^.\[\]]+|\.", field):
        if token == "[]":
            out += r"\[\d+\]"
        elif token.startswith("["):
            out += rf"\[{int(token[1:-1])}\]"
        else:
            out += re.escape(token)
    return out


def ref_datetime(text: Any) -> datetime | None:
    if not isinstance(text, str) or not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)", text):
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def ref_condition(condition: Any, value: Any) -> bool:
    if condition == "is_null" or condition == {"is_null": True}:
        return value is None
    ((kind, arg),) = condition.items()
    is_number = type(value) in (int, float)
    if kind == "greater_than":
        return is_number and value > arg
    if kind == "greater_than_or_equal_to":
        return is_number and value >= arg
    if kind == "less_than":
        return is_number and value < arg
    if kind == "less_than_or_equal_to":
        return is_number and value <= arg
    if kind == "equal_to":
        if isinstance(arg, dict):
            ((_, arg),) = arg.items()
        return type(value) is type(arg) and value == arg
    when, bound = ref_datetime(value), ref_datetime(arg)
    if when is None:
        return False
    return {"after": when > bound, "at_or_after": when >= bound,
            "before": when < bound, "at_or_before": when <= bound}[kind]


def ref_metadata_filter(mf: dict[str, Any], metadata: Any) -> bool:
    pattern = ref_field_regex(mf["field"])
    return any(re.fullmatch(pattern, path) and ref_condition(mf["condition"], value)
               for path, value in ref_nodes(metadata) if path)


def ref_matches(filters: list[dict[str, Any]], metadata: Any) -> bool:
    for search in filters:
        ((kind, mfs),) = search.items()
        hits = [ref_metadata_filter(mf, metadata) for mf in mfs]
        ok = {"without": not any(hits), "with_one_of": any(hits), "with_all": all(hits)}[kind]
        if not ok:
            return False
    return True


# --- generated comparison ---------------------------------------------------------------------------------------

KEYS = ["a", "b", "c", "n", "tags", "my-key_2"]
STRINGS = ["x", "y", "1", "true", ""]
DATES = [
    "2024-01-01T00:00:00+02:00", "2023-12-31T23:30:00Z", "2023-12-31T22:00:00Z", "2024-06-01T12:00:00-05:00",
    "2024-06-01T17:00:00Z", "2024-06-01T17:00:00.250Z", "2024-06-01T19:00:00.25+02:00", "1999-12-31T23:59:59Z",
    "2030-01-01T00:00:00+14:00",
]
BAD_DATES = ["2024-01-01", "2024-01-01T10:00:00", "2024-13-01T00:00:00Z", "yesterday", "2024-02-30T00:00:00Z"]
FIELDS = ["a", "b", "n", "a.b", "a.c", "b.a", "c.a.b", "a.b.c", "tags", "tags[]", "tags[0]", "tags[1]", "tags[].a",
          "a[]", "a[].b", "a[0].b", "a[2]", "b[][]", "b[1][0]", "a[].b[]", "my-key_2", "missing", "c.tags[].n"]


def gen_scalar(rng: random.Random) -> Any:
    kind = rng.randrange(6)
    if kind == 0:
        return rng.randint(-3, 3)
    if kind == 1:
        return rng.choice([-1.5, 0.0, 1.0, 2.5, 3.0])
    if kind == 2:
        return rng.choice([True, False])
    if kind == 3:
        return rng.choice(STRINGS)
    if kind == 4:
        return rng.choice(DATES + BAD_DATES[:3])
    return None


def gen_value(rng: random.Random, depth: int) -> Any:
    roll = rng.random()
    if depth > 0 and roll < 0.4:
        return gen_dict(rng, depth - 1)
    if depth > 0 and roll < 0.7:
        return [gen_value(rng, depth - 1) for _ in range(rng.randrange(4))]
    return gen_scalar(rng)


def gen_dict(rng: random.Random, depth: int) -> dict[str, Any]:
    return {key: gen_value(rng, depth) for key in rng.sample(KEYS, rng.randrange(2, 6))}


def gen_shaped(rng: random.Random) -> dict[str, Any]:
    """A document shaped like FIELDS expects (random scalars, random keys dropped), so deep paths resolve."""
    def maybe(value: Any) -> Any:
        return value if rng.random() < 0.8 else gen_scalar(rng)

    doc = {
        "a": maybe([maybe({"b": maybe([gen_scalar(rng) for _ in range(rng.randrange(3))]), "c": gen_scalar(rng)})
                    for _ in range(rng.randrange(4))]),
        "b": maybe([[gen_scalar(rng) for _ in range(rng.randrange(3))] for _ in range(rng.randrange(3))]),
        "c": maybe({"a": maybe({"b": gen_scalar(rng)}), "tags": maybe([{"n": gen_scalar(rng)}, gen_scalar(rng)])}),
        "tags": [maybe({"a": gen_scalar(rng)}) for _ in range(rng.randrange(4))],
        "n": gen_scalar(rng),
    }
    return {key: value for key, value in doc.items() if rng.random() < 0.85}


def gen_condition(rng: random.Random) -> Any:
    kind = rng.randrange(5)
    if kind == 0:
        return {rng.choice(["greater_than", "greater_than_or_equal_to", "less_than", "less_than_or_equal_to"]):
                rng.choice([-100, -2, 0, 1, 2.5, 3, 3.0])}
    if kind == 1:
        return {rng.choice(["after", "at_or_after", "before", "at_or_before"]):
                rng.choice(DATES + ["1900-01-01T00:00:00Z", "2100-01-01T00:00:00Z"])}
    if kind in (2, 3):
        value = rng.choice(["x", "", "1", 1, 3, 0, -1, True, False])
        if rng.random() < 0.3:
            wit = {str: "string_type", int: "integer_type", bool: "boolean_type"}[type(value)]
            value = {wit: value}
        return {"equal_to": value}
    return rng.choice(["is_null", {"is_null": True}])


def gen_filters(rng: random.Random) -> list[dict[str, Any]]:
    return [{rng.choice(["without", "with_one_of", "with_all"]):
             [{"field": rng.choice(FIELDS), "condition": gen_condition(rng)} for _ in range(rng.randrange(4))]}
            for _ in range(rng.randrange(1, 3))]
