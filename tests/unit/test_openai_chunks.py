"""Streamed chunks as OpenAI's API reference shows them, field by field: ``delta.role`` in the first
chunk of each choice only, ``usage: null`` on every chunk unless ``stream_options.include_usage``,
and then one more chunk with ``choices: []`` and the usage. Each chunk is read with the official
``openai`` package's own types (its pydantic models of OpenAI's API) from the JSON the worker sends.
On the scripted backend."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai.types import Completion as OpenAICompletion
from openai.types.chat import ChatCompletionChunk as OpenAIChunk

from csi.core.engine import Engine
from csi.testing import EOS, ScriptedBackend
from tests.support.aio import run_async
from tests.support.faces import chat_completion, chat_completion_stream, completion, completion_stream

VOCAB = [b"<eos>", b"Hello", b" world", b"!"]
USER = [{"role": "user", "content": "hi"}]


def engine_for(script: list[int]) -> Engine:
    engine = Engine(ScriptedBackend(VOCAB, script, context_length=256))
    run_async(engine.load(["chat"]))
    return engine


def wire(fn: Any, engine: Engine, request: dict[str, Any]) -> list[dict[str, Any]]:
    """The chunks as the page receives them (the worker sends ``model_dump_json``)."""
    async def go() -> list[dict[str, Any]]:
        return [json.loads(c.model_dump_json()) async for c in fn(engine, request)]
    return run_async(go())


def roles_by_choice(chunks: list[dict[str, Any]]) -> dict[int, list[str | None]]:
    """Each choice's ``delta.role`` in the order of its chunks (``None`` where the key is absent or null)."""
    out: dict[int, list[str | None]] = {}
    for c in chunks:
        for choice in c["choices"]:
            out.setdefault(choice["index"], []).append(choice["delta"].get("role"))
    return out


@pytest.mark.parametrize("n", [1, 3])
def test_role_is_in_the_first_chunk_of_each_choice_only_and_usage_is_null_without_include_usage(n):
    chunks = wire(chat_completion_stream, engine_for([1, 2, 3, EOS]),
                  {"messages": USER, "stream": True, "n": n, "max_tokens": 5})
    for c in chunks:
        OpenAIChunk.model_validate(c)
        assert "usage" in c and c["usage"] is None  # present, null: OpenAI's shape
        assert c["object"] == "chat.completion.chunk" and len(c["choices"]) == 1
    roles = roles_by_choice(chunks)
    assert sorted(roles) == list(range(n))
    for seq in roles.values():
        assert seq[0] == "assistant" and seq[1:] == [None] * (len(seq) - 1)
    ends = [ch for c in chunks for ch in c["choices"] if ch["finish_reason"] is not None]
    assert sorted(ch["index"] for ch in ends) == list(range(n))
    assert len({c["id"] for c in chunks}) == 1


def test_include_usage_adds_one_last_chunk_with_no_choices_and_the_usage_of_all():
    request = {"messages": USER, "stream": True, "n": 2, "max_tokens": 5, "temperature": 0}
    plain = wire(chat_completion_stream, engine_for([1, 2, 3, EOS]), request)
    counted = wire(chat_completion_stream, engine_for([1, 2, 3, EOS]),
                   {**request, "stream_options": {"include_usage": True}})
    for c in counted:
        OpenAIChunk.model_validate(c)
    *body, last = counted
    assert [[ch for ch in c["choices"]] for c in body] == [[ch for ch in c["choices"]] for c in plain]
    assert all(c["usage"] is None for c in body)
    assert last["choices"] == [] and last["id"] == body[0]["id"]
    usage = OpenAIChunk.model_validate(last).usage
    assert usage is not None
    generated = sum(1 for c in body for ch in c["choices"] if ch["delta"].get("content"))
    assert usage.completion_tokens == generated and usage.total_tokens == usage.prompt_tokens + generated
    # the whole reply (the same stream, collected) keeps its usage
    whole = run_async(chat_completion(engine_for([1, 2, 3, EOS]), {k: v for k, v in request.items() if k != "stream"}))
    assert whole.usage is not None and whole.usage.completion_tokens == usage.completion_tokens
    assert whole.usage.prompt_tokens == usage.prompt_tokens


def test_an_empty_reply_still_says_its_role_once():
    chunks = wire(chat_completion_stream, engine_for([EOS]), {"messages": USER, "stream": True})
    assert len(chunks) == 1
    only = OpenAIChunk.model_validate(chunks[0]).choices[0]
    assert only.delta.role == "assistant" and only.finish_reason == "stop" and chunks[0]["usage"] is None


def test_text_completion_chunks_carry_usage_only_in_the_include_usage_chunk():
    request = {"prompt": "x", "stream": True, "max_tokens": 5}
    plain = wire(completion_stream, engine_for([1, 2, 3, EOS]), request)
    assert all("usage" in c and c["usage"] is None for c in plain)
    # (the package's Completion is the whole one: its finish_reason is never null, as the last chunk's)
    assert OpenAICompletion.model_validate(plain[-1]).choices[0].finish_reason == "stop"
    counted = wire(completion_stream, engine_for([1, 2, 3, EOS]),
                   {**request, "stream_options": {"include_usage": True}})
    *body, last = counted
    assert all(c["usage"] is None for c in body) and last["choices"] == []
    usage = OpenAICompletion.model_validate(last).usage
    assert usage is not None and usage.completion_tokens == 3
    whole = run_async(completion(engine_for([1, 2, 3, EOS]), {"prompt": "x", "max_tokens": 5}))
    assert whole.usage is not None and whole.usage.completion_tokens == 3
