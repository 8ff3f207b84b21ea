"""Metadata filters of the Pharia ``document-index`` interface (``pharia:skill@0.3.0``).

Filters arrive as JSON values (snake_case; a WIT case without payload is a string, a case with payload a
one-key object). ``parse_filters`` validates them once and compiles them into closures; ``CompiledFilter.matches``
then evaluates a document's metadata (any JSON value or ``None``) cheaply.

Semantics where the interface is silent:

* ``filters`` is AND-combined; ``None`` or ``[]`` matches everything. ``with_all: []`` and ``without: []`` match
  everything, ``with_one_of: []`` matches nothing.
* A field resolves to zero or more values: ``a.b`` walks objects, ``a[2]`` takes element 2 (0-based) of an array,
  ``a[]`` every element. Arrays are never unwrapped implicitly (``tags`` is the array, ``tags[]`` its elements).
  A condition matches if any resolved value matches; a missing path matches no condition (so ``without`` a
  condition on a missing field is true).
* Field names: dot-separated segments of ASCII letters, digits, ``-`` and ``_``, each optionally followed by
  ``[]`` or ``[index]`` suffixes (``a[][0]`` for nested arrays); at most 1000 characters in total.
* Numeric conditions compare only with numeric metadata (int or float, never bool). Condition values must be
  finite numbers.
* Date-time conditions compare instants (offsets respected, nanosecond precision) with metadata strings that are
  RFC 3339 date-times (``T``, ``t`` or a space between date and time; ``Z``/``z`` or ``+hh:mm``/``-hh:mm`` offset
  required; leap second ``:60`` is not supported). Other metadata values do not match.
* ``equal_to`` takes a string, an integer (signed 64-bit) or a boolean, or the WIT form ``{"string_type": ...}``,
  ``{"integer_type": ...}``, ``{"boolean_type": ...}``. Types must agree: ``true`` never equals ``1``, and
  integers match integers only (``3`` does not match ``3.0``). Strings compare exactly.
* ``is_null`` (or ``{"is_null": true}``) matches a value that is JSON null; a missing field does not match.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable
from datetime import date
from functools import lru_cache
from typing import Any

from ..errors import InvalidInputError

__all__ = ["MAX_FIELD_LENGTH", "CompiledFilter", "parse_filters"]

MAX_FIELD_LENGTH = 1000

Predicate = Callable[[Any], bool]

_MISSING = object()
_SEGMENT = re.compile(r"([A-Za-z0-9_-]+)((?:\[[0-9]*\])*)", re.ASCII)
_BRACKET = re.compile(r"\[([0-9]*)\]", re.ASCII)
_RFC3339 = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt ]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]+))?"
    r"(?:[Zz]|([+-])([0-9]{2}):([0-9]{2}))",
    re.ASCII,
)
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1

_NUMERIC_OPS = {
    "greater_than": operator.gt,
    "greater_than_or_equal_to": operator.ge,
    "less_than": operator.lt,
    "less_than_or_equal_to": operator.le,
}
_DATE_OPS = {"after": operator.gt, "at_or_after": operator.ge, "before": operator.lt, "at_or_before": operator.le}
_EQUAL_TYPES = {"string_type": str, "integer_type": int, "boolean_type": bool}
_SEARCH_KINDS = ("without", "with_one_of", "with_all")


class CompiledFilter:
    """A validated list of search filters, AND-combined, ready to evaluate against document metadata."""

    __slots__ = ("_predicates",)

    def __init__(self, predicates: list[Predicate]) -> None:
        self._predicates = tuple(predicates)

    def matches(self, metadata: Any) -> bool:
        """Whether ``metadata`` (any JSON value or ``None``) satisfies every search filter."""
        for predicate in self._predicates:
            if not predicate(metadata):
                return False
        return True


def parse_filters(filters: Any) -> CompiledFilter:
    """Validate ``filters`` (a list of search filters, or ``None`` for none) and compile it.

    Raises ``InvalidInputError`` whose ``param`` names the offending part, e.g. ``filters[0].with_all[1].field``.
    """
    param = "filters"
    if filters is None:
        return CompiledFilter([])
    if not isinstance(filters, list):
        raise InvalidInputError(f"`{param}` must be a list of search filters", param)
    return CompiledFilter([_search_filter(item, f"{param}[{i}]") for i, item in enumerate(filters)])


# --- date-times -------------------------------------------------------------------------------------------------


@lru_cache(maxsize=1 << 16)
def _instant(text: str) -> int | None:
    """Nanoseconds since the Unix epoch of an RFC 3339 date-time, or ``None`` if ``text`` is not one."""
    m = _RFC3339.fullmatch(text)
    if m is None:
        return None
    year, month, day, hour, minute, second, frac, sign, off_h, off_m = m.groups()
    if int(hour) > 23 or int(minute) > 59 or int(second) > 59:
        return None
    try:
        days = date(int(year), int(month), int(day)).toordinal() - _EPOCH_ORDINAL
    except ValueError:
        return None
    seconds = days * 86400 + int(hour) * 3600 + int(minute) * 60 + int(second)
    if sign is not None:
        if int(off_h) > 23 or int(off_m) > 59:
            return None
        offset = int(off_h) * 3600 + int(off_m) * 60
        seconds -= offset if sign == "+" else -offset
    nanos = int(frac[:9].ljust(9, "0")) if frac else 0
    return seconds * 1_000_000_000 + nanos


# --- fields -----------------------------------------------------------------------------------------------------


def _field_steps(field: Any, param: str) -> list[tuple[str, Any]]:
    """Parse a field name into steps ``("keys", (k, ...))``, ``("index", i)`` and ``("all", None)``."""
    if not isinstance(field, str):
        raise InvalidInputError(f"`{param}` must be a string", param)
    shown = field if len(field) <= 80 else field[:80] + "..."
    if len(field) > MAX_FIELD_LENGTH:
        raise InvalidInputError(
            f"`{param}`: field name `{shown}` is longer than {MAX_FIELD_LENGTH} characters", param)
    steps: list[tuple[str, Any]] = []
    for segment in field.split("."):
        m = _SEGMENT.fullmatch(segment)
        if m is None:
            raise InvalidInputError(
                f"`{param}`: invalid field name `{shown}`: use dot-separated segments of alphanumeric characters, "
                "dashes and underscores, each optionally followed by `[]` or `[index]`", param)
        if steps and steps[-1][0] == "keys":
            steps[-1] = ("keys", steps[-1][1] + (m.group(1),))
        else:
            steps.append(("keys", (m.group(1),)))
        for index in _BRACKET.findall(m.group(2)):
            steps.append(("all", None) if index == "" else ("index", int(index)))
    return steps


def _wrap(step: tuple[str, Any], inner: Predicate) -> Predicate:
    kind, arg = step
    if kind == "keys" and len(arg) == 1:
        key = arg[0]

        def one_key(value: Any) -> bool:
            if isinstance(value, dict):
                found = value.get(key, _MISSING)
                return found is not _MISSING and inner(found)
            return False

        return one_key
    if kind == "keys":
        keys = arg

        def keys_path(value: Any) -> bool:
            for key in keys:
                if not isinstance(value, dict):
                    return False
                value = value.get(key, _MISSING)
            return value is not _MISSING and inner(value)

        return keys_path
    if kind == "index":
        index = arg

        def element(value: Any) -> bool:
            return isinstance(value, list) and index < len(value) and inner(value[index])

        return element

    def any_element(value: Any) -> bool:
        if isinstance(value, list):
            for item in value:
                if inner(item):
                    return True
        return False

    return any_element


# --- conditions -------------------------------------------------------------------------------------------------


def _numeric(op: Callable[[Any, Any], bool], bound: int | float) -> Predicate:
    def check(value: Any) -> bool:
        return isinstance(value, (int, float)) and value.__class__ is not bool and op(value, bound)

    return check


def _dated(op: Callable[[Any, Any], bool], bound: int) -> Predicate:
    def check(value: Any) -> bool:
        if isinstance(value, str):
            instant = _instant(value)
            return instant is not None and op(instant, bound)
        return False

    return check


def _equal(expected: str | int | bool) -> Predicate:
    if isinstance(expected, bool):
        return lambda value: value is expected
    if isinstance(expected, int):
        return lambda value: isinstance(value, int) and value.__class__ is not bool and value == expected
    return lambda value: isinstance(value, str) and value == expected


def _is_null(value: Any) -> bool:
    return value is None


def _equal_value(raw: Any, param: str) -> str | int | bool:
    if isinstance(raw, dict):
        if len(raw) != 1 or next(iter(raw)) not in _EQUAL_TYPES:
            raise InvalidInputError(
                f"`{param}` must be a string, an integer, a boolean or one of "
                "`{\"string_type\": ...}`, `{\"integer_type\": ...}`, `{\"boolean_type\": ...}`", param)
        ((kind, raw),) = raw.items()
        want = _EQUAL_TYPES[kind]
        inner = f"{param}.{kind}"
        if not isinstance(raw, want) or (want is int and isinstance(raw, bool)):
            noun = {str: "a string", int: "an integer", bool: "a boolean"}[want]
            raise InvalidInputError(f"`{inner}` must be {noun}", inner)
        param = inner
    if isinstance(raw, bool | str):
        return raw
    if isinstance(raw, int):
        if not _I64_MIN <= raw <= _I64_MAX:
            raise InvalidInputError(f"`{param}` is out of the signed 64-bit integer range", param)
        return raw
    raise InvalidInputError(f"`{param}` must be a string, an integer or a boolean", param)


def _condition(raw: Any, param: str) -> Predicate:
    if raw == "is_null":
        return _is_null
    if not isinstance(raw, dict) or len(raw) != 1:
        raise InvalidInputError(
            f"`{param}` must be `\"is_null\"` or an object with exactly one condition", param)
    ((kind, arg),) = raw.items()
    inner = f"{param}.{kind}"
    if kind in _NUMERIC_OPS:
        if not isinstance(arg, (int, float)) or isinstance(arg, bool) or (isinstance(arg, float)
                                                                           and not math.isfinite(arg)):
            raise InvalidInputError(f"`{inner}` must be a finite number", inner)
        return _numeric(_NUMERIC_OPS[kind], arg)
    if kind in _DATE_OPS:
        instant = _instant(arg) if isinstance(arg, str) else None
        if instant is None:
            raise InvalidInputError(f"`{inner}` must be an RFC 3339 date-time with offset, got {arg!r}", inner)
        return _dated(_DATE_OPS[kind], instant)
    if kind == "equal_to":
        return _equal(_equal_value(arg, inner))
    if kind == "is_null":
        if arg is not True:
            raise InvalidInputError(f"`{inner}` must be true", inner)
        return _is_null
    raise InvalidInputError(f"`{param}`: unknown condition `{kind}`", param)


# --- filters ----------------------------------------------------------------------------------------------------


def _metadata_filter(raw: Any, param: str) -> Predicate:
    if not isinstance(raw, dict):
        raise InvalidInputError(f"`{param}` must be an object with `field` and `condition`", param)
    for key in raw:
        if key not in ("field", "condition"):
            raise InvalidInputError(f"unknown field `{param}.{key}`", f"{param}.{key}")
    for key in ("field", "condition"):
        if key not in raw:
            raise InvalidInputError(f"`{param}.{key}` is required", f"{param}.{key}")
    steps = _field_steps(raw["field"], f"{param}.field")
    predicate = _condition(raw["condition"], f"{param}.condition")
    for step in reversed(steps):
        predicate = _wrap(step, predicate)
    return predicate


def _search_filter(raw: Any, param: str) -> Predicate:
    if not isinstance(raw, dict) or len(raw) != 1 or next(iter(raw)) not in _SEARCH_KINDS:
        raise InvalidInputError(
            f"`{param}` must be an object with exactly one of `without`, `with_one_of`, `with_all`", param)
    ((kind, items),) = raw.items()
    inner = f"{param}.{kind}"
    if not isinstance(items, list):
        raise InvalidInputError(f"`{inner}` must be a list of metadata filters", inner)
    parts = tuple(_metadata_filter(item, f"{inner}[{i}]") for i, item in enumerate(items))
    if kind == "with_all" and len(parts) == 1:
        return parts[0]
    if kind == "with_one_of" and len(parts) == 1:
        return parts[0]

    if kind == "with_all":
        def all_of(metadata: Any) -> bool:
            for part in parts:
                if not part(metadata):
                    return False
            return True

        return all_of

    def any_of(metadata: Any) -> bool:
        for part in parts:
            if part(metadata):
                return True
        return False

    if kind == "with_one_of":
        return any_of
    return lambda metadata: not any_of(metadata)
