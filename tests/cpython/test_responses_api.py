"""OpenAI's Responses API on the CPython engine. References: HF transformers' greedy ids and prompt
rendering (torch), torch's log-softmax, the `jsonschema` validator, and the official `openai` Python
package's own types for every object and streamed event (its pydantic models of OpenAI's API)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from csi.backends.cpython import CPythonBackend
from csi.core.engine import Engine
from csi.errors import CsiError, InvalidInputError, NotFoundError
from csi.faces.openai.responses_api.protocol import InputItemsRequest, ResponseCreateRequest, ResponseIdRequest
from csi.faces.openai.responses_api.serving import create_response, delete, list_input_items, retrieve
from csi.faces.openai.responses_api.store import MemoryResponseStore
from csi.wire import parse_request
from tests.cpython.test_structured import SCHEMAS, TOOLS, valid
from tests.support.aio import run_async
from tests.support.paths import MODELS
from tests.support.reference import hf_prompt_ids
from tests.support.responses import checked
from tests.support.smollm2_reference import MODEL, greedy_ids, hf_tokenizer, log_softmax_rows, prompt_ids

INSTRUCTIONS = "You are a concise assistant."
QUESTION = "What is the capital of France?"
FOLLOW_UP = "And of Italy?"
MAX = 24
# as tests/cpython/test_real_model.py: float32 on both sides, summed in other orders
LOGPROB_TOLERANCE = 1e-3


@pytest.fixture(scope="module")
def engine() -> Engine:
    eng = Engine(CPythonBackend(MODELS))
    run_async(eng.load([MODEL, "tiny-chat"]))
    return eng


@pytest.fixture
def store() -> MemoryResponseStore:
    return MemoryResponseStore()


def create(engine: Engine, store: MemoryResponseStore, body: dict[str, Any]) -> dict[str, Any]:
    req = parse_request(ResponseCreateRequest, body)
    return run_async(create_response(engine, store, req)).model_dump(mode="json")  # type: ignore[union-attr]


def stream(engine: Engine, store: MemoryResponseStore, body: dict[str, Any]) -> list[dict[str, Any]]:
    req = parse_request(ResponseCreateRequest, {**body, "stream": True})

    async def go() -> list[dict[str, Any]]:
        return [json.loads(e.model_dump_json()) async for e in await create_response(engine, store, req)]  # type: ignore[union-attr]

    return run_async(go())


def test_the_real_model_answers_as_transformers_streamed_and_whole(engine: Engine, store: MemoryResponseStore) -> None:
    body = {"model": MODEL, "instructions": INSTRUCTIONS, "input": QUESTION, "temperature": 0, "max_output_tokens": MAX,
            "include": ["message.output_text.logprobs"], "top_logprobs": 3}
    messages = [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": QUESTION}]
    expected = greedy_ids(messages, MAX)
    final = checked(stream(engine, store, body))
    whole = create(engine, store, body)
    text = hf_tokenizer().decode(expected)
    assert final["output_text"] == whole["output_text"] == text and "Paris" in text
    assert final["usage"]["input_tokens"] == len(prompt_ids(messages))
    assert final["usage"]["output_tokens"] == len(expected) == len(final["output"][0]["content"][0]["logprobs"])
    assert final["status"] == whole["status"] == ("completed" if len(expected) < MAX else "incomplete")
    logprobs = final["output"][0]["content"][0]["logprobs"]
    prompt = prompt_ids(messages)
    rows = log_softmax_rows(prompt + expected, len(prompt) - 1)
    got = np.array([lp["logprob"] for lp in logprobs[:len(expected)]])
    assert np.abs(got - rows[np.arange(len(expected)), expected]).max() < LOGPROB_TOLERANCE
    assert all(len(lp["top_logprobs"]) == 3 for lp in logprobs)
    assert final["instructions"] == INSTRUCTIONS and final["store"] and final["text"] == {"format": {"type": "text"}}


def test_previous_response_id_continues_without_the_earlier_instructions(engine: Engine,
                                                                         store: MemoryResponseStore) -> None:
    first = create(engine, store, {"model": MODEL, "instructions": INSTRUCTIONS, "input": QUESTION, "temperature": 0,
                                   "max_output_tokens": MAX})
    second = create(engine, store, {"model": MODEL, "previous_response_id": first["id"], "temperature": 0,
                                    "input": [{"role": "user", "content": FOLLOW_UP}], "max_output_tokens": MAX})
    # OpenAI: a previous response's instructions are not carried over
    history = [{"role": "user", "content": QUESTION}, {"role": "assistant", "content": first["output_text"]},
               {"role": "user", "content": FOLLOW_UP}]
    assert second["usage"]["input_tokens"] == len(prompt_ids(history))
    assert second["output_text"] == hf_tokenizer().decode(greedy_ids(history, MAX))
    assert second["previous_response_id"] == first["id"]
    items = run_async(list_input_items(store, InputItemsRequest(response_id=second["id"], order="asc")))
    assert [(i["role"], i["content"][0]["text"]) for i in items.data] == [("user", FOLLOW_UP)]
    assert run_async(retrieve(store, ResponseIdRequest(response_id=first["id"]))).model_dump(mode="json") == first


def test_function_calls_and_their_outputs_round_trip_as_the_chat_template_renders_them(
        engine: Engine, store: MemoryResponseStore) -> None:
    tools = [{"type": "function", **t["function"]} for t in TOOLS]
    ask = "What is the weather in Paris?"
    events = stream(engine, store, {"model": "tiny-chat", "input": ask, "tools": tools, "tool_choice": "required",
                                    "seed": 3, "max_output_tokens": 160})
    final = checked(events)
    calls = [i for i in final["output"] if i["type"] == "function_call"]
    assert calls and final["status"] == "completed"
    for call in calls:
        assert valid(json.loads(call["arguments"]), SCHEMAS[call["name"]])
    kinds = [e["type"] for e in events]
    assert "response.function_call_arguments.delta" in kinds and "response.function_call_arguments.done" in kinds
    outputs = [{"type": "function_call_output", "call_id": c["call_id"], "output": '{"temperature": 21}'}
               for c in calls]
    after = create(engine, store, {"model": "tiny-chat", "previous_response_id": final["id"], "input": outputs,
                                   "tools": tools, "seed": 3, "max_output_tokens": 8})
    history = [{"role": "user", "content": ask},
               {"role": "assistant", "content": None, "tool_calls": [
                   {"id": c["call_id"], "type": "function",  # as transformers asks: arguments as an object
                    "function": {"name": c["name"], "arguments": json.loads(c["arguments"])}} for c in calls]},
               *({"role": "tool", "tool_call_id": c["call_id"], "content": '{"temperature": 21}'} for c in calls)]
    assert after["usage"]["input_tokens"] == len(hf_prompt_ids(history, TOOLS))
    assert after["output"] and after["previous_response_id"] == final["id"]


def test_json_schema_text_format_gives_valid_json(engine: Engine, store: MemoryResponseStore) -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
                                               "days": {"type": "integer", "minimum": 1, "maximum": 9}},
              "required": ["city", "days"], "additionalProperties": False}
    for seed in range(3):
        fmt = {"type": "json_schema", "name": "trip", "schema": schema, "strict": True}
        out = create(engine, store, {"model": "tiny-chat", "input": "Plan a trip.", "seed": seed,
                                     "max_output_tokens": 80, "text": {"format": fmt}})
        assert valid(json.loads(out["output_text"]), schema)
        assert out["text"]["format"]["name"] == "trip"


def test_max_output_tokens_ends_incomplete_with_the_reason(engine: Engine, store: MemoryResponseStore) -> None:
    final = checked(stream(engine, store, {"model": "tiny-chat", "input": "Tell me a long story.", "seed": 1,
                                           "max_output_tokens": 3}))
    assert final["status"] == "incomplete" and final["incomplete_details"] == {"reason": "max_output_tokens"}
    assert final["output"][0]["status"] == "incomplete" and final["usage"]["output_tokens"] == 3


@pytest.mark.parametrize(("body", "param"), [
    ({"background": True}, "background"),
    ({"reasoning": {"effort": "high"}}, "reasoning.effort"),
    ({"tools": [{"type": "web_search"}]}, "tools[0].type"),
    ({"tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}, {"type": "file_search"}]},
     "tools[1].type"),
    ({"include": ["message.output_text.logprobs", "reasoning.encrypted_content"]}, "include[1]"),
    ({"truncation": "auto"}, "truncation"),
    ({"conversation": "conv_1"}, "conversation"),
    ({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]}, "input[0].content[0]"),
    ({"input": [{"type": "reasoning", "summary": []}]}, "input[0].type"),
    ({"input": []}, "input"),
    ({"input": [{"role": "assistant", "content": "I am done."}]}, "input"),
    ({"text": {"format": {"type": "json_schema", "name": "x", "schema": {"type": "nonsense"}}}},
     "text.format.schema.type"),
    ({"tool_choice": {"type": "function", "name": "missing"}}, "tool_choice.name"),
    ({"max_output_tokens": 0}, "max_output_tokens"),
    ({"frequency_penalty": 1.0}, "frequency_penalty"),
])
def test_what_cannot_be_honored_is_refused_by_field(engine: Engine, store: MemoryResponseStore, body: dict,
                                                    param: str) -> None:
    with pytest.raises(InvalidInputError) as err:
        create(engine, store, {"model": "tiny-chat", "input": "hi", "max_output_tokens": 4, **body})
    assert err.value.param == param


def test_stored_responses_are_retrieved_listed_deleted_and_not_stored_when_asked(
        engine: Engine, store: MemoryResponseStore) -> None:
    items = [{"role": "user", "content": f"Say {w}."} for w in ("one", "two", "three")]
    items[1] = {"role": "developer", "content": [{"type": "input_text", "text": "Say two."}]}
    out = create(engine, store, {"model": "tiny-chat", "input": items, "max_output_tokens": 4, "seed": 0})
    newest = run_async(list_input_items(store, InputItemsRequest(response_id=out["id"], limit=2)))
    assert [i["content"][0]["text"] for i in newest.data] == ["Say three.", "Say two."] and newest.has_more
    rest = run_async(list_input_items(store, InputItemsRequest(response_id=out["id"], after=newest.last_id)))
    assert [i["content"][0]["text"] for i in rest.data] == ["Say one."] and not rest.has_more
    assert run_async(delete(store, ResponseIdRequest(response_id=out["id"]))).deleted
    for call in (retrieve, delete):
        with pytest.raises(NotFoundError):
            run_async(call(store, ResponseIdRequest(response_id=out["id"])))
    unstored = create(engine, store, {"model": "tiny-chat", "input": "hi", "max_output_tokens": 4, "store": False})
    assert unstored["store"] is False
    with pytest.raises(CsiError) as err:
        create(engine, store, {"model": "tiny-chat", "input": "hi", "previous_response_id": unstored["id"]})
    assert isinstance(err.value, NotFoundError) and err.value.param == "previous_response_id"
