"""Tool input schemas and arguments, and what the ``jsonschema`` package (the reference, not our
code) says of them: valid or not, and which fields an error may name.

The reference reads a schema as ``$schema`` says (2019-09 when it says nothing), with draft 7's
``dependencies`` still understood, as csi-web's tools do. Left out of the corpus, where the
reference is the one that is wrong: ``pattern`` with ``$`` before a trailing newline (Python's
``re`` matches there, ECMA-262 regular expressions do not) and ``multipleOf`` with a decimal
fraction (the reference divides floats: 0.3 is no multiple of 0.1 for it); tests check those
against ECMA semantics and decimal arithmetic directly.
"""

from __future__ import annotations

import re
from typing import Any

import jsonschema
from jsonschema import validators

Schema = dict[str, Any]

_Draft2019 = validators.extend(jsonschema.Draft201909Validator,
                               {"dependencies": jsonschema.Draft7Validator.VALIDATORS["dependencies"]})

CORPUS: dict[str, tuple[Schema, list[Any]]] = {
    "weather": ({"type": "object", "properties": {
        "city": {"type": "string", "minLength": 1}, "unit": {"enum": ["c", "f"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 7}}, "required": ["city"], "additionalProperties": False},
        [{"city": "Paris"}, {"city": ""}, {}, {"city": "P", "unit": "k"}, {"city": "P", "days": 0},
         {"city": "P", "days": 7.0}, {"city": "P", "days": True}, {"city": "P", "extra": 1}, {"city": 5},
         {"city": "P", "unit": "f", "days": 3}]),
    "arrays": ({"type": "object", "properties": {
        "items": {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3, "uniqueItems": True},
        "pair": {"type": "array", "items": [{"type": "string"}, {"type": "number"}], "additionalItems": False},
        "tags": {"type": "array", "contains": {"const": "x"}}}},
        [{"items": [1, 2]}, {"items": []}, {"items": [1, 2, 3, 4]}, {"items": [1, 1]}, {"items": [1, 1.0]},
         {"items": [1, "2"]}, {"items": [1, 2, {"a": 1}]}, {"pair": ["a", 1]}, {"pair": ["a", "b"]},
         {"pair": ["a", 1, 2]}, {"tags": ["y"]}, {"tags": ["y", "x"]}, {"items": [True, 1]}]),
    "nested": ({"type": "object", "properties": {
        "address": {"type": "object", "properties": {"zip": {"type": "string", "pattern": "^[0-9]{5}$"},
                                                     "street": {"type": "string"}}, "required": ["zip"]},
        "stops": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}},
                                             "required": ["name"]}}}},
        [{"address": {"zip": "12345"}}, {"address": {}}, {"address": {"zip": "1234"}}, {"address": {"zip": 12345}},
         {"stops": [{"name": "a"}, {"nam": "b"}]}, {"stops": [{"name": "a"}, {"name": 1}]},
         {"address": {"zip": "12345", "street": ["x"]}}]),
    "keys that look like paths": ({"type": "object", "properties": {
        "a.b": {"type": "object", "properties": {"c[0]": {"type": "integer"}}},
        "a": {"type": "object", "properties": {"b": {"type": "string"}}},
        "with space": {"type": "boolean"}, "2": {"type": "null"}, "": {"type": "integer"}}},
        [{"a.b": {"c[0]": "x"}}, {"a": {"b": 1}}, {"a.b": {"c[0]": 1}, "a": {"b": "s"}}, {"with space": 1},
         {"2": 0}, {"a.b": {"c[0]": 1}, "a": {"b": 2}}, {"": "x"}, {"": 3}]),
    "combinators": ({"type": "object", "properties": {
        "id": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        "one": {"oneOf": [{"type": "integer"}, {"minimum": 2}]},
        "no": {"not": {"type": "string"}}, "all": {"allOf": [{"minimum": 0}, {"maximum": 10}]}}},
        [{"id": "a"}, {"id": 1.5}, {"one": 1}, {"one": 3}, {"one": 2.5}, {"no": "s"}, {"no": 1}, {"all": 11},
         {"all": 5}, {"all": -1}]),
    "if then else": ({"type": "object", "properties": {"kind": {"enum": ["a", "b"]}},
                      "if": {"properties": {"kind": {"const": "a"}}}, "then": {"required": ["x"]},
                      "else": {"required": ["y"]}},
                     [{"kind": "a", "x": 1}, {"kind": "a"}, {"kind": "b", "y": 1}, {"kind": "b"}, {}]),
    "recursive refs": ({"type": "object", "properties": {"tree": {"$ref": "#/$defs/node"}}, "$defs": {"node": {
        "type": "object", "properties": {"value": {"type": "integer"},
                                         "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
        "required": ["value"]}}},
        [{"tree": {"value": 1, "children": [{"value": 2}, {"value": 3, "children": [{"value": "x"}]}]}},
         {"tree": {"value": 1, "children": [{}]}}, {"tree": {"value": 1}}, {"tree": []}]),
    "keywords beside a ref (2019-09)": ({"type": "object", "properties": {
        "name": {"$ref": "#/$defs/str", "maxLength": 3}}, "$defs": {"str": {"type": "string"}}},
        [{"name": "abc"}, {"name": "abcd"}, {"name": 1}]),
    "a ref at the root": ({"$ref": "#/$defs/args", "$defs": {"args": {
        "type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}},
        [{"q": "x"}, {}, {"q": 1}]),
    "object keywords": ({"type": "object", "patternProperties": {"^x_": {"type": "integer"}},
                         "additionalProperties": {"type": "string"}, "propertyNames": {"maxLength": 5},
                         "minProperties": 1, "maxProperties": 3,
                         "dependencies": {"a": ["b"], "c": {"required": ["d"]}}},
                        [{"x_1": 1}, {"x_1": "s"}, {"other": "s"}, {"other": 1}, {"toolongname": "s"}, {},
                         {"a": "1", "b": "2"}, {"a": "1"}, {"c": "1"}, {"c": "1", "d": "2"},
                         {"a": "1", "b": "2", "c": "3", "d": "4"}]),
    "closed with patterns": ({"type": "object", "properties": {"a": {}}, "patternProperties": {"^x": {}},
                              "additionalProperties": False},
                             [{"a": 1, "xy": 2}, {"a": 1, "b": 2}, {"zz": 1}]),
    "numbers": ({"type": "object", "properties": {
        "n": {"type": "number", "exclusiveMinimum": 0, "multipleOf": 0.5}, "i": {"type": "integer", "multipleOf": 3},
        "big": {"type": "integer", "maximum": 9007199254740991}}},
        [{"n": 0}, {"n": 1.5}, {"n": 1.2}, {"i": 9}, {"i": 10}, {"i": 9.0}, {"big": 9007199254740992},
         {"big": -(2**60)}, {"n": "1"}]),
    "text lengths count code points": ({"type": "object", "properties": {
        "s": {"type": "string", "minLength": 2, "maxLength": 3}, "p": {"type": "string", "pattern": "é+"}}},
        [{"s": "😀😀"}, {"s": "a"}, {"s": "abcd"}, {"s": "éé"}, {"p": "xéx"}, {"p": "e"}]),
    "draft 7 named": ({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {
        "name": {"$ref": "#/definitions/str", "maxLength": 3}}, "definitions": {"str": {"type": "string"}}},
        [{"name": "abcd"}, {"name": 1}]),
    "draft 4 named": ({"$schema": "http://json-schema.org/draft-04/schema#", "type": "object", "properties": {
        "x": {"type": "number", "maximum": 5, "exclusiveMaximum": True}}},
        [{"x": 5}, {"x": 4.9}, {"x": 6}]),
    "boolean schemas": ({"type": "object", "properties": {"never": False, "any": True}},
                        [{"never": 1}, {"any": [1]}, {}]),
    "annotations are not checked": ({"type": "object", "properties": {
        "when": {"type": "string", "format": "date"}, "blob": {"type": "string", "contentEncoding": "base64"},
        "mail": {"format": "email"}}},
        [{"when": "not a date"}, {"blob": "!!!"}, {"when": 3}, {"mail": "nobody"}]),
    "empty": ({}, [{}, {"anything": [1, {"x": None}]}]),
}


def reference(schema: Schema) -> Any:
    """The ``jsonschema`` validator of ``schema``."""
    cls = validators.validator_for(schema, default=_Draft2019)
    if cls is jsonschema.Draft201909Validator or cls is jsonschema.Draft202012Validator:
        cls = _Draft2019
    return cls(schema)


def _param(path: Any) -> str:
    return "arguments" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


def _places(value: Any, path: str) -> list[tuple[str, Any]]:
    """Every (path, value) inside ``value``, itself included."""
    out = [(path, value)]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _places(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _places(v, f"{path}[{i}]")
    return out


def reference_params(schema: Schema, arguments: Any) -> set[str]:
    """Every field one of the reference's errors is about: the value's path, or for a missing,
    unknown or dependent property, that property's."""
    out: set[str] = set()
    for e in reference(schema).iter_errors(arguments):
        base = _param(e.absolute_path)
        if e.validator == "required":
            out |= {f"{base}.{k}" for k in e.validator_value if k not in e.instance}
        elif e.validator == "additionalProperties" and e.validator_value is False:
            known, patterns = e.schema.get("properties", {}), e.schema.get("patternProperties", {})
            out |= {f"{base}.{k}" for k in e.instance if k not in known and not any(re.search(p, k) for p in patterns)}
        elif e.validator is None:  # a `false` schema: the reference leaves its path out; any place holding the value
            out |= {p for p, v in _places(arguments, "arguments") if v == e.instance and type(v) is type(e.instance)}
        elif e.validator == "dependencies":
            out |= {f"{base}.{k}" for key, needs in e.validator_value.items()
                    if key in e.instance and isinstance(needs, list) for k in needs if k not in e.instance}
        else:
            out.add(base)
    return out
