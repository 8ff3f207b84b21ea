"""Numbers in JSON Schema grammars: exact bounds and digit limits. Each schema is compiled as the
backends compile it (``json_schema_ebnf`` with PyPI xgrammar's converter) and matched string by
string with xgrammar's matcher; the reference is ``jsonschema`` (with floats, as JSON parsers hand
numbers over, and with exact decimals) and the documented shape, never our own output: no exponent
under bounds, at most 15 digits (a lone leading 0 not counted), exponents of at most 2 digits,
integers within ±(2^53 − 1) with neither fraction nor exponent."""

from __future__ import annotations

import itertools
import json
import re
from decimal import Decimal

import jsonschema
import pytest
import xgrammar as xgr
from hypothesis import given, settings
from hypothesis import strategies as st
from xgrammar.testing import _get_matcher_from_grammar

from csi.backends.cpython import CPythonBackend
from csi.core.engine import Engine
from csi.core.grammar import json_schema_ebnf
from csi.errors import InvalidInputError
from tests.support.faces import chat_completion
from csi.faces.openai.structured import ResponseFormat
from tests.support.aio import run_async
from tests.support.paths import MODELS

SAFE = 2**53 - 1
JSON_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")  # RFC 8259


def converter(schema: object) -> str:
    return str(xgr.Grammar.from_json_schema(json.dumps(schema), any_whitespace=False, separators=(", ", ": "),
                                            strict_mode=True))


def acceptor(schema: dict, ebnf: str | None = None):
    """Whether the grammar compiled for ``schema`` takes a whole text."""
    matcher = _get_matcher_from_grammar(xgr.Grammar.from_ebnf(ebnf or json_schema_ebnf(schema, converter)))

    def accepts(text: str) -> bool:
        matcher.reset()
        return bool(matcher.accept_string(text)) and matcher.is_terminated()
    return accepts


def mantissa_digits(text: str) -> int:
    """Digits before the exponent, a lone 0 before the point not counted."""
    mantissa = re.split("[eE]", text.lstrip("-"))[0]
    whole, _, fraction = mantissa.partition(".")
    return (0 if whole == "0" else len(whole)) + len(fraction)


def in_shape(text: str, integer: bool, bounded: bool) -> bool:
    """The numbers the grammar may write at all (the README's limits)."""
    found = JSON_NUMBER.fullmatch(text)
    if found is None:
        return False
    if integer:
        return found.group(2) is None and found.group(3) is None and abs(int(text)) <= SAFE
    exponent = found.group(3)
    if exponent and (bounded or len(exponent.lstrip("eE+-")) > 2):
        return False
    return mantissa_digits(text) <= 15


def valid(schema: dict, text: str) -> bool:
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return jsonschema.Draft202012Validator(schema).is_valid(value)


def valid_exactly(schema: dict, text: str) -> bool:
    """``jsonschema`` on exact decimals: the schema's bounds and the text as written."""
    exact = json.loads(json.dumps(schema), parse_float=Decimal)
    return jsonschema.Draft202012Validator(exact).is_valid(json.loads(text, parse_float=Decimal))


def near(bound: Decimal) -> set[str]:
    """Numbers around ``bound``: equal (also with trailing zeros), a step of 10^-p above and below."""
    out = set()
    for p in range(0, 17):
        for step in (-1, 0, 1):
            value = bound + step * Decimal(10) ** -p
            for v in (value, -value):
                text = format(v, "f")
                out |= {text, text + ("0" if "." in text else ".0"), text + ("00" if "." in text else ".00")}
    return out


MALFORMED = ["", "-", "+1", "01", "00", "-01", ".5", "1.", "1.e2", "0x10", " 1", "1 ", "NaN", "Infinity",
             "-Infinity", "1_000", "--1", "1e", "1e+", "true", "null", '"1"']
GRID = ([str(i) for i in range(-1100, 1101)] + [f"{k / 100:.2f}" for k in range(-3000, 3001, 3)]
        + [f"{k / 1000:.3f}" for k in range(-1000, 1001, 7)] + ["-0", "-0.0", "0.0", "0.10", "0.100", "1e2",
                                                                "1E-2", "-1.5e3", "2e+1"])
BOUNDS: list[dict] = [
    {"minimum": 0.5, "maximum": 19.99},
    {"exclusiveMinimum": 0, "exclusiveMaximum": 1},
    {"minimum": -3.25, "maximum": -0.5},
    {"minimum": -3.25},
    {"exclusiveMaximum": 100},
    {"exclusiveMaximum": 0},
    {"minimum": 0},
    {"maximum": 0, "exclusiveMinimum": -0.001},
    {"minimum": -1000.0, "maximum": 1000.0},
    {"minimum": 7, "maximum": 7},
    {"exclusiveMinimum": 7, "maximum": 7.000001},
    {"minimum": 0.125, "exclusiveMaximum": 0.126},
    {"minimum": 1e-7, "maximum": 2e-7},
    {"maximum": -2.5},
    {"minimum": 2.5, "maximum": 3.5},
    {"minimum": 1, "exclusiveMinimum": 1, "maximum": 9, "exclusiveMaximum": 12},
    {"minimum": 9},
    {"minimum": -1000, "maximum": -101},
    {"minimum": 11, "maximum": 12345},
    {"exclusiveMinimum": 0.1, "exclusiveMaximum": 0.3},
    {"minimum": 99999999999999.5},
    {"maximum": -123456789.125},
]


def candidates(bounds: dict) -> list[str]:
    found = set(GRID) | set(MALFORMED)
    for value in bounds.values():
        found |= near(Decimal(repr(value)))
    found |= {str(SAFE), str(SAFE + 1), str(-SAFE), str(-SAFE - 1), "1" * 15, "1" * 16, "0." + "1" * 15,
              "0." + "1" * 16, "0." + "0" * 14 + "1", "0." + "0" * 15 + "1"}
    return sorted(found)


@pytest.mark.parametrize("kind", ["number", "integer"])
@pytest.mark.parametrize("bounds", BOUNDS, ids=lambda b: json.dumps(b))
def test_bounded_numbers_are_exactly_the_valid_ones_in_the_documented_shape(kind, bounds):
    schema = {"type": kind, **bounds}
    try:
        accepts = acceptor(schema)
    except ValueError:  # no number in the shape satisfies the bounds: the check refuses it first
        assert not [t for t in candidates(bounds) if in_shape(t, kind == "integer", True) and valid(schema, t)]
        with pytest.raises(InvalidInputError):
            ResponseFormat.model_validate({"type": "json_schema", "json_schema": {"name": "n", "schema": schema}}
                                          ).to_grammar()
        return
    texts = candidates(bounds)
    wrong = [t for t in texts if accepts(t) != (in_shape(t, kind == "integer", True) and valid(schema, t))]
    assert wrong == []
    assert any(map(accepts, texts))


@pytest.mark.parametrize("bounds", BOUNDS, ids=lambda b: json.dumps(b))
def test_within_the_shape_float_and_exact_decimal_validation_agree(bounds):
    """So a float-based validator (Python's, JavaScript's) agrees with the exact grammar."""
    schema = {"type": "number", **bounds}
    shaped = [t for t in candidates(bounds) if in_shape(t, False, True)]
    assert [t for t in shaped if valid(schema, t) != valid_exactly(schema, t)] == []


def decimals(places: int) -> st.SearchStrategy[Decimal]:
    return st.decimals(min_value=-60, max_value=60, places=places, allow_nan=False, allow_infinity=False)


@settings(max_examples=60, deadline=None)
@given(low=st.none() | decimals(3), high=st.none() | decimals(3), flags=st.tuples(st.booleans(), st.booleans()),
       kind=st.sampled_from(["number", "integer", ["number", "null"], ["integer", "string"]]),
       probes=st.lists(decimals(4), min_size=20, max_size=40))
def test_random_bounds_match_jsonschema(low, high, flags, kind, probes):
    schema: dict = {"type": kind}
    if low is not None:
        schema["exclusiveMinimum" if flags[0] else "minimum"] = float(low)
    if high is not None:
        schema["exclusiveMaximum" if flags[1] else "maximum"] = float(high)
    integer = "number" not in kind
    try:
        accepts = acceptor(schema)
    except ValueError:
        return  # empty: covered by the refusal tests
    texts = {format(p, "f") for p in probes} | {format(p.normalize(), "f") for p in probes}
    for bound in (low, high):
        if bound is not None:
            texts |= near(bound)
    others = {"null"} if "null" in kind else {'"ab"', '"abc"', '""'} if "string" in kind else set()
    wrong = [t for t in texts if accepts(t) != (in_shape(t, integer, bool(schema.keys() - {"type"}))
                                                and valid(schema, t))]
    wrong += [t for t in others if not accepts(t)]
    assert wrong == []


@pytest.mark.parametrize("kind", ["number", "integer"])
def test_unbounded_numbers_have_limited_digits(kind):
    accepts = acceptor({"type": kind})
    texts = set(GRID) | set(MALFORMED) | {str(SAFE), str(SAFE + 1), str(-SAFE), str(-SAFE - 1)}
    texts |= {sign + "1" * n + frac + exp for sign in ("", "-") for n in (1, 14, 15, 16)
              for frac in ("", ".5", ".25") for exp in ("", "e9", "E-10", "e+99", "e100", "e007")}
    texts |= {"0." + "0" * n + "1" for n in range(12, 17)} | {"9" * 15 + "e99", "1e-99"}
    wrong = [t for t in texts if accepts(t) != (in_shape(t, kind == "integer", False) and valid({"type": kind}, t))]
    assert wrong == []
    assert accepts("1234567890.12345") if kind == "number" else accepts(str(-SAFE))


def test_any_json_has_the_same_digit_limits():
    """``json_object``: numbers anywhere in any JSON are limited the same way."""
    grammar = ResponseFormat.model_validate({"type": "json_object"}).to_grammar()
    assert grammar is not None
    schema = json.loads(grammar.source)["format"]["json_schema"]
    accepts = acceptor(schema)
    for value in ("1.5e3", "123456789012345", "-0.5", "1e99", "1234567890123456", "1e100", "0.1234567890123456"):
        text = json.dumps({"a": [json.loads('"x"'), {"b": None}], "c": 0}).replace("0}", value + "}")
        assert accepts(text) == in_shape(value, False, False), text


NESTED = {
    "type": "object",
    "properties": {
        "price": {"type": "number", "minimum": 0, "exclusiveMaximum": 100, "description": "in euros"},
        "score": {"type": ["number", "null"], "minimum": -1, "maximum": 1},
        "n": {"$ref": "#/$defs/small"},
        "xs": {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 3}, "maxItems": 2},
        "pair": {"type": "array", "prefixItems": [{"type": "number", "maximum": -0.5},
                                                  {"type": ["string", "integer"], "minimum": 5, "maxLength": 2}],
                 "items": False},
        "any": {"anyOf": [{"type": "integer", "exclusiveMinimum": 10}, {"type": "string", "maxLength": 1}]},
    },
    "required": ["price", "score", "n", "xs", "pair", "any"],
    "additionalProperties": False,
    "$defs": {"small": {"type": "integer", "exclusiveMaximum": 3, "minimum": 0}},
}
VALUES = {
    "price": ["0", "-0.0", "99.99", "100", "100.0", "5e1", "0.000001"],
    "score": ["null", "1", "1.0", "1.01", "-1", "-1.5", "0"],
    "n": ["0", "2", "3", "-1", "2.0"],
    "xs": ["[]", "[1, 3]", "[0]", "[1, 2, 3]", "[3, 4]"],
    "pair": ['[-0.5, 5]', '[-0.4, 5]', '[-1, "ab"]', '[-1, "abc"]', '[-1, 4]', '[-7.25, 123]'],
    "any": ["11", "10", '"x"', '"xy"', "10.5"],
}


INTEGER_FIELDS = {"n", "xs", "any"}  # and the second item of "pair"


def numbers_in_shape(key: str, value: str) -> bool:
    """Every number in one field's value has the shape of its type (a number or an integer)."""
    numbers = re.findall(r'(?<!")-?[0-9][0-9.eE+-]*', value)
    integer = [key in INTEGER_FIELDS] * len(numbers) if key != "pair" else [False, True][:len(numbers)]
    return all(in_shape(x, i, True) for x, i in zip(numbers, integer, strict=True))


def test_bounds_hold_wherever_the_number_sits_in_the_schema():
    accepts = acceptor(NESTED)
    keys = list(VALUES)
    wrong, passed = [], 0
    for combo in itertools.islice(itertools.product(*VALUES.values()), 0, None, 7):
        text = "{" + ", ".join(f'"{k}": {v}' for k, v in zip(keys, combo, strict=True)) + "}"
        expected = valid(NESTED, text) and all(numbers_in_shape(k, v) for k, v in zip(keys, combo, strict=True))
        passed += expected
        if accepts(text) != expected:
            wrong.append(text)
    assert wrong == [] and passed > 0


def test_xgrammar_alone_gets_bounds_wrong_which_is_why_they_are_compiled_here():
    raw = acceptor({}, converter({"type": "integer", "minimum": 9}))
    assert raw("1")  # below the minimum
    raw = acceptor({}, converter({"type": "integer", "minimum": 11, "maximum": 12345}))
    assert raw("99999")
    raw = acceptor({}, converter({"type": "number", "minimum": 0.5, "maximum": 19.99}))
    assert raw("19x99")  # not even a number


def refusal(schema: object) -> InvalidInputError:
    with pytest.raises(InvalidInputError) as err:
        ResponseFormat.model_validate({"type": "json_schema", "json_schema": {"name": "n", "schema": schema}}
                                      ).to_grammar()
    return err.value


@pytest.mark.parametrize(("schema", "where", "words"), [
    ({"type": "number", "minimum": 2, "maximum": 1}, "minimum", "no number"),
    ({"type": "integer", "minimum": 2.5, "maximum": 2.75}, "minimum", "no integer"),
    ({"type": "number", "minimum": 1e16}, "minimum", "at most 15 digits"),
    ({"type": "integer", "exclusiveMinimum": SAFE}, "exclusiveMinimum", "2^53"),
    ({"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1e-15}, "exclusiveMinimum", "no number"),
    ({"type": "number", "minimum": "3"}, "minimum", "finite number"),
    ({"type": "number", "minimum": 0, "exclusiveMinimum": True}, "exclusiveMinimum", "draft 4"),
    ({"minimum": 0}, "minimum", "needs a `type`"),
    ({"type": "number", "maximum": 5, "enum": [1, 9]}, "maximum", "beside `enum`"),
    ({"type": ["integer", "null"], "minimum": 1, "const": 3}, "minimum", "beside `const`"),
    ({"type": "number", "minimum": 0, "anyOf": [{"type": "integer"}]}, "minimum", "beside `anyOf`"),
    ({"type": "object", "properties": {"p": {"type": ["number", "string"], "maximum": 5, "pattern": "^a",
                                             "maxLength": 3}}}, "properties.p.maxLength", "`pattern`"),
    ({"type": "object", "properties": {"p": {"type": "number", "minimum": 1, "maximum": 0}}},
     "properties.p.minimum", "no number"),
    ({"const": "csi-number-range:number:[1,2]"}, "", "reserved"),
])
def test_bounds_the_grammar_cannot_enforce_are_typed_errors_naming_the_field(schema, where, words):
    err = refusal(schema)
    assert err.param == "response_format.json_schema.schema" + (f".{where}" if where else "")
    assert words in err.message


def test_bounds_on_a_node_with_no_numeric_type_constrain_nothing_and_are_accepted():
    accepts = acceptor({"type": "string", "minimum": 5, "maxLength": 2})
    assert accepts('"ab"') and not accepts("7")


# ---- generation ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def engine() -> Engine:
    eng = Engine(CPythonBackend(MODELS))
    run_async(eng.load(["tiny-chat"]))
    return eng


PRICES = {"type": "object", "properties": {
    "price": {"type": "number", "minimum": 0.5, "maximum": 19.99},
    "score": {"type": "integer", "exclusiveMinimum": -3, "maximum": 3},
    "ratio": {"type": ["number", "null"], "exclusiveMinimum": 0, "exclusiveMaximum": 1},
    "free": {"type": "number"}}, "required": ["price", "score", "ratio", "free"], "additionalProperties": False}


def test_replies_keep_the_bounds_and_the_shape(engine):
    for seed in range(6):
        reply = run_async(chat_completion(engine, {
            "messages": [{"role": "user", "content": "A price and a score in JSON."}], "seed": seed,
            "temperature": 1.0, "max_tokens": 120,
            "response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema": PRICES}}}))
        choice = reply.choices[0]
        assert choice.finish_reason == "stop"
        text = choice.message.content or ""
        assert valid(PRICES, text), text
        numbers = re.findall(r"-?[0-9][0-9.eE+-]*", text)
        assert all(in_shape(x, False, False) for x in numbers), text


def digit_tokens(engine: Engine) -> list[int]:
    model = engine.models["tiny-chat"]
    return [t for t in range(model.vocab_size) if re.fullmatch(rb"[0-9]+", engine.token_bytes("tiny-chat", t))]


@pytest.mark.parametrize("kind", ["number", "integer"])
def test_a_model_pushed_to_write_digits_forever_still_stops(engine, kind):
    """The failure seen with SmolLM2-135M ("11.7888…" until max_tokens), forced with a logit bias."""
    schema = {"type": "object", "properties": {"x": {"type": kind}}, "required": ["x"], "additionalProperties": False}
    reply = run_async(chat_completion(engine, {
        "messages": [{"role": "user", "content": "A number."}], "max_tokens": 200, "temperature": 0,
        "logit_bias": {str(t): 100 for t in digit_tokens(engine)},
        "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}}))
    choice = reply.choices[0]
    assert choice.finish_reason == "stop", choice.message.content
    text = json.dumps(json.loads(choice.message.content or "")) and (choice.message.content or "")
    number = text.removeprefix('{"x": ').removesuffix("}")
    assert in_shape(number, kind == "integer", False)
    assert mantissa_digits(number) >= 15  # the bias did push digits
