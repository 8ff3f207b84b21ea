"""What constrains a generation: a grammar the backend compiles (xgrammar on both backends) and
applies to every token's logits. Pure data and checks; no compiler here."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from json import dumps
from typing import Any, Literal

from .json_numbers import MARKER_PREFIX, NumberRange, bounded_numbers, decimal_of, range_rules

GrammarKind = Literal["json_schema", "ebnf", "structural_tag"]


class GrammarError(Exception):
    """The backend's grammar compiler refused a grammar; the message is the compiler's."""


@dataclass(frozen=True)
class Grammar:
    """A grammar for the backend to compile: a JSON Schema (compiled compact: ``", "`` and ``": "``
    separators and no other whitespace, so JSON can never spin on whitespace), an EBNF in
    xgrammar's dialect (root rule ``root``), or an xgrammar structural tag as JSON.

    ``param`` is the request field an error about it names.
    """

    kind: GrammarKind
    source: str
    param: str = "response_format"

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "source": self.source}


def regex_grammar(pattern: str, param: str) -> Grammar:
    """A grammar for a regular expression (xgrammar's regex dialect), through a structural tag."""
    return structural_tag_grammar({"type": "regex", "pattern": pattern}, param)


def structural_tag_grammar(format_: dict[str, Any], param: str) -> Grammar:
    return Grammar("structural_tag", dumps({"type": "structural_tag", "format": format_}), param)


def json_formats(tag: Any) -> list[Any]:
    """The JSON Schemas of every ``json_schema`` format in a structural tag, in order, compilable."""
    found: list[Any] = []

    def record(schema: Any) -> str:
        found.append(schema)
        return ""

    compact_json_formats(tag, record)
    return found


def compact_json_formats(tag: Any, to_ebnf: Callable[[Any], str]) -> Any:
    """``tag`` with every ``json_schema`` format replaced by its compact EBNF (``json_schema_ebnf``).
    xgrammar compiles a structural tag's JSON with any whitespace, without limit; a small model then
    spins on newlines. Compact JSON cannot."""
    if isinstance(tag, list):
        return [compact_json_formats(item, to_ebnf) for item in tag]
    if not isinstance(tag, dict):
        return tag
    if tag.get("type") == "json_schema" and "json_schema" in tag:
        return {"type": "grammar", "grammar": json_schema_ebnf(tag["json_schema"], to_ebnf)}
    return {k: compact_json_formats(v, to_ebnf) for k, v in tag.items()}


def json_schema_ebnf(schema: Any, to_ebnf: Callable[[Any], str]) -> str:
    """A JSON Schema as the EBNF a backend compiles: ``to_ebnf`` (the backend's xgrammar converter,
    compact) given the ``compilable_schema``, its numbers then bounded (``bounded_numbers``)."""
    return bounded_numbers(to_ebnf(compilable_schema(schema)))


_COMPILER_NOISE = re.compile(r"^(\[[\d:]+\] )?\S+\.cc:\d+: (Check failed: \(.*?\) is false: )?")


def compiler_message(raw: str) -> str:
    """The compiler's message without its source location and assertion text."""
    lines = [line for line in raw.strip().splitlines() if line.strip()]
    first = lines[0] if lines else raw
    return _COMPILER_NOISE.sub("", first.replace("[FATAL] ", "")).strip() or "the grammar does not compile"


def vocab_type(decoder: dict[str, Any] | None) -> tuple[str, bool]:
    """xgrammar's vocabulary type for a tokenizer.json decoder, and whether the tokenizer prepends a
    space: byte-level BPE, SentencePiece with byte fallback, or raw strings."""
    parts = [decoder] if decoder and decoder.get("type") != "Sequence" else list((decoder or {}).get("decoders", []))
    kinds = {p.get("type") for p in parts}
    if "ByteLevel" in kinds:
        return "byte_level", False
    if "ByteFallback" in kinds:
        prepend = any(p.get("type") == "Strip" and p.get("start", 0) > 0 for p in parts)
        return "byte_fallback", prepend
    return "raw", False


# ---- JSON Schema support --------------------------------------------------------------------

# Keywords xgrammar's JSON Schema converter (0.1.27) enforces. Anything else that would constrain
# the value is refused rather than silently dropped; annotations are accepted.
_ENFORCED = {
    "type", "properties", "required", "additionalProperties", "items", "prefixItems", "enum", "const",
    "anyOf", "oneOf", "allOf", "$ref", "$defs", "definitions", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "minLength", "maxLength", "pattern", "format", "minItems", "maxItems",
    "minProperties", "maxProperties", "patternProperties", "propertyNames", "unevaluatedProperties",
    "unevaluatedItems",
}
# xgrammar 0.1.27 lets IPv4 octets have leading zeros (measured against ``jsonschema``): refused.
# It writes numbers outside (or malformed within) bounds, so bounds are compiled here instead
# (``json_numbers``), on nodes whose type says number or integer and that list no values.
_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
_BESIDE_BOUNDS = ("enum", "const", "anyOf", "oneOf", "allOf", "$ref")
_NUMERIC = {"number", "integer"}
_ANNOTATIONS = {
    "title", "description", "default", "examples", "$schema", "$id", "$comment", "deprecated",
    "readOnly", "writeOnly", "strict", "name", "contentMediaType", "contentEncoding",
}
_FORMATS = {
    "email", "date", "time", "date-time", "duration", "ipv6", "hostname", "uuid", "uri",
    "uri-reference", "uri-template", "json-pointer", "relative-json-pointer",
}
_TYPES = {"object", "array", "string", "number", "integer", "boolean", "null"}

# xgrammar 0.1.27's `date-time` lets the minute be 60 and its `date`s let every month have 31 days,
# so these three formats are compiled from exact patterns instead: the proleptic Gregorian
# calendar (leap years included), no year 0000, no leap second; any offset within ±23:59.
_YEAR = "([0-9]{3}[1-9]|[0-9]{2}[1-9]0|[0-9][1-9]00|[1-9]000)"
_LEAP_YEAR = "([0-9]{2}(0[48]|[2468][048]|[13579][26])|(0[48]|[2468][048]|[13579][26])00)"
_DATE = (f"({_YEAR}-((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)"
         f"|02-(0[1-9]|1[0-9]|2[0-8]))|{_LEAP_YEAR}-02-29)")
_TIME = r"([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]+)?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])"
FORMAT_PATTERNS = {"date": f"^{_DATE}$", "time": f"^{_TIME}$", "date-time": f"^{_DATE}T{_TIME}$"}
# keywords whose values are subschemas: one, a list of them, or a name -> subschema map
_ONE_SCHEMA = ("items", "additionalProperties", "propertyNames", "unevaluatedProperties", "unevaluatedItems")
_SCHEMA_LISTS = ("prefixItems", "anyOf", "oneOf", "allOf")
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions")


class SchemaError(ValueError):
    """A schema the grammar compiler cannot enforce; ``path`` is where (dotted, relative)."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.path = path


def check_schema(schema: Any) -> None:
    """Refuse what xgrammar would not enforce: unknown keywords, ``not``, conditionals, unknown
    formats, unresolvable ``$ref``s, bounds no number satisfies. Raise ``SchemaError`` naming the
    keyword's path."""
    if not isinstance(schema, dict | bool):
        raise SchemaError("a JSON Schema is an object (or a boolean)", "")
    if MARKER_PREFIX in dumps(schema):
        raise SchemaError(f"the text {MARKER_PREFIX!r} is reserved for the grammar's numbers", "")
    _check_node(schema, "", schema)


def compilable_schema(schema: Any) -> Any:
    """``schema`` (already checked) as handed to the compiler: the formats in ``FORMAT_PATTERNS``
    replaced by their patterns, bounded numbers by range markers (``json_numbers``). Values
    (``const``, ``enum``, annotations) are left as they are."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "format" and value in FORMAT_PATTERNS:
            out["pattern"] = FORMAT_PATTERNS[value]
        elif key in _ONE_SCHEMA:
            out[key] = compilable_schema(value)
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [compilable_schema(v) for v in value]
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: compilable_schema(v) for name, v in value.items()}
        else:
            out[key] = value
    return _numbers_placed(out)


def number_range(node: dict[str, Any]) -> NumberRange | None:
    """The numbers a node's bounds allow; ``None`` without bounds or a numeric ``type``. Raises
    ``TypeError``/``ValueError`` for a bound that is not a finite number."""
    kinds = _types(node)
    if not any(key in node for key in _BOUNDS) or not kinds & _NUMERIC:
        return None
    low: tuple[Any, bool] | None = None
    high: tuple[Any, bool] | None = None
    for key in _BOUNDS:
        if key not in node:
            continue
        value, is_open = _bound(node[key]), key.startswith("exclusive")
        if key.endswith("inimum") and (low is None or value > low[0] or (value == low[0] and is_open)):
            low = (value, is_open)
        if key.endswith("aximum") and (high is None or value < high[0] or (value == high[0] and is_open)):
            high = (value, is_open)
    return NumberRange("number" not in kinds, *(low or (None, False)), *(high or (None, False)))


def _bound(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError("a bound must be a number")
    return decimal_of(value)


def _types(node: dict[str, Any]) -> set[str]:
    kinds = node.get("type", [])
    kinds = kinds if isinstance(kinds, list) else [kinds]
    return {k for k in kinds if isinstance(k, str)}


def _numbers_placed(node: dict[str, Any]) -> dict[str, Any]:
    """``node`` with its bounded number replaced by a range marker (beside the node's other types
    in an ``anyOf``), or without bounds that cannot apply (no numeric type). A node the check
    would refuse (a raw structural tag's) is left to the compiler."""
    if not any(key in node for key in _BOUNDS) or "type" not in node or any(k in node for k in _BESIDE_BOUNDS):
        return node
    try:
        numbers = number_range(node)
    except (TypeError, ValueError):
        return node
    rest = {k: v for k, v in node.items() if k not in _BOUNDS}
    if numbers is None:
        return rest
    marker = {"const": numbers.marker()}
    others = [k for k in (node["type"] if isinstance(node["type"], list) else [node["type"]]) if k not in _NUMERIC]
    return {"anyOf": [marker, {**rest, "type": others if len(others) > 1 else others[0]}]} if others else marker


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _check_node(node: Any, path: str, root: Any) -> None:
    if isinstance(node, bool):
        return
    if not isinstance(node, dict):
        raise SchemaError("a subschema must be an object or a boolean", path)
    _check_bounds(node, path)
    shaped = [key for key in ("pattern", "format") if key in node]
    for key in ("format", "minLength", "maxLength"):
        if key in node and shaped and shaped[0] != key:
            # xgrammar keeps the pattern (or the format) and silently drops the other
            raise SchemaError(f"`{key}` together with `{shaped[0]}` cannot be enforced by the grammar",
                              _join(path, key))
    for key, value in node.items():
        here = _join(path, key)
        if key in _ANNOTATIONS:
            continue
        if key not in _ENFORCED:
            raise SchemaError(f"the JSON Schema keyword `{key}` cannot be enforced by the grammar", here)
        if key == "type":
            kinds = value if isinstance(value, list) else [value]
            if not kinds or not all(isinstance(k, str) and k in _TYPES for k in kinds):
                raise SchemaError(f"unknown type {value!r}", here)
        elif key == "format":
            if value not in _FORMATS:
                raise SchemaError(f"the format {value!r} cannot be enforced by the grammar", here)
        elif key in _SCHEMA_MAPS:
            if not isinstance(value, dict):
                raise SchemaError(f"`{key}` must be an object", here)
            for name, sub in value.items():
                _check_node(sub, _join(here, name), root)
        elif key in _ONE_SCHEMA:
            _check_node(value, here, root)
        elif key in _SCHEMA_LISTS:
            if not isinstance(value, list) or not value:
                raise SchemaError(f"`{key}` must be a non-empty array", here)
            if key == "allOf" and len(value) > 1:
                raise SchemaError("`allOf` with more than one subschema cannot be enforced by the grammar", here)
            for i, sub in enumerate(value):
                _check_node(sub, _join(here, i), root)
        elif key == "$ref":
            _resolve(value, root, here)
        elif key == "required":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise SchemaError("`required` must be an array of strings", here)
            listed = node.get("properties", {})
            missing = [v for v in value if not isinstance(listed, dict) or v not in listed]
            if missing:
                # the grammar generates only listed properties: it would leave these out
                raise SchemaError(f"`required` names {missing[0]!r}, which `properties` does not define", here)
        elif key == "pattern" and not isinstance(value, str):
            raise SchemaError("`pattern` must be a string", here)
        elif key == "enum" and (not isinstance(value, list) or not value):
            raise SchemaError("`enum` must be a non-empty array", here)


def _check_bounds(node: dict[str, Any], path: str) -> None:
    """Bounds are finite numbers, on a node whose type is given and that lists no values, and
    some number the grammar can write satisfies them."""
    present = [key for key in _BOUNDS if key in node]
    if not present:
        return
    for key in present:
        value = node[key]
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            draft4 = " (the boolean form of JSON Schema draft 4 is not supported)" if isinstance(value, bool) else ""
            raise SchemaError(f"`{key}` must be a finite number{draft4}", _join(path, key))
    here = _join(path, present[0])
    if "type" not in node:
        raise SchemaError(f"`{present[0]}` needs a `type`: the grammar bounds numbers of type \"number\" or "
                          "\"integer\"", here)
    if not _types(node) & _NUMERIC:
        return  # bounds on no number constrain nothing
    beside = next((key for key in _BESIDE_BOUNDS if key in node), None)
    if beside is not None:
        raise SchemaError(f"`{present[0]}` beside `{beside}` cannot be enforced by the grammar", here)
    numbers = number_range(node)
    if numbers is not None and range_rules(numbers, "check") is None:
        kind = "integer" if numbers.integer else "number"
        raise SchemaError(f"no {kind} the grammar can write satisfies these bounds (numbers have at most 15 digits, "
                          "integers lie within ±(2^53 − 1))", here)


def _resolve(ref: Any, root: Any, path: str) -> None:
    if not isinstance(ref, str) or not ref.startswith("#"):
        raise SchemaError(f"only local `$ref`s (\"#/...\") can be enforced; got {ref!r}", path)
    node = root
    for part in [p for p in ref[1:].split("/") if p]:
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            raise SchemaError(f"`$ref` {ref!r} does not resolve", path)
        node = node[part]
