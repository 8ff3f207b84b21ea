"""A corpus of JSON Schemas for structured-output tests: hand-written ones covering every keyword
family (object, array, enum, const, anyOf, oneOf, $ref/$defs, numeric and length bounds, pattern,
format), and seeded random compositions of them. Outputs are checked with the ``jsonschema``
package, never with our own code. (The ``time`` format is left out: ``jsonschema``'s checker
rejects even ``14:24:24Z``.)"""

from __future__ import annotations

import random
from typing import Any

Schema = dict[str, Any]

HAND_WRITTEN: list[Schema] = [
    {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
     "required": ["name", "age"]},
    {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
    {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 4},
    {"type": "string", "enum": ["red", "green", "blue"]},
    {"const": "fixed"},
    {"type": "integer", "minimum": 10, "maximum": 99},
    {"type": "number"},
    {"type": "string", "minLength": 2, "maxLength": 5},
    {"type": "string", "pattern": "^[A-Z][a-z]{1,6}$"},
    {"type": "string", "format": "date"},
    {"type": "string", "format": "email"},
    {"type": "string", "format": "uuid"},
    {"type": "string", "format": "hostname"},
    {"type": "string", "format": "date-time"},
    {"anyOf": [{"type": "integer"}, {"type": "null"}]},
    {"oneOf": [{"type": "object", "properties": {"kind": {"const": "a"}, "x": {"type": "integer"}},
                "required": ["kind", "x"]},
               {"type": "object", "properties": {"kind": {"const": "b"}, "y": {"type": "string", "maxLength": 8}},
                "required": ["kind", "y"]}]},
    {"$defs": {"point": {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
                         "required": ["x", "y"]}},
     "type": "object", "properties": {"from": {"$ref": "#/$defs/point"}, "to": {"$ref": "#/$defs/point"}},
     "required": ["from", "to"]},
    {"definitions": {"tag": {"type": "string", "enum": ["x", "y"]}},
     "type": "array", "items": {"$ref": "#/definitions/tag"}, "maxItems": 3},
    {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string", "maxLength": 6},
                                               "maxItems": 3}}, "required": ["tags"]},
    {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string", "maxLength": 4}},
     "required": ["a"], "additionalProperties": False},
    {"type": "array", "prefixItems": [{"type": "string", "maxLength": 4}, {"type": "integer"}],
     "items": False},
    {"type": "object", "properties": {"n": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 5}},
     "required": ["n"]},
    {"type": ["string", "integer"], "maxLength": 5},
    {"type": "object", "properties": {"inner": {"type": "object", "properties": {
        "deep": {"type": "object", "properties": {"v": {"type": "boolean"}}, "required": ["v"]}},
        "required": ["deep"]}}, "required": ["inner"]},
    {"type": "object", "title": "Person", "description": "annotations are accepted",
     "properties": {"id": {"type": "integer", "minimum": 1, "description": "an id"}}, "required": ["id"]},
    {"type": "null"},
    {"type": "boolean"},
    {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string", "enum": ["p", "q"]}},
                                "required": ["k"]}, "minItems": 2, "maxItems": 2},
    {"type": "integer", "minimum": -100, "maximum": -90},
    {"type": "string", "format": "uri"},
]


def _leaf(rng: random.Random) -> Schema:
    kind = rng.choice(["string", "integer", "number", "boolean", "enum", "const", "pattern", "format", "null"])
    if kind == "string":
        lo = rng.randint(0, 3)
        return {"type": "string", "minLength": lo, "maxLength": lo + rng.randint(1, 8)}
    if kind == "integer":
        lo = rng.randint(-50, 50)
        return {"type": "integer", "minimum": lo, "maximum": lo + rng.randint(0, 500)}
    if kind == "number":
        return {"type": "number"}
    if kind == "enum":
        return {"enum": rng.sample(["alpha", "beta", "gamma", 1, 2, True, None, "δέλτα"], rng.randint(1, 4))}
    if kind == "const":
        return {"const": rng.choice(["on", 7, False, "x y"])}
    if kind == "pattern":
        return {"type": "string", "pattern": rng.choice(["^[a-z]{2,5}$", "^[0-9]{3}-[0-9]{2}$", "^(yes|no)$"])}
    if kind == "format":
        return {"type": "string", "format": rng.choice(["date", "email", "uuid", "date-time", "hostname"])}
    return {"type": kind}


def _node(rng: random.Random, depth: int, defs: dict[str, Schema]) -> Schema:
    if depth <= 0:
        return _leaf(rng)
    kind = rng.choice(["object", "object", "array", "anyOf", "ref", "leaf"])
    if kind == "object":
        names = rng.sample(["id", "name", "count", "items", "meta", "flag", "when", "where"], rng.randint(1, 4))
        props = {n: _node(rng, depth - 1, defs) for n in names}
        required = [n for n in names if rng.random() < 0.7]
        out: Schema = {"type": "object", "properties": props, "required": required}
        if rng.random() < 0.5:
            out["additionalProperties"] = False
        return out
    if kind == "array":
        lo = rng.randint(0, 2)
        return {"type": "array", "items": _node(rng, depth - 1, defs), "minItems": lo,
                "maxItems": lo + rng.randint(0, 3)}
    if kind == "anyOf":
        return {"anyOf": [_node(rng, depth - 1, defs) for _ in range(rng.randint(2, 3))]}
    if kind == "ref":
        name = f"d{len(defs)}"
        defs[name] = {}  # the name is taken before nested definitions choose theirs
        defs[name] = _node(rng, depth - 1, defs)
        return {"$ref": f"#/$defs/{name}"}
    return _leaf(rng)


def generated(count: int, seed: int = 11) -> list[Schema]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        defs: dict[str, Schema] = {}
        root = _node(rng, rng.randint(1, 3), defs)
        if "$ref" in root or root.get("type") != "object":
            root = {"type": "object", "properties": {"value": root}, "required": ["value"]}
        if defs:
            root["$defs"] = defs
        out.append(root)
    return out


CORPUS: list[Schema] = HAND_WRITTEN + generated(130)
