"""Structured output and tool calls on the CPython backend (xgrammar): outputs checked by
independent validators (``jsonschema``, ``lark``, ``re``), never by our own code."""

from __future__ import annotations

import json
import re

import jsonschema
import lark
import pytest

from csi.backends.cpython import CPythonBackend
from csi.core.engine import Engine
from csi.errors import InvalidInputError
from tests.support.aio import run_async
from tests.support.faces import chat_completion, chat_completion_stream, completion
from tests.support.paths import MODELS
from tests.support.schemas import CORPUS

USER = [{"role": "user", "content": "Answer in JSON."}]


@pytest.fixture(scope="module")
def engine() -> Engine:
    eng = Engine(CPythonBackend(MODELS))
    run_async(eng.load(["tiny-chat"]))
    return eng


def chat(engine: Engine, request: dict) -> dict:
    return run_async(chat_completion(engine, {"messages": USER, **request})).model_dump()


def streamed(engine: Engine, request: dict) -> list[dict]:
    async def go() -> list[dict]:
        return [c.model_dump() async for c in chat_completion_stream(engine, {"messages": USER, **request,
                                                                             "stream": True})]
    return run_async(go())


def valid(instance: object, schema: dict) -> bool:
    try:
        jsonschema.validate(instance, schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    except jsonschema.ValidationError:
        return False
    return True


def test_the_schema_corpus_is_large_and_valid():
    assert len(CORPUS) >= 150
    for schema in CORPUS:
        jsonschema.Draft202012Validator.check_schema(schema)


def test_every_completed_reply_validates_against_its_schema_under_both_request_shapes(engine):
    stopped, invalid = 0, []
    for i, schema in enumerate(CORPUS):
        shapes = [{"type": "json_schema", "json_schema": {"name": f"s{i}", "schema": schema, "strict": True}},
                  {"type": "json_object", "schema": json.dumps(schema)}]
        for shape in shapes:
            reply = chat(engine, {"response_format": shape, "temperature": 0.8, "seed": i, "max_tokens": 96})
            choice = reply["choices"][0]
            if choice["finish_reason"] != "stop":
                continue
            stopped += 1
            try:
                value = json.loads(choice["message"]["content"])
            except ValueError:
                invalid.append((i, choice["message"]["content"]))
                continue
            if not valid(value, schema):
                invalid.append((i, choice["message"]["content"]))
    assert invalid == []
    assert stopped >= len(CORPUS)  # most of the 2 x len(CORPUS) replies end on their own


def test_json_object_gives_an_object_and_usage_reports_the_grammar(engine):
    reply = chat(engine, {"response_format": {"type": "json_object"}, "seed": 1, "max_tokens": 160})
    if reply["choices"][0]["finish_reason"] == "stop":
        assert isinstance(json.loads(reply["choices"][0]["message"]["content"]), dict)
    extra = reply["usage"]["extra"]
    assert extra["grammar_init_s"] >= 0 and extra["grammar_per_token_s"] > 0
    plain = chat(engine, {"seed": 1, "max_tokens": 8})
    assert "grammar_init_s" not in plain["usage"]["extra"]


def test_a_cached_grammar_compiles_in_no_time(engine):
    schema = {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(20)}}
    rf = {"type": "json_schema", "json_schema": {"name": "twenty", "schema": schema}}
    cold = chat(engine, {"response_format": rf, "max_tokens": 4})["usage"]["extra"]["grammar_init_s"]
    warm = chat(engine, {"response_format": rf, "max_tokens": 4})["usage"]["extra"]["grammar_init_s"]
    assert warm < cold


def test_n_choices_all_follow_the_schema(engine):
    schema = {"type": "object", "properties": {"v": {"type": "integer", "minimum": 0, "maximum": 9}},
              "required": ["v"], "additionalProperties": False}
    reply = chat(engine, {"response_format": {"type": "json_schema", "json_schema": {"name": "v", "schema": schema}},
                          "n": 4, "temperature": 1.0, "seed": 5, "max_tokens": 24})
    assert len(reply["choices"]) == 4
    for choice in reply["choices"]:
        assert choice["finish_reason"] == "stop"
        assert valid(json.loads(choice["message"]["content"]), schema)


def test_logprob_alternatives_are_only_tokens_the_grammar_allows(engine):
    reply = chat(engine, {"response_format": {"type": "grammar", "grammar": 'root ::= "yes" | "no"'},
                          "logprobs": True, "top_logprobs": 5, "max_tokens": 4})
    content = reply["choices"][0]["logprobs"]["content"]
    first = content[0]
    assert all("yes".startswith(t["token"]) or "no".startswith(t["token"]) for t in first["top_logprobs"])
    assert len(first["top_logprobs"]) < 5  # every other token is ruled out


ARITHMETIC_EBNF = r'''
root ::= expr
expr ::= term (("+" | "-") term)*
term ::= factor (("*" | "/") factor)*
factor ::= [0-9]+ | "(" expr ")"
'''
ARITHMETIC_LARK = r'''
start: expr
expr: term (("+" | "-") term)*
term: factor (("*" | "/") factor)*
factor: /[0-9]+/ | "(" expr ")"
'''
LIST_EBNF = r'''
root ::= "[" item ("," item){0,3} "]"
item ::= "\"" [a-z]{1,5} "\""
'''
LIST_LARK = r'''
start: "[" item ("," item) ~ 0..3 "]"
item: /"[a-z]{1,5}"/
'''


@pytest.mark.parametrize(("ebnf", "reference"), [(ARITHMETIC_EBNF, ARITHMETIC_LARK), (LIST_EBNF, LIST_LARK)])
def test_ebnf_outputs_parse_with_lark(engine, ebnf, reference):
    parser = lark.Lark(reference, parser="earley")
    stopped = 0
    for seed in range(8):
        reply = chat(engine, {"response_format": {"type": "grammar", "grammar": ebnf}, "seed": seed,
                              "temperature": 1.0, "max_tokens": 60})
        choice = reply["choices"][0]
        if choice["finish_reason"] == "stop":
            stopped += 1
            parser.parse(choice["message"]["content"])  # raises if the output is not in the language
    assert stopped >= 4


@pytest.mark.parametrize("pattern", [r"[0-9]{3}-[0-9]{4}", r"(cat|dog)s? [a-z]{1,8}", r"[A-Z][a-z]{1,10}, [A-Z]{2}"])
def test_regex_outputs_fullmatch(engine, pattern):
    for seed in range(4):
        reply = chat(engine, {"response_format": {"type": "regex", "pattern": pattern}, "seed": seed,
                              "max_tokens": 32})
        choice = reply["choices"][0]
        assert choice["finish_reason"] == "stop"
        assert re.fullmatch(pattern, choice["message"]["content"])


def test_completions_take_response_format_too(engine):
    reply = run_async(completion(engine, {"prompt": "Colour:", "max_tokens": 8, "response_format": {
        "type": "json_schema", "json_schema": {"name": "c", "schema": {"enum": ["red", "green"]}}}}))
    assert json.loads(reply.choices[0].text) in ("red", "green")


@pytest.mark.parametrize(("response_format", "param", "words"), [
    ({"type": "grammar", "grammar": 'root ::= "a" | b'}, "response_format.grammar", "line 1, column 16"),
    ({"type": "regex", "pattern": "[0-9"}, "response_format.pattern", "Unclosed"),
    ({"type": "json_schema", "json_schema": {"name": "x", "schema": {"not": {"type": "string"}}}},
     "response_format.json_schema.schema.not", "`not`"),
    ({"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object", "properties": {
        "a": {"type": "string", "format": "credit-card"}}}}},
     "response_format.json_schema.schema.properties.a.format", "credit-card"),
    ({"type": "json_schema", "json_schema": {"name": "x", "schema": {"$ref": "#/$defs/missing"}}},
     "response_format.json_schema.schema.$ref", "does not resolve"),
    ({"type": "json_schema", "json_schema": {"name": "x", "schema": {"if": {"type": "string"}}}},
     "response_format.json_schema.schema.if", "`if`"),
    ({"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object", "properties": {
        "p": {"type": "number", "maximum": 2.5, "enum": [1, 3]}}}}},
     "response_format.json_schema.schema.properties.p.maximum", "beside `enum`"),
    ({"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "integer", "multipleOf": 3}}},
     "response_format.json_schema.schema.multipleOf", "`multipleOf`"),
    ({"type": "json_schema", "json_schema": {"name": "x", "schema": {
        "type": "object", "required": ["zz"], "additionalProperties": False}}},
     "response_format.json_schema.schema.required", "'zz'"),
    ({"type": "grammar", "grammar": "root ::= root"}, "response_format.grammar", "accepts no text"),
    ({"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object", "properties": {
        "d": {"type": "string", "format": "date", "pattern": "^2"}}}}},
     "response_format.json_schema.schema.properties.d.format", "`pattern`"),
    ({"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "array", "items": {
        "type": "string", "pattern": "^a+$", "maxLength": 3}}}},
     "response_format.json_schema.schema.items.maxLength", "`pattern`"),
    ({"type": "json_object", "schema": '{"type": "object", "minProperties": 3, "properties": {"a": {}}, '
                                       '"additionalProperties": false}'}, "response_format.schema", "minProperties"),
])
def test_grammars_the_compiler_refuses_are_typed_errors_naming_the_field(engine, response_format, param, words):
    with pytest.raises(InvalidInputError) as err:
        chat(engine, {"response_format": response_format, "max_tokens": 4})
    assert err.value.param == param
    assert words in err.value.message
    assert chat(engine, {"max_tokens": 2, "temperature": 0})["choices"][0]["finish_reason"] in ("stop", "length")


# ---- tools ----------------------------------------------------------------------------------

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
                                                    "unit": {"enum": ["C", "F"]}},
                   "required": ["city", "unit"], "additionalProperties": False}}}
ADD = {"type": "function", "function": {
    "name": "add", "parameters": {"type": "object", "properties": {"a": {"type": "integer", "maximum": 999},
                                                                   "b": {"type": "integer", "maximum": 999}},
                                  "required": ["a", "b"], "additionalProperties": False}}}
TOOLS = [WEATHER, ADD]
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]


def test_required_forces_calls_whose_arguments_validate(engine):
    finished = 0
    for seed in range(4):
        reply = chat(engine, {"messages": ASK, "tools": TOOLS, "tool_choice": "required", "seed": seed,
                              "max_tokens": 160})
        choice = reply["choices"][0]
        calls = choice["message"]["tool_calls"]
        assert calls
        if choice["finish_reason"] != "tool_calls":
            assert choice["finish_reason"] == "length"
            calls = calls[:-1]  # the last call was cut short
        else:
            finished += 1
            assert choice["message"]["content"] is None
        for call in calls:
            assert re.fullmatch(r"call_[0-9a-f]{24}", call["id"]) and call["type"] == "function"
            assert valid(json.loads(call["function"]["arguments"]), SCHEMAS[call["function"]["name"]])
    assert finished >= 3


def test_a_named_tool_is_the_one_called(engine):
    reply = chat(engine, {"messages": ASK, "tools": TOOLS, "seed": 2, "max_tokens": 160,
                          "tool_choice": {"type": "function", "function": {"name": "add"}},
                          "parallel_tool_calls": False})
    calls = reply["choices"][0]["message"]["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["add"]
    assert valid(json.loads(calls[0]["function"]["arguments"]), SCHEMAS["add"])


def test_n_choices_each_get_their_own_calls(engine):
    reply = chat(engine, {"messages": ASK, "tools": TOOLS, "tool_choice": "required", "n": 3, "temperature": 1.0,
                          "seed": 11, "max_tokens": 160, "parallel_tool_calls": False})
    ids = set()
    for choice in reply["choices"]:
        assert choice["finish_reason"] == "tool_calls"
        [call] = choice["message"]["tool_calls"]
        ids.add(call["id"])
        assert valid(json.loads(call["function"]["arguments"]), SCHEMAS[call["function"]["name"]])
    assert len(ids) == 3


def test_none_never_calls(engine):
    for seed in range(3):
        reply = chat(engine, {"messages": ASK, "tools": TOOLS, "tool_choice": "none", "seed": seed, "max_tokens": 32})
        choice = reply["choices"][0]
        assert "tool_calls" not in choice["message"] and choice["finish_reason"] in ("stop", "length")
        assert isinstance(choice["message"]["content"], str)


def test_auto_gives_text_or_valid_calls(engine):
    for seed in range(4):
        reply = chat(engine, {"messages": ASK, "tools": TOOLS, "seed": seed, "max_tokens": 48})
        choice = reply["choices"][0]
        for call in choice["message"].get("tool_calls") or []:
            if choice["finish_reason"] == "tool_calls":
                assert valid(json.loads(call["function"]["arguments"]), SCHEMAS[call["function"]["name"]])


def test_streamed_tool_call_deltas_assemble_to_the_whole_reply(engine):
    request = {"messages": ASK, "tools": TOOLS, "tool_choice": "required", "seed": 7, "max_tokens": 160}
    whole = chat(engine, request)["choices"][0]
    chunks = streamed(engine, request)
    calls: dict[int, dict] = {}
    pieces_per_call: dict[int, int] = {}
    for chunk in chunks:
        for choice in chunk["choices"]:
            for d in (choice["delta"].get("tool_calls") or []):
                call = calls.setdefault(d["index"], {"id": None, "name": None, "arguments": ""})
                if d.get("id"):
                    assert call["id"] is None and call["arguments"] == ""  # id and name come first
                    call["id"], call["name"] = d["id"], d["function"]["name"]
                call["arguments"] += d["function"].get("arguments", "")
                pieces_per_call[d["index"]] = pieces_per_call.get(d["index"], 0) + 1
    assert [(c["name"], c["arguments"]) for _, c in sorted(calls.items())] == [
        (c["function"]["name"], c["function"]["arguments"]) for c in whole["message"]["tool_calls"]]
    assert all(n > 3 for n in pieces_per_call.values())  # arguments arrive in pieces, not at the end
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_a_two_turn_tool_conversation_round_trips(engine):
    first = chat(engine, {"messages": ASK, "tools": TOOLS, "tool_choice": "required", "seed": 3, "max_tokens": 160,
                          "parallel_tool_calls": False})
    call = first["choices"][0]["message"]["tool_calls"][0]
    history = ASK + [first["choices"][0]["message"],
                     {"role": "tool", "tool_call_id": call["id"], "content": '{"temperature": 21}'}]
    second = run_async(chat_completion(engine, {"messages": history, "tools": TOOLS, "seed": 3, "max_tokens": 16,
                                                "return_token_ids": True}))
    assert second.choices[0].finish_reason in ("stop", "length", "tool_calls")
    prompt = engine._backend.decode("tiny-chat", second.prompt_token_ids)  # noqa: SLF001 - what the model saw
    assert call["function"]["arguments"] in prompt and '{"temperature": 21}' in prompt
    assert "get_weather" in prompt  # the tools are described to a model whose template knows none


@pytest.mark.parametrize(("request_", "param"), [
    ({"tools": [WEATHER, {"type": "function", "function": {"name": "bad name"}}]}, "tools[1].function.name"),
    ({"tools": [WEATHER, WEATHER]}, "tools[1].function.name"),
    ({"tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": "nope"}}},
     "tool_choice.function.name"),
    ({"tools": [WEATHER], "tool_choice": "sometimes"}, "tool_choice"),
    ({"tool_choice": "required"}, "tool_choice"),
    ({"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
        "x": {"not": {}}}}}}]}, "tools[0].function.parameters.properties.x.not"),
    ({"tools": [WEATHER], "response_format": {"type": "json_object"}}, "response_format"),
])
def test_tool_errors_name_the_field_and_the_engine_keeps_serving(engine, request_, param):
    with pytest.raises(InvalidInputError) as err:
        chat(engine, {"messages": ASK, "max_tokens": 4, **request_})
    assert err.value.param == param
    assert chat(engine, {"max_tokens": 2})["choices"][0]["finish_reason"] in ("stop", "length")


# ---- the CSI (pharia:skill@0.4 names) and the skill SDK --------------------------------------


def test_csi_chat_takes_response_format_and_tools(engine):
    from tests.support.faces import inference

    schema = {"type": "object", "properties": {"answer": {"enum": ["yes", "no"]}}, "required": ["answer"],
              "additionalProperties": False}
    [structured, called, plain] = run_async(inference.chat(engine, [
        {"model": "tiny-chat", "messages": USER, "params": {"max_tokens": 32, "response_format": {
            "type": "json_schema", "json_schema": {"name": "a", "schema": schema}}}},
        {"model": "tiny-chat", "messages": ASK, "params": {
            "max_tokens": 160, "tools": [WEATHER["function"]], "tool_choice": {"name": "get_weather"},
            "parallel_tool_calls": False}},
        {"model": "tiny-chat", "messages": USER, "params": {"max_tokens": 4}},
    ]))
    assert structured["finish_reason"] == "stop"
    assert valid(json.loads(structured["message"]["content"]), schema)
    assert called["finish_reason"] == "tool_calls" and called["message"]["content"] is None
    [call] = called["message"]["tool_calls"]
    assert call["name"] == "get_weather" and call["id"].startswith("call_")
    assert valid(json.loads(call["arguments"]), SCHEMAS["get_weather"])
    assert "tool_calls" not in plain["message"]
    with pytest.raises(InvalidInputError) as err:
        run_async(inference.chat(engine, [{"model": "tiny-chat", "messages": USER, "params": {
            "response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": {"not": {}}}}}}]))
    assert err.value.param == "requests[0].params.response_format.json_schema.schema.not"
    with pytest.raises(InvalidInputError) as err:
        run_async(inference.chat(engine, [{"model": "tiny-chat", "messages": USER, "params": {
            "tools": [WEATHER["function"]], "tool_choice": {"name": "nope"}}}]))
    assert err.value.param == "requests[0].params.tool_choice.function.name"


def test_the_official_openai_clients_bodies_are_accepted_as_they_are(engine):
    import subprocess

    from tests.support.paths import ROOT

    out = subprocess.run(["node", str(ROOT / "tests" / "support" / "openai_bodies.mjs")], cwd=ROOT,
                         capture_output=True, text=True, timeout=120, check=True)
    structured, tools = json.loads(out.stdout)
    reply = run_async(chat_completion(engine, structured)).model_dump()
    schema = structured["response_format"]["json_schema"]["schema"]
    if reply["choices"][0]["finish_reason"] == "stop":
        assert valid(json.loads(reply["choices"][0]["message"]["content"]), schema)
    reply = run_async(chat_completion(engine, tools)).model_dump()
    [call] = reply["choices"][0]["message"]["tool_calls"]
    assert reply["choices"][0]["finish_reason"] == "tool_calls"
    assert valid(json.loads(call["function"]["arguments"]), tools["tools"][0]["function"]["parameters"])


# ---- tiny-chat's tool template and what it learned ---------------------------------------------

TOOL_HISTORY = [
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "Weather in Oslo, and the time there?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}},
        {"id": "call_2", "type": "function", "function": {"name": "get_time",
                                                           "arguments": '{"timezone": "Europe/Oslo"}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": '{"celsius": 3}'},
    {"role": "tool", "tool_call_id": "call_2", "content": '{"time": "12:00"}'},
]


def test_tool_prompts_equal_hf_transformers_apply_chat_template(engine):
    from tests.support.reference import hf_prompt_ids

    reply = run_async(chat_completion(engine, {"messages": TOOL_HISTORY, "tools": TOOLS, "max_tokens": 1,
                                               "return_token_ids": True}))
    hf_history = [{**m, "tool_calls": [{**c, "function": {**c["function"],
                                                          "arguments": json.loads(c["function"]["arguments"])}}
                                       for c in m["tool_calls"]]} if m.get("tool_calls") else m
                  for m in TOOL_HISTORY]
    assert reply.prompt_token_ids == hf_prompt_ids(hf_history, TOOLS)


def test_tiny_chat_picks_the_right_tool_on_held_out_questions(engine):
    """Better than guessing by a margin no guess reaches, on questions worded as in training but with
    values never trained on: the bar is the number of right picks a uniform guess among the tools
    offered makes on average, plus 3 standard deviations. How far tiny-chat carries this to new
    wordings depends on the machine that trained it (45-63% right where guessing makes 44%), so
    new wordings have no bar here."""
    from buildtools.models.tiny_chat_tools import held_out_cases

    cases = held_out_cases(120, new_phrasings=False)
    right = 0
    for tools, question, expected in cases:
        reply = chat(engine, {"messages": [{"role": "user", "content": question}], "tools": tools,
                              "tool_choice": "required", "temperature": 0, "max_tokens": 96,
                              "parallel_tool_calls": False})
        right += reply["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == expected
    guess = [1 / len(tools) for tools, _, _ in cases]  # 2 or 3 tools are offered
    mean, sd = sum(guess), sum(p * (1 - p) for p in guess) ** 0.5
    print(f"right tool on {right} of {len(cases)} held-out questions; guessing averages {mean:.1f} (sd {sd:.1f})")
    assert right >= mean + 3 * sd
