"""Metadata filters of the Pharia document-index interface (csi.index.filters) against a brute-force reference."""

from __future__ import annotations

import random
from typing import Any

import pytest

from csi.errors import InvalidInputError, blame
from csi.index.filters import parse_filters
from tests.support.filter_reference import FIELDS, gen_condition, gen_dict, gen_filters, gen_shaped, ref_matches


def test_matches_reference_on_generated_pairs() -> None:
    rng = random.Random(20240601)
    documents = ([gen_dict(rng, 3) for _ in range(50)] + [gen_shaped(rng) for _ in range(40)]
                 + [None, [], {}, 5, "x", [{"a": 1}]])
    results = []
    for _ in range(400):
        filters = gen_filters(rng)
        compiled = parse_filters(filters)
        for metadata in rng.sample(documents, 20):
            got, want = compiled.matches(metadata), ref_matches(filters, metadata)
            assert got == want, (filters, metadata)
            results.append(got)
    # not vacuous: plenty of both outcomes (and single metadata-filters that match through nesting)
    assert 0.15 < sum(results) / len(results) < 0.85
    hit_fields = set()
    for field in FIELDS:
        for _ in range(20):
            filters = [{"with_all": [{"field": field, "condition": gen_condition(rng)}]}]
            compiled = parse_filters(filters)
            for metadata in documents:
                got = compiled.matches(metadata)
                assert got == ref_matches(filters, metadata), (filters, metadata)
                if got:
                    hit_fields.add(field)
    assert hit_fields >= set(FIELDS) - {"missing", "a.b.c"}


# --- hand-written cases (expected values derived from the interface's semantics) --------------------------------


def one(field: str, condition: Any, kind: str = "with_all") -> list[dict[str, Any]]:
    return [{kind: [{"field": field, "condition": condition}]}]


CASES: list[tuple[Any, list[dict[str, Any]], bool]] = [
    # numbers: only ints and floats, never bools or numeric strings
    ({"a": 5}, one("a", {"greater_than": 4}), True),
    ({"a": 5}, one("a", {"greater_than": 5}), False),
    ({"a": 5}, one("a", {"greater_than_or_equal_to": 5}), True),
    ({"a": 5}, one("a", {"less_than": 5}), False),
    ({"a": 5}, one("a", {"less_than": 5.5}), True),
    ({"a": 5}, one("a", {"less_than_or_equal_to": 5}), True),
    ({"a": 4.5}, one("a", {"less_than_or_equal_to": 4}), False),
    ({"a": True}, one("a", {"greater_than": 0}), False),
    ({"a": False}, one("a", {"less_than": 1}), False),
    ({"a": "7"}, one("a", {"greater_than": 2}), False),
    ({"a": None}, one("a", {"less_than": 0}), False),
    # equal_to: types must agree
    ({"a": 1}, one("a", {"equal_to": 1}), True),
    ({"a": 1}, one("a", {"equal_to": {"integer_type": 1}}), True),
    ({"a": 1}, one("a", {"equal_to": True}), False),
    ({"a": 1}, one("a", {"equal_to": {"boolean_type": True}}), False),
    ({"a": True}, one("a", {"equal_to": 1}), False),
    ({"a": True}, one("a", {"equal_to": True}), True),
    ({"a": False}, one("a", {"equal_to": {"boolean_type": False}}), True),
    ({"a": False}, one("a", {"equal_to": 0}), False),
    ({"a": 0}, one("a", {"equal_to": False}), False),
    ({"a": 3.0}, one("a", {"equal_to": 3}), False),
    ({"a": 3.0}, one("a", {"greater_than_or_equal_to": 3}), True),
    ({"a": "3"}, one("a", {"equal_to": 3}), False),
    ({"a": "3"}, one("a", {"equal_to": "3"}), True),
    ({"a": "x"}, one("a", {"equal_to": {"string_type": "x"}}), True),
    ({"a": "X"}, one("a", {"equal_to": "x"}), False),
    # date-times: instants, offsets respected
    ({"t": "2024-01-01T00:00:00+02:00"}, one("t", {"before": "2023-12-31T23:30:00Z"}), True),
    ({"t": "2024-01-01T00:00:00+02:00"}, one("t", {"after": "2023-12-31T23:30:00Z"}), False),
    ({"t": "2024-01-01T00:00:00+02:00"}, one("t", {"at_or_before": "2023-12-31T22:00:00Z"}), True),
    ({"t": "2024-01-01T00:00:00+02:00"}, one("t", {"before": "2023-12-31T22:00:00Z"}), False),
    ({"t": "2024-01-01T00:00:00+02:00"}, one("t", {"at_or_after": "2023-12-31T22:00:00Z"}), True),
    ({"t": "2024-06-01T12:00:00-05:00"}, one("t", {"at_or_after": "2024-06-01T17:00:00Z"}), True),
    ({"t": "2024-06-01T12:00:00-05:00"}, one("t", {"at_or_before": "2024-06-01T19:00:00+02:00"}), True),
    ({"t": "2024-06-01T12:00:00-05:00"}, one("t", {"after": "2024-06-01T17:00:00Z"}), False),
    ({"t": "2024-06-01t17:00:00.000000001z"}, one("t", {"after": "2024-06-01T17:00:00Z"}), True),
    ({"t": "2024-06-01 17:00:00.5Z"}, one("t", {"before": "2024-06-01T17:00:01Z"}), True),
    ({"t": "2024-01-01T00:00:00"}, one("t", {"before": "2030-01-01T00:00:00Z"}), False),
    ({"t": "2024-01-01"}, one("t", {"before": "2030-01-01T00:00:00Z"}), False),
    ({"t": "not a date"}, one("t", {"before": "2030-01-01T00:00:00Z"}), False),
    ({"t": "not a date"}, one("t", {"before": "2030-01-01T00:00:00Z"}, "without"), True),
    ({"t": 1700000000}, one("t", {"after": "1970-01-01T00:00:00Z"}), False),
    # nesting, indexes, wildcards (existential), arrays are not unwrapped implicitly
    ({"a": {"b": {"c": 2}}}, one("a.b.c", {"equal_to": 2}), True),
    ({"a": {"b": {"c": 2}}}, one("a.b", {"equal_to": 2}), False),
    ({"a": {"b": {"c": 2}}}, one("a.x.c", {"equal_to": 2}), False),
    ({"a": {"b": 2}}, one("a.b.c", {"equal_to": 2}), False),
    ({"items": [{"p": 1}, {"p": 5}]}, one("items[].p", {"greater_than": 4}), True),
    ({"items": [{"p": 1}, {"p": 5}]}, one("items[0].p", {"greater_than": 4}), False),
    ({"items": [{"p": 1}, {"p": 5}]}, one("items[1].p", {"greater_than": 4}), True),
    ({"items": [{"p": 1}, {"p": 5}]}, one("items[2].p", {"greater_than": 0}), False),
    ({"items": [{"p": 1}, {"p": 5}]}, one("items[].p", {"equal_to": 5}, "without"), False),
    ({"items": [{"p": 1}, {"p": 5}]}, one("items.p", {"equal_to": 5}), False),
    ({"items": [{"p": 1}, {"p": 5}]},
     [{"with_all": [{"field": "items[].p", "condition": {"greater_than": 4}},
                    {"field": "items[].p", "condition": {"less_than": 2}}]}], True),
    ({"m": [[1], [2, 7]]}, one("m[][]", {"greater_than": 6}), True),
    ({"m": [[1], [2, 7]]}, one("m[1][0]", {"equal_to": 2}), True),
    ({"m": [[1], [2, 7]]}, one("m[0][1]", {"equal_to": 7}), False),
    ({"m": [[1], [2, 7]]}, one("m[]", {"greater_than": 6}), False),
    ({"tags": ["x", "y"]}, one("tags", {"equal_to": "x"}), False),
    ({"tags": ["x", "y"]}, one("tags[]", {"equal_to": "y"}), True),
    ({"tags": []}, one("tags[]", "is_null", "without"), True),
    ({"a": {"0": 1}}, one("a[0]", {"equal_to": 1}), False),
    ({"my-field_2": {"X9": 1}}, one("my-field_2.X9", {"equal_to": 1}), True),
    # is_null: JSON null only, never a missing field
    ({"a": None}, one("a", "is_null"), True),
    ({"a": None}, one("a", {"is_null": True}), True),
    ({}, one("a", "is_null"), False),
    ({}, one("a", "is_null", "without"), True),
    ({"a": 0}, one("a", "is_null"), False),
    ({"a": [None]}, one("a[]", "is_null"), True),
    ({"a": [None]}, one("a", "is_null"), False),
    ({"a": {"b": None}}, one("a.b.c", "is_null"), False),
    # metadata that is not an object
    (None, one("a", "is_null"), False),
    (None, one("a", "is_null", "without"), True),
    ([{"a": 1}], one("a", {"equal_to": 1}), False),
    ("a", one("a", {"equal_to": "a"}), False),
    # combinators
    ({"a": 1}, [], True),
    ({"a": 1}, [{"with_one_of": []}], False),
    ({"a": 1}, [{"with_all": []}], True),
    ({"a": 1}, [{"without": []}], True),
    ({"a": 1, "b": "x"}, [{"with_one_of": [{"field": "a", "condition": {"equal_to": 2}},
                                          {"field": "b", "condition": {"equal_to": "x"}}]}], True),
    ({"a": 1, "b": "x"}, [{"with_all": [{"field": "a", "condition": {"equal_to": 2}},
                                       {"field": "b", "condition": {"equal_to": "x"}}]}], False),
    ({"a": 1, "b": "x"}, [{"without": [{"field": "a", "condition": {"equal_to": 2}},
                                      {"field": "c", "condition": "is_null"}]}], True),
    ({"a": 1, "b": "x"}, [{"without": [{"field": "a", "condition": {"equal_to": 2}},
                                      {"field": "b", "condition": {"equal_to": "x"}}]}], False),
    ({"a": 1, "b": "x"}, one("a", {"equal_to": 1}) + one("b", {"equal_to": "y"}, "with_one_of"), False),
    ({"a": 1, "b": "x"}, one("a", {"equal_to": 1}) + one("b", {"equal_to": "y"}, "without"), True),
]


@pytest.mark.parametrize(("metadata", "filters", "expected"), CASES)
def test_hand_written_cases(metadata: Any, filters: list[dict[str, Any]], expected: bool) -> None:
    assert parse_filters(filters).matches(metadata) is expected


def test_none_filters_match_everything() -> None:
    assert parse_filters(None).matches(None) is True


def test_field_length_limit() -> None:
    field = "a" * 1000
    assert parse_filters(one(field, {"equal_to": 1})).matches({field: 1}) is True
    with pytest.raises(InvalidInputError) as info:
        parse_filters(one("a" * 1001, {"equal_to": 1}))
    assert info.value.param == "filters[0].with_all[0].field"
    assert "1000" in info.value.message


# --- validation -------------------------------------------------------------------------------------------------

BAD_FIELDS = ["", "a b", "a..b", ".a", "a.", "a[", "a]", "a[x]", "a[-1]", "[0]", "a.[0]", "a[0", "a[[0]]",
              "ä", "a.b!", "a[ 1]", "a/b", "a[0]b", "a٣"]


@pytest.mark.parametrize("field", BAD_FIELDS)
def test_invalid_field_names(field: str) -> None:
    filters = [{"with_one_of": []}, {"with_all": [{"field": "ok", "condition": "is_null"},
                                                  {"field": field, "condition": "is_null"}]}]
    with pytest.raises(InvalidInputError) as info:
        parse_filters(filters)
    assert info.value.param == "filters[1].with_all[1].field"
    assert f"`{field}`" in info.value.message


def mf(condition: Any = "is_null", field: Any = "a") -> dict[str, Any]:
    return {"field": field, "condition": condition}


P = "filters[0].with_all[0]"
MALFORMED: list[tuple[Any, str]] = [
    ({"with_all": []}, "filters"),
    ("is_null", "filters"),
    ([5], "filters[0]"),
    ([{}], "filters[0]"),
    ([{"with_any": []}], "filters[0]"),
    ([{"with_all": [], "without": []}], "filters[0]"),
    ([{"with_all": mf()}], "filters[0].with_all"),
    ([{"with_all": ["a"]}], P),
    ([{"with_all": [{"condition": "is_null"}]}], f"{P}.field"),
    ([{"with_all": [{"field": "a"}]}], f"{P}.condition"),
    ([{"with_all": [{**mf(), "extra": 1}]}], f"{P}.extra"),
    ([{"with_all": [mf(field=5)]}], f"{P}.field"),
    ([{"with_all": [mf(field=None)]}], f"{P}.field"),
    ([{"with_all": [mf(5)]}], f"{P}.condition"),
    ([{"with_all": [mf(None)]}], f"{P}.condition"),
    ([{"with_all": [mf("is_nul")]}], f"{P}.condition"),
    ([{"with_all": [mf({})]}], f"{P}.condition"),
    ([{"with_all": [mf({"greater": 1})]}], f"{P}.condition"),
    ([{"with_all": [mf({"greater_than": 1, "less_than": 2})]}], f"{P}.condition"),
    ([{"with_all": [mf({"greater_than": "1"})]}], f"{P}.condition.greater_than"),
    ([{"with_all": [mf({"less_than": True})]}], f"{P}.condition.less_than"),
    ([{"with_all": [mf({"less_than_or_equal_to": float("nan")})]}], f"{P}.condition.less_than_or_equal_to"),
    ([{"with_all": [mf({"greater_than_or_equal_to": None})]}], f"{P}.condition.greater_than_or_equal_to"),
    ([{"with_all": [mf({"after": "yesterday"})]}], f"{P}.condition.after"),
    ([{"with_all": [mf({"before": 1700000000})]}], f"{P}.condition.before"),
    ([{"with_all": [mf({"at_or_after": "2024-01-01T00:00:00"})]}], f"{P}.condition.at_or_after"),
    ([{"with_all": [mf({"at_or_before": "2024-02-30T00:00:00Z"})]}], f"{P}.condition.at_or_before"),
    ([{"with_all": [mf({"after": "2024-01-01T24:00:00Z"})]}], f"{P}.condition.after"),
    ([{"with_all": [mf({"after": "2024-01-01T00:00:00+2:00"})]}], f"{P}.condition.after"),
    ([{"with_all": [mf({"equal_to": 1.5})]}], f"{P}.condition.equal_to"),
    ([{"with_all": [mf({"equal_to": 3.0})]}], f"{P}.condition.equal_to"),
    ([{"with_all": [mf({"equal_to": None})]}], f"{P}.condition.equal_to"),
    ([{"with_all": [mf({"equal_to": ["x"]})]}], f"{P}.condition.equal_to"),
    ([{"with_all": [mf({"equal_to": 2**63})]}], f"{P}.condition.equal_to"),
    ([{"with_all": [mf({"equal_to": {"float_type": 1.0}})]}], f"{P}.condition.equal_to"),
    ([{"with_all": [mf({"equal_to": {"string_type": "x", "integer_type": 1}})]}], f"{P}.condition.equal_to"),
    ([{"with_all": [mf({"equal_to": {"integer_type": "3"}})]}], f"{P}.condition.equal_to.integer_type"),
    ([{"with_all": [mf({"equal_to": {"integer_type": True}})]}], f"{P}.condition.equal_to.integer_type"),
    ([{"with_all": [mf({"equal_to": {"boolean_type": 1}})]}], f"{P}.condition.equal_to.boolean_type"),
    ([{"with_all": [mf({"equal_to": {"string_type": 1}})]}], f"{P}.condition.equal_to.string_type"),
    ([{"with_all": [mf({"is_null": False})]}], f"{P}.condition.is_null"),
    ([{"with_all": [mf({"is_null": None})]}], f"{P}.condition.is_null"),
    ([{"with_all": []}, {"without": []}, {"with_one_of": [mf(), mf({"after": "x"})]}],
     "filters[2].with_one_of[1].condition.after"),
    ([{"with_all": []}, {"without": []}, {"with_one_of": [mf({"below": 1})]}], "filters[2].with_one_of[0].condition"),
]


@pytest.mark.parametrize(("filters", "param"), MALFORMED)
def test_malformed_filters_name_the_param(filters: Any, param: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        parse_filters(filters)
    assert info.value.param == param
    assert info.value.message


def test_blame_puts_errors_under_the_request_field() -> None:
    with pytest.raises(InvalidInputError) as info, blame("request"):
        parse_filters([{"without": [mf(field="a..b")]}])
    assert info.value.param == "request.filters[0].without[0].field"
    assert "`request.filters[0].without[0].field`" in info.value.message


def test_accepted_edge_values() -> None:
    assert parse_filters(one("a", {"equal_to": 2**63 - 1})).matches({"a": 2**63 - 1})
    assert parse_filters(one("a", {"equal_to": -(2**63)})).matches({"a": -(2**63)})
    assert parse_filters(one("a", {"greater_than": 10**400})).matches({"a": 10**401})
    assert parse_filters(one("a[007]", {"equal_to": 7})).matches({"a": list(range(8))})
    assert parse_filters(one("a", {"after": "2024-01-01T00:00:00-00:00"})).matches({"a": "2024-01-01T00:00:01Z"})
