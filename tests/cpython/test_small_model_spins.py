"""A real small model (SmolLM2-135M-Instruct, built in) on the requests where it used to run to
``max_tokens``: digits without end in an unbounded number ("3.14159265358979323846266336163…",
"6000000000…"), and a required tool call written again and again. Each reply must now end by itself
and be valid (``jsonschema``); the calls of one reply are all distinct."""

from __future__ import annotations

import json

import jsonschema
import pytest

from csi.backends.cpython import CPythonBackend
from csi.core.engine import Engine
from tests.support.faces import chat_completion
from tests.cpython.test_number_bounds import in_shape
from tests.cpython.test_structured import ASK, SCHEMAS, TOOLS
from tests.support.aio import run_async
from tests.support.paths import MODELS

MODEL = "smollm2-135m-instruct"


@pytest.fixture(scope="module")
def engine() -> Engine:
    eng = Engine(CPythonBackend(MODELS))
    run_async(eng.load([MODEL]))
    return eng


def chat(engine: Engine, request: dict) -> dict:
    return run_async(chat_completion(engine, {"model": MODEL, **request})).model_dump()


@pytest.mark.parametrize(("prompt", "field", "kind", "seed", "temperature"), [
    ("Pi to as many digits as you know, in JSON.", "pi", "number", 0, 0.0),
    ("What is 1/7 as a decimal? Answer in JSON.", "result", "number", 2, 0.7),
    ("How many people live on Earth?", "population", "integer", 0, 0.0),
])
def test_numbers_end_where_the_model_used_to_write_digits_until_max_tokens(engine, prompt, field, kind, seed,
                                                                            temperature):
    schema = {"type": "object", "properties": {field: {"type": kind}}, "required": [field],
              "additionalProperties": False}
    reply = chat(engine, {"messages": [{"role": "user", "content": prompt}], "seed": seed, "max_tokens": 100,
                          "temperature": temperature,
                          "response_format": {"type": "json_schema", "json_schema": {"name": "n", "schema": schema}}})
    choice = reply["choices"][0]
    assert choice["finish_reason"] == "stop", choice["message"]["content"]
    text = choice["message"]["content"]
    jsonschema.validate(json.loads(text), schema)
    assert in_shape(text.removeprefix(f'{{"{field}": ').removesuffix("}"), kind == "integer", False), text


def test_required_calls_are_never_repeated_and_replies_end_with_tool_calls(engine):
    dropped = 0
    for seed in range(10):
        reply = chat(engine, {"messages": ASK, "tools": TOOLS, "tool_choice": "required", "seed": seed,
                              "temperature": 0.7, "max_tokens": 160})
        choice = reply["choices"][0]
        assert choice["finish_reason"] == "tool_calls"
        calls = [(c["function"]["name"], c["function"]["arguments"]) for c in choice["message"]["tool_calls"]]
        assert len(set(calls)) == len(calls), calls
        for name, arguments in calls:
            jsonschema.validate(json.loads(arguments), SCHEMAS[name])
        # one call is ~38 tokens: a one-call reply that took more had a repeat dropped
        dropped += len(calls) == 1 and reply["usage"]["completion_tokens"] > 60
    assert dropped  # the model did repeat itself: the test exercises the stop
