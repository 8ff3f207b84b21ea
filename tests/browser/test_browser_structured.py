"""Structured output and tool calls in Chromium (web-xgrammar in the worker): outputs validated
by ``jsonschema``, tokens equal to the CPython backend's (PyPI xgrammar) for the same request."""

from __future__ import annotations

import json

import jsonschema
import pytest

from csi.backends.cpython import CPythonBackend
from csi.core.engine import Engine
from tests.support.faces import chat_completion
from tests.support.aio import run_async
from tests.support.paths import MODELS
from tests.support.schemas import CORPUS

pytestmark = pytest.mark.browser

USER = [{"role": "user", "content": "Answer in JSON."}]
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
                                                    "unit": {"enum": ["C", "F"]}},
                   "required": ["city", "unit"], "additionalProperties": False}}}


@pytest.fixture(scope="module")
def cpython_engine() -> Engine:
    eng = Engine(CPythonBackend(MODELS))
    run_async(eng.load(["tiny-chat"]))
    return eng


def chat(engine_page, request):
    return engine_page.ok("return await engine.chat.completions.create(arg);", {"messages": USER, **request})


def test_a_sample_of_the_schema_corpus_validates_in_the_browser(engine_page):
    sample = CORPUS[::len(CORPUS) // 30][:30]
    requests = []
    for i, schema in enumerate(sample):
        shape = ({"type": "json_schema", "json_schema": {"name": f"s{i}", "schema": schema}} if i % 2 else
                 {"type": "json_object", "schema": json.dumps(schema)})
        requests.append({"messages": USER, "response_format": shape, "temperature": 0.8, "seed": i,
                         "max_tokens": 96})
    replies = engine_page.ok("""const out = [];
        for (const r of arg) out.push(await engine.chat.completions.create(r));
        return out;""", requests, timeout=600_000)
    stopped = 0
    for schema, reply in zip(sample, replies, strict=True):
        choice = reply["choices"][0]
        if choice["finish_reason"] == "stop":
            stopped += 1
            jsonschema.validate(json.loads(choice["message"]["content"]), schema,
                                format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    assert stopped >= 15


@pytest.mark.parametrize("constraint", [
    {"response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema": {
        "type": "object", "properties": {"name": {"type": "string", "maxLength": 10},
                                         "age": {"type": "integer", "minimum": 0, "maximum": 120}},
        "required": ["name", "age"]}}}},
    {"response_format": {"type": "json_object"}},
    {"response_format": {"type": "grammar", "grammar": 'root ::= ("yes" | "no") ", " [a-z]{2,12} "."'}},
    {"response_format": {"type": "regex", "pattern": "[0-9]{3}-[a-z]{2,6}"}},
    {"tools": [WEATHER], "tool_choice": "required"},
    {"tools": [WEATHER], "tool_choice": "auto"},
])
def test_constrained_tokens_equal_the_cpython_backend(engine_page, cpython_engine, constraint):
    request = {"messages": USER, **constraint, "temperature": 0.9, "top_p": 0.95, "seed": 42, "max_tokens": 96,
               "return_token_ids": True}
    browser = chat(engine_page, request)
    cpython = run_async(chat_completion(cpython_engine, request)).model_dump()
    assert browser["choices"][0]["token_ids"] == cpython["choices"][0]["token_ids"]
    assert browser["choices"][0]["finish_reason"] == cpython["choices"][0]["finish_reason"]
    assert browser["usage"]["extra"]["grammar_per_token_s"] > 0


def test_a_bad_grammar_is_a_typed_error_with_the_compilers_position_and_grammars_still_work(engine_page):
    out = engine_page.call("return await engine.chat.completions.create(arg);", {
        "messages": USER, "max_tokens": 4, "response_format": {"type": "grammar", "grammar": 'root ::= "a" | b'}})
    assert not out["ok"]
    assert out["error"]["name"] == "InvalidInputError"
    assert out["error"]["param"] == "response_format.grammar"
    assert "line 1, column 16" in out["error"]["message"] and 'Rule "b" is not defined' in out["error"]["message"]
    out = engine_page.call("return await engine.chat.completions.create(arg);", {
        "messages": USER, "max_tokens": 4, "response_format": {"type": "regex", "pattern": "[0-9"}})
    assert out["error"]["param"] == "response_format.pattern"
    out = engine_page.call("return await engine.chat.completions.create(arg);", {
        "messages": USER, "max_tokens": 4, "response_format": {"type": "grammar", "grammar": "root ::= root"}})
    assert out["error"]["name"] == "InvalidInputError" and out["error"]["param"] == "response_format.grammar"
    assert "accepts no text" in out["error"]["message"]
    reply = chat(engine_page, {"response_format": {"type": "grammar", "grammar": 'root ::= "ok" | "no"'},
                               "max_tokens": 8})
    assert reply["choices"][0]["message"]["content"] in ("ok", "no")
    assert reply["choices"][0]["finish_reason"] == "stop"


def test_streamed_tool_calls_arrive_in_pieces_and_assemble(engine_page):
    chunks = engine_page.ok("""const chunks = [];
        for await (const c of await engine.chat.completions.create({...arg, stream: true})) chunks.push(c);
        return chunks;""", {"messages": [{"role": "user", "content": "Weather in Oslo?"}], "tools": [WEATHER],
                            "tool_choice": "required", "parallel_tool_calls": False, "seed": 4, "max_tokens": 160})
    deltas = [d for c in chunks for ch in c["choices"] for d in (ch["delta"].get("tool_calls") or [])]
    assert deltas[0]["id"].startswith("call_") and deltas[0]["function"]["name"] == "get_weather"
    arguments = "".join(d["function"].get("arguments", "") for d in deltas)
    jsonschema.validate(json.loads(arguments), WEATHER["function"]["parameters"])
    assert len(deltas) > 4
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
