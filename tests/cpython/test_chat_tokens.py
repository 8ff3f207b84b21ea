"""The ``chat_tokens`` route (what the Prompt API facade counts and prompts with): a conversation's
ids equal HF transformers' ``apply_chat_template`` of the same messages (tiny-chat's tokenizer,
loaded independently), a prefix's tokens follow the generation prompt, and a conversation longer
than the window comes back without ids and with a count past the window."""

from __future__ import annotations

import pytest

from csi.backends.cpython import CPythonBackend
from csi.core.engine import Engine
from csi.errors import InvalidInputError
from csi.faces.chat_tokens import ChatTokensRequest, chat_tokens
from csi.wire import parse_request
from tests.support.aio import run_async
from tests.support.paths import MODELS
from tests.support.reference import hf_chat, hf_prompt_ids

CONVERSATION = [
    {"role": "system", "content": "Predict emojis."},
    {"role": "user", "content": "This is amazing!"},
    {"role": "assistant", "content": "wow"},
    {"role": "user", "content": "LGTM"},
]


@pytest.fixture(scope="module")
def engine() -> Engine:
    eng = Engine(CPythonBackend(MODELS))
    run_async(eng.load(["tiny-chat"]))
    return eng


def tokens(engine: Engine, body: dict) -> dict:
    req = parse_request(ChatTokensRequest, body)
    return run_async(chat_tokens(engine, req)).model_dump()


def test_a_conversation_renders_as_hugging_face_renders_it(engine: Engine) -> None:
    out = tokens(engine, {"messages": CONVERSATION})
    assert out["token_ids"] == hf_prompt_ids(CONVERSATION)
    assert out["count"] == len(out["token_ids"])
    assert out["model"] == "tiny-chat"
    assert out["context_window"] == 1024


def test_a_conversation_may_end_with_an_assistant_turn(engine: Engine) -> None:
    ending = CONVERSATION[:3]
    assert tokens(engine, {"messages": ending})["token_ids"] == hf_prompt_ids(ending)


def test_a_prefix_adds_its_own_tokens_after_the_generation_prompt(engine: Engine) -> None:
    tok, _ = hf_chat()
    out = tokens(engine, {"messages": CONVERSATION, "prefix": "```toml\n"})
    assert out["token_ids"] == hf_prompt_ids(CONVERSATION) + tok.encode("```toml\n", add_special_tokens=False)


def test_a_conversation_past_the_window_has_no_ids_and_counts_past_it(engine: Engine) -> None:
    long = [{"role": "user", "content": "word " * 1500}]
    out = tokens(engine, {"messages": long})
    assert out["token_ids"] is None
    assert out["count"] == len(hf_prompt_ids(long)) > out["context_window"]


WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "The weather in a city.",
                                            "parameters": {"type": "object", "required": ["city"],
                                                           "properties": {"city": {"type": "string"}}}}}


def test_tools_calls_and_results_render_as_hugging_face_renders_them(engine: Engine) -> None:
    """A session with tools (the facade's): the declarations, an assistant's call and the tool's
    result, as HF's template renders the OpenAI shapes of the same conversation."""
    turns = [{"role": "user", "content": "Weather in Oslo?"},
             {"role": "assistant", "content": "", "tool_calls": [
                 {"id": "call_1", "name": "get_weather", "arguments": '{"city": "Oslo"}'}]},
             {"role": "tool", "content": '{"celsius": 7}', "tool_call_id": "call_1"}]
    hf = [turns[0], {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}]},
          turns[2]]
    out = tokens(engine, {"messages": turns, "tools": [WEATHER]})
    assert out["token_ids"] == hf_prompt_ids(hf, tools=[WEATHER])
    bare = tokens(engine, {"messages": turns[:1]})["count"]
    assert tokens(engine, {"messages": turns[:1], "tools": [WEATHER]})["count"] > bare


def test_roles_other_than_the_prompt_apis_are_refused_by_field(engine: Engine) -> None:
    with pytest.raises(InvalidInputError) as caught:
        tokens(engine, {"messages": [{"role": "developer", "content": "x"}]})
    assert caught.value.param is not None and caught.value.param.startswith("messages[0]")
    bad = {**WEATHER, "function": {**WEATHER["function"], "parameters": {"type": "object", "not": {}}}}
    with pytest.raises(InvalidInputError) as caught:
        tokens(engine, {"messages": [{"role": "user", "content": "x"}], "tools": [bad]})
    assert caught.value.param is not None and caught.value.param.startswith("tools[0]")
