"""OpenAI to the letter on the real SmolLM2-135M-Instruct (CPython): a reply that calls a tool and
then writes the same call again, cut short by ``max_tokens``, ends with ``finish_reason:
"tool_calls"`` (clients run tools only then), streamed or whole, and its stream is OpenAI's chunk
sequence. References: the HF tokenizer's text of the reply's tokens (that the rest is a repeat), and
the official ``openai`` package's types of the chunks."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai.types.chat import ChatCompletionChunk as OpenAIChunk

from csi.backends.cpython import CPythonBackend
from csi.core.engine import Engine
from tests.cpython.test_structured import ASK, TOOLS
from tests.support.aio import run_async
from tests.support.faces import chat_completion, chat_completion_stream
from tests.support.paths import MODELS
from tests.support.smollm2_reference import MODEL, hf_tokenizer

# seed 3 at temperature 1 writes get_weather(Paris) twice (found by trying seeds); ignore_eos lets it go on
REQUEST = {"model": MODEL, "messages": ASK, "tools": TOOLS, "tool_choice": "required", "temperature": 1, "seed": 3,
           "ignore_eos": True, "return_token_ids": True}


@pytest.fixture(scope="module")
def engine() -> Engine:
    eng = Engine(CPythonBackend(MODELS))
    run_async(eng.load([MODEL]))
    return eng


@pytest.fixture(scope="module")
def repeat(engine: Engine) -> tuple[str, int, int]:
    """The call as the model wrote it, the tokens up to the start of its repeat, and the whole reply's tokens."""
    ids = run_async(chat_completion(engine, {**REQUEST, "max_tokens": 200})).choices[0].token_ids
    assert ids is not None
    tok = hf_tokenizer()
    text = tok.decode(ids)
    first, sep, again = text.partition("\n<tool_call>")
    assert sep and first.startswith("<tool_call>") and "<tool_call>" + again == first, text  # the same call, twice
    start = next(k for k in range(len(ids)) if len(tok.decode(ids[:k])) > len(first) + 1)
    return first, start, len(ids)


def arguments(first: str) -> tuple[str, Any]:
    call = json.loads(first.removeprefix("<tool_call>").removesuffix("</tool_call>"))
    return call["name"], call["arguments"]


def test_the_repeat_cut_at_its_start_middle_or_end_leaves_the_call_and_finish_reason_tool_calls(engine, repeat):
    first, start, whole = repeat
    for max_tokens in sorted({start, (start + whole) // 2, whole - 1}):
        reply = run_async(chat_completion(engine, {**REQUEST, "max_tokens": max_tokens}))
        choice = reply.choices[0]
        assert choice.finish_reason == "tool_calls", max_tokens
        assert [(c.function.name, json.loads(c.function.arguments)) for c in choice.message.tool_calls or []] == \
            [arguments(first)] and choice.message.content is None
        assert reply.usage is not None and reply.usage.completion_tokens == max_tokens
    # the call whole and nothing after it but a newline: no repeat was cut, the tokens ran out
    cut = run_async(chat_completion(engine, {**REQUEST, "max_tokens": start - 1}))
    assert cut.choices[0].finish_reason == "length"


def test_its_stream_is_openais_chunk_sequence(engine, repeat):
    first, start, whole = repeat
    request = {**REQUEST, "max_tokens": (start + whole) // 2, "stream": True,
               "stream_options": {"include_usage": True}}

    async def go() -> list[dict[str, Any]]:
        return [json.loads(c.model_dump_json()) async for c in chat_completion_stream(engine, request)]
    chunks = run_async(go())
    parsed = [OpenAIChunk.model_validate(c) for c in chunks]
    *body, last = parsed
    assert [c.choices[0].delta.role for c in body] == ["assistant"] + [None] * (len(body) - 1)
    assert all(c.usage is None for c in body) and all(c["usage"] is None for c in chunks[:-1])
    assert body[-1].choices[0].finish_reason == "tool_calls"
    assert last.choices == [] and last.usage is not None and last.usage.completion_tokens == (start + whole) // 2
    name, args = "", ""
    for c in body:
        for d in c.choices[0].delta.tool_calls or []:
            assert d.index == 0 and d.function is not None
            name += d.function.name or ""
            args += d.function.arguments or ""
    assert (name, json.loads(args)) == arguments(first)
