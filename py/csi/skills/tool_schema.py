"""A tool's ``input_schema``, compiled once with fastjsonschema, and its complaints about a call's
arguments turned into an ``InvalidInputError`` whose ``param`` names the field
(``arguments.city``, ``arguments.items[2]``).

The dialect is JSON Schema 2019-09 (draft 4, 6 or 7 when ``$schema`` names one). fastjsonschema
implements the draft 7 keywords; a 2019-09/2020-12 keyword it would silently skip is refused
(naming it) rather than left unchecked, and keywords beside a ``$ref`` apply, as 2019-09 says.
``format``, ``contentEncoding`` and ``contentMediaType`` are annotations, not checked; ``default``
is never written into the arguments. Only references inside the schema (``#...``) are followed:
nothing is fetched.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from json import dumps, loads
from typing import Any

from ..errors import InvalidInputError

Validator = Callable[[Any], Any]

_INDEX = re.compile(r"\[(\d+)\]")
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies")
_SCHEMA_ITEMS = ("additionalProperties", "additionalItems", "items", "contains", "propertyNames", "if", "then",
                 "else", "not", "unevaluatedProperties", "unevaluatedItems")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "items", "prefixItems")
UNSUPPORTED = ("dependentRequired", "dependentSchemas", "unevaluatedProperties", "unevaluatedItems", "minContains",
               "maxContains", "prefixItems", "$recursiveRef", "$dynamicRef")
"""2019-09 and 2020-12 keywords fastjsonschema does not implement (it would skip them)."""
_NOT_CHECKED = ("format", "contentEncoding", "contentMediaType")
_BESIDE_REF = {"$ref", "$id", "$schema", "$defs", "definitions", "$anchor", "$comment", "title", "description",
               "default", "examples", "deprecated", "readOnly", "writeOnly"}
"""What stays beside a ``$ref`` when the other keywords move into an ``allOf`` with it."""


def _refuse_remote(uri: str) -> Any:
    raise InvalidInputError(f"`input_schema` refers to {uri[:200]!r}: only references inside the schema "
                            "(starting with '#') are followed", "input_schema")


_NO_FETCH = {scheme: _refuse_remote for scheme in ("http", "https", "ftp", "file", "data", "")}


def _subschemas(schema: Any, path: str) -> Iterator[tuple[dict[str, Any], str]]:
    """Every (sub)schema object of ``schema`` with its field path, found through the keywords
    that hold schemas (never inside ``const``, ``enum``, ``default`` or ``examples``, which hold data)."""
    stack: list[tuple[Any, str]] = [(schema, path)]
    while stack:
        node, at = stack.pop()
        if not isinstance(node, dict):
            continue  # true/false, or not a schema at all (the compiler says so)
        yield node, at
        for key, value in node.items():
            if key in _SCHEMA_MAPS and isinstance(value, dict):
                stack.extend((v, f"{at}.{key}.{k}") for k, v in value.items())
            if key in _SCHEMA_ITEMS:
                stack.append((value, f"{at}.{key}"))
            if key in _SCHEMA_LISTS and isinstance(value, list):
                stack.extend((v, f"{at}.{key}[{i}]") for i, v in enumerate(value))


def _dialect_2019(schema: dict[str, Any]) -> bool:
    """Whether ``schema`` is read as 2019-09 (and not as the draft 4, 6 or 7 its ``$schema`` names)."""
    named = schema.get("$schema", "")
    return not (isinstance(named, str) and any(d in named for d in ("draft-04", "draft-06", "draft-07")))


def _checked(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` as fastjsonschema is given it: annotations it would check left out, and in
    2019-09 the keywords beside a ``$ref`` moved into an ``allOf`` with it (draft 7 skips them)."""
    copy = loads(dumps(schema))
    modern = _dialect_2019(copy)
    for node, _ in list(_subschemas(copy, "")):
        for key in _NOT_CHECKED:
            if isinstance(node.get(key), str):
                del node[key]
        if modern and isinstance(node.get("$ref"), str):
            moved = {k: node.pop(k) for k in list(node) if k not in _BESIDE_REF}
            if moved:
                node["allOf"] = [{"$ref": node.pop("$ref")}, moved]
    return copy


def compile_input_schema(schema: Any) -> tuple[dict[str, Any], Validator]:
    """A copy of ``schema`` (JSON, an object describing an object) and its compiled validator;
    ``InvalidInputError`` naming ``input_schema`` (or the field inside it) otherwise."""
    if not isinstance(schema, dict):
        raise InvalidInputError("`input_schema` must be a JSON Schema object", "input_schema")
    try:
        copy = loads(dumps(schema, allow_nan=False))
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidInputError(f"`input_schema` is not JSON: {exc}", "input_schema") from None
    kind = copy.get("type", "object")
    if kind != "object" and not (isinstance(kind, list) and "object" in kind):
        raise InvalidInputError("`input_schema.type` must be \"object\": a tool's arguments are an object",
                                "input_schema.type")
    modern = _dialect_2019(copy)
    for node, at in _subschemas(copy, "input_schema"):
        ref = node.get("$ref")
        if isinstance(ref, str) and not ref.startswith("#"):
            raise InvalidInputError(f"`{at}.$ref` leaves the schema: only references starting with '#' are "
                                    "followed", f"{at}.$ref")
        skipped = [k for k in UNSUPPORTED if k in node] if modern else []
        if skipped:
            raise InvalidInputError(f"`{at}.{skipped[0]}` is not supported: tool schemas are checked with the "
                                    "JSON Schema draft 7 keywords", f"{at}.{skipped[0]}")
    import fastjsonschema  # noqa: PLC0415 - shipped to the worker when tools are first used

    try:
        validator = fastjsonschema.compile(_checked(copy), handlers=_NO_FETCH, use_default=False, use_formats=False)
    except InvalidInputError:
        raise
    except Exception as exc:  # noqa: BLE001 - the compiler fails in many ways on a bad schema
        detail = str(exc) if isinstance(exc, fastjsonschema.JsonSchemaDefinitionException) else (
            f"{type(exc).__name__}: {exc}")
        raise InvalidInputError(f"`input_schema` is not a valid JSON Schema: {detail}", "input_schema") from None
    return copy, validator


def check_arguments(validator: Validator, arguments: Any) -> None:
    """Raise ``InvalidInputError`` naming the first field of ``arguments`` the schema refuses."""
    if not isinstance(arguments, dict):
        raise InvalidInputError("`arguments` must be a JSON object", "arguments")
    try:
        dumps(arguments, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidInputError(f"`arguments` must hold JSON values only: {exc}", "arguments") from None
    import fastjsonschema  # noqa: PLC0415

    try:
        validator(arguments)
    except fastjsonschema.JsonSchemaValueException as exc:
        raise _field_error(exc, arguments) from None
    except Exception as exc:  # noqa: BLE001 - e.g. a pattern Python's re cannot run, or nesting too deep
        raise InvalidInputError(f"`arguments` could not be checked against the tool's input_schema: "
                                f"{type(exc).__name__}: {exc}", "arguments") from None


def _locate(arguments: Any, name: str) -> tuple[str, Any]:
    """fastjsonschema's name of a value (``data.items[2]``) as our field path, and the value.
    Its names join keys with dots, so the keys are found by walking the arguments themselves."""
    rest, node, path = name[len("data"):], arguments, "arguments"
    while rest:
        m = _INDEX.match(rest)
        if m and isinstance(node, list) and int(m.group(1)) < len(node):
            node, path, rest = node[int(m.group(1))], f"{path}[{m.group(1)}]", rest[m.end():]
            continue
        keys = [k for k in node if rest[1:].startswith(k) and rest[1 + len(k):][:1] in ("", ".", "[")] if (
            isinstance(node, dict) and rest.startswith(".")) else []
        if not keys:
            return path + rest, None  # not found in the data (should not happen): fastjsonschema's name
        key = max(keys, key=len)
        node, path, rest = node[key], f"{path}.{key}", rest[1 + len(key):]
    return path, node


def _field_error(exc: Any, arguments: Any) -> InvalidInputError:
    path, node = _locate(arguments, exc.name or "data")
    definition = exc.definition if isinstance(exc.definition, dict) else {}
    if exc.rule == "required" and isinstance(node, dict):
        missing = [k for k in definition.get("required", []) if k not in node]
        if missing:
            return InvalidInputError(f"`{path}.{missing[0]}` is required", f"{path}.{missing[0]}")
    if exc.rule == "additionalProperties" and isinstance(node, dict):
        known = definition.get("properties", {})
        patterns = list(definition.get("patternProperties", {}))
        extra = [k for k in node if k not in known and not any(re.search(p, k) for p in patterns)]
        if extra:
            return InvalidInputError(f"`{path}.{extra[0]}` is not a field the tool takes", f"{path}.{extra[0]}")
    if exc.rule == "dependencies" and isinstance(node, dict):
        for key, needs in definition.get("dependencies", {}).items():
            missing = [k for k in needs if k not in node] if key in node and isinstance(needs, list) else []
            if missing:
                return InvalidInputError(f"`{path}.{missing[0]}` is required when `{path}.{key}` is given",
                                         f"{path}.{missing[0]}")
    message = str(exc.message)
    said = message[len(exc.name):] if exc.name and message.startswith(exc.name) else f": {message}"
    return InvalidInputError(f"`{path}`{said}", path)
