"""The `date`, `time` and `date-time` formats as compiled (``compilable_schema``), checked string by
string with PyPI xgrammar's matcher against ``jsonschema``'s format checker: everything the
grammar accepts is valid, and everything valid is accepted but for the two documented exclusions
(year 0000 and the leap second)."""

from __future__ import annotations

import itertools
import json

import jsonschema
import pytest
import xgrammar as xgr
from xgrammar.testing import _get_matcher_from_grammar

from csi.core.grammar import compilable_schema

YEARS = ["0000", "0001", "0004", "0100", "0400", "1900", "1996", "2000", "2023", "2024", "2100", "2400", "9999"]
DATES = [f"{y}-{m:02}-{d:02}" for y in YEARS for m in range(14) for d in range(33)]
TIMES = [f"{h:02}:{m:02}:{s:02}{frac}{off}"
         for h, m, s in itertools.product((0, 9, 19, 23, 24), (0, 59, 60), (0, 59, 60, 61))
         for frac in ("", ".5") for off in ("Z", "+00:00", "-14:44", "+23:59", "+24:00", "-05:60")]
DATE_TIMES = [f"{d}T{t}" for d in DATES[::7] for t in TIMES[::5]] + ["1922-12-14T00:60:01-14:44"]
CHECKER = jsonschema.Draft202012Validator.FORMAT_CHECKER


def accepted(fmt: str) -> object:
    schema = compilable_schema({"type": "string", "format": fmt})
    matcher = _get_matcher_from_grammar(xgr.Grammar.from_json_schema(json.dumps(schema)))

    def accepts(text: str) -> bool:
        matcher.reset()
        return bool(matcher.accept_string(json.dumps(text))) and matcher.is_terminated()
    return accepts


def excluded(text: str) -> bool:
    """Valid RFC 3339 the grammar leaves out on purpose: year 0000 and leap seconds."""
    return text.startswith("0000") or ":60" in text.split("T")[-1][:8]


@pytest.mark.parametrize(("fmt", "texts"), [("date", DATES), ("time", TIMES), ("date-time", DATE_TIMES)])
def test_the_grammar_accepts_exactly_the_valid_strings(fmt, texts):
    accepts = accepted(fmt)
    wrong = [t for t in texts if accepts(t) != (CHECKER.conforms(t, fmt) and not excluded(t))]
    assert wrong == []
    assert sum(map(accepts, texts)) > len(texts) // 10  # the candidates are not all invalid


def test_values_and_annotations_are_left_alone_and_nested_formats_rewritten():
    schema = {"type": "object",
              "properties": {"format": {"const": {"format": "date"}},
                             "when": {"anyOf": [{"type": "string", "format": "date-time"}]},
                             "tags": {"type": "array", "items": {"format": "time", "type": "string"}}},
              "$defs": {"d": {"type": "string", "format": "date", "description": "a date"}},
              "default": {"format": "date"}}
    out = compilable_schema(schema)
    assert out["properties"]["format"] == {"const": {"format": "date"}}
    assert out["default"] == {"format": "date"}
    assert "format" not in out["properties"]["when"]["anyOf"][0]
    assert out["properties"]["tags"]["items"]["pattern"].startswith("^")
    assert out["$defs"]["d"]["description"] == "a date" and "format" not in out["$defs"]["d"]
    assert schema["$defs"]["d"]["format"] == "date"  # the caller's schema is not changed
