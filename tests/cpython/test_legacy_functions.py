"""OpenAI's deprecated `functions` / `function_call` (older LangChain and tutorial code): taken as
tools and tool choice, answered with `function_call` and finish_reason `function_call`, streamed as
`delta.function_call`; a history written the old way (assistant `function_call`, `function` role)
reaches the model as the tool turns it stands for. The arguments are checked against the function's
schema with the `jsonschema` package; the same request with `tools` is the reference."""

from __future__ import annotations

import json

import pytest

from csi.backends.cpython import CPythonBackend
from csi.core.engine import Engine
from csi.errors import InvalidInputError
from tests.cpython.test_structured import ASK, SCHEMAS, TOOLS, valid
from tests.support.aio import run_async
from tests.support.faces import chat_completion, chat_completion_stream
from tests.support.paths import MODELS

FUNCTIONS = [t["function"] for t in TOOLS]


@pytest.fixture(scope="module")
def engine() -> Engine:
    eng = Engine(CPythonBackend(MODELS))
    run_async(eng.load(["tiny-chat"]))
    return eng


def chat(engine: Engine, request: dict) -> dict:
    return run_async(chat_completion(engine, {"messages": ASK, **request})).model_dump(exclude_none=True)


def test_a_named_function_is_called_as_function_call_and_equals_the_tools_reply(engine):
    for seed in range(3):
        old = chat(engine, {"functions": FUNCTIONS, "function_call": {"name": "get_weather"}, "seed": seed,
                            "max_tokens": 160})
        new = chat(engine, {"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
                            "parallel_tool_calls": False, "seed": seed, "max_tokens": 160})
        choice = old["choices"][0]
        assert "tool_calls" not in choice["message"]
        call = choice["message"]["function_call"]
        assert call["name"] == "get_weather" and valid(json.loads(call["arguments"]), SCHEMAS["get_weather"])
        assert choice["finish_reason"] == "function_call"
        [reference] = new["choices"][0]["message"]["tool_calls"]
        assert call == reference["function"]


def test_none_never_calls_and_auto_calls_only_valid_functions(engine):
    for seed in range(3):
        none = chat(engine, {"functions": FUNCTIONS, "function_call": "none", "seed": seed, "max_tokens": 24})
        assert "function_call" not in none["choices"][0]["message"]
        auto = chat(engine, {"functions": FUNCTIONS, "seed": seed, "max_tokens": 160})["choices"][0]
        if auto["finish_reason"] == "function_call":
            call = auto["message"]["function_call"]
            assert valid(json.loads(call["arguments"]), SCHEMAS[call["name"]])


def test_the_stream_carries_function_call_deltas_that_assemble_to_the_reply(engine):
    request = {"messages": ASK, "functions": FUNCTIONS, "function_call": {"name": "add"}, "seed": 5,
               "max_tokens": 160}
    whole = chat(engine, request)["choices"][0]["message"]["function_call"]

    async def go() -> list[dict]:
        return [c.model_dump(exclude_none=True)
                async for c in chat_completion_stream(engine, {**request, "stream": True})]

    chunks = run_async(go())
    name, arguments, pieces = None, "", 0
    for chunk in chunks:
        for choice in chunk["choices"]:
            assert "tool_calls" not in choice["delta"]
            d = choice["delta"].get("function_call")
            if d:
                name = name or d.get("name")
                arguments += d.get("arguments", "")
                pieces += 1
    assert (name, arguments) == (whole["name"], whole["arguments"]) and pieces > 3
    assert chunks[-1]["choices"][0]["finish_reason"] == "function_call"


def test_an_old_style_history_reaches_the_model_as_tool_turns(engine):
    history = ASK + [
        {"role": "assistant", "content": None,
         "function_call": {"name": "get_weather", "arguments": '{"city": "Paris", "unit": "C"}'}},
        {"role": "function", "name": "get_weather", "content": '{"temperature": 21}'}]
    old = run_async(chat_completion(engine, {"messages": history, "functions": FUNCTIONS, "seed": 1,
                                             "max_tokens": 8, "return_token_ids": True}))
    tools_history = ASK + [
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_get_weather", "type": "function",
         "function": {"name": "get_weather", "arguments": '{"city": "Paris", "unit": "C"}'}}]},
        {"role": "tool", "tool_call_id": "call_get_weather", "content": '{"temperature": 21}'}]
    new = run_async(chat_completion(engine, {"messages": tools_history, "tools": TOOLS, "seed": 1,
                                             "parallel_tool_calls": False, "max_tokens": 8,
                                             "return_token_ids": True}))
    assert old.prompt_token_ids == new.prompt_token_ids
    prompt = engine._backend.decode("tiny-chat", old.prompt_token_ids)  # noqa: SLF001 - what the model saw
    assert '{"temperature": 21}' in prompt and "Paris" in prompt


@pytest.mark.parametrize(("fields", "param"), [
    ({"function_call": "auto"}, "function_call"),
    ({"functions": FUNCTIONS, "tools": TOOLS}, "functions"),
    ({"functions": FUNCTIONS, "tool_choice": "auto"}, "functions"),
    ({"functions": FUNCTIONS, "function_call": "required"}, "function_call"),
    ({"functions": [{"name": "bad name"}]}, "functions[0].name"),
    ({"functions": []}, "functions"),
])
def test_bad_legacy_fields_are_refused_by_name(engine, fields, param):
    with pytest.raises(InvalidInputError) as err:
        chat(engine, fields)
    assert err.value.param == param, err.value
