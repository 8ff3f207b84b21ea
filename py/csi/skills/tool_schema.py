"""A tool's ``input_schema``, compiled once with fastjsonschema, and its complaints about a call's
arguments turned into an ``InvalidInputError`` whose ``param`` names the field
(``arguments.city``, ``arguments.items[2]``).

JSON Schema 2019-09 unless ``$schema`` names draft 4, 6 or 7; ``format`` is an annotation (the
specification's default), not checked; ``default`` is never written into the arguments. Only
references inside the schema (``#...``) are followed: nothing is fetched.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from json import dumps, loads
from typing import Any

from ..errors import InvalidInputError

Validator = Callable[[Any], Any]

_INDEX = re.compile(r"\[(\d+)\]")


def _refuse_remote(uri: str) -> Any:
    raise InvalidInputError(f"`input_schema` refers to {uri[:200]!r}: only references inside the schema "
                            "(starting with '#') are followed", "input_schema")


_NO_FETCH = {scheme: _refuse_remote for scheme in ("http", "https", "ftp", "file", "data", "")}


def _remote_ref(schema: Any, path: str) -> str | None:
    """The field path of the first ``$ref`` that leaves the schema, if any."""
    stack = [(schema, path)]
    while stack:
        node, at = stack.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and not ref.startswith("#"):
                return f"{at}.$ref"
            stack.extend((v, f"{at}.{k}") for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((v, f"{at}[{i}]") for i, v in enumerate(node))
    return None


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
    remote = _remote_ref(copy, "input_schema")
    if remote is not None:
        raise InvalidInputError(f"`{remote}` leaves the schema: only references starting with '#' are followed",
                                remote)
    import fastjsonschema  # noqa: PLC0415 - shipped to the worker when tools are first used

    try:
        validator = fastjsonschema.compile(copy, handlers=_NO_FETCH, use_default=False, use_formats=False)
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
    message = str(exc.message)
    said = message[len(exc.name):] if exc.name and message.startswith(exc.name) else f": {message}"
    return InvalidInputError(f"`{path}`{said}", path)
