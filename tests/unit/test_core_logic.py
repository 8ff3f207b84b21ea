"""CPython unit tests of the engine's pure logic, on a scripted backend."""

from __future__ import annotations

import json

import pytest

from csi.backends.local_host import LocalHost
from csi.core.detokenize import IncrementalDecoder
from csi.core.engine import Engine
from csi.core.scope import Scope
from csi.core.stop_text import StopMatcher
from csi.errors import ContextWindowExceededError, InvalidInputError, ModelNotSupportedError, blame
from csi.faces.openai.responses import ChatCompletionChunk
from csi.runtime import build_runtime
from csi.testing import EOS, ScriptedBackend
from csi.worker.app import WorkerApp
from tests.support.aio import run_async
from tests.support.faces import chat_completion, chat_completion_stream, embeddings

VOCAB = [b"<eos>", b"Hello", b" world", b"!", b" \xe2\x82", b"\xac", b" END", b"D", b" more"]
USER = [{"role": "user", "content": "hi"}]
DEEP: dict = {"type": "object"}
for _ in range(3000):
    DEEP = {"type": "object", "properties": {"a": DEEP}}


run = run_async


def make_engine(script: list[int], context_length: int = 64, backend: ScriptedBackend | None = None) -> Engine:
    engine = Engine(backend or ScriptedBackend(VOCAB, script, context_length))
    run(engine.load(["chat"]))
    return engine


async def collect(engine: Engine, request: dict) -> list[ChatCompletionChunk]:
    return [c async for c in chat_completion_stream(engine, request)]


# ---- stop sequences and detokenization --------------------------------------------------------

def test_stop_matcher_holds_back_possible_prefix_and_cuts_at_stop():
    m = StopMatcher(["STOP"])
    assert m.push("abc ST") == "abc "
    assert m.push("O") == ""
    assert m.push("Pxyz") == ""
    assert m.stopped


def test_stop_matcher_releases_text_that_turned_out_not_to_stop():
    m = StopMatcher(["STOP", "\n\n"])
    assert m.push("a S") == "a "
    assert m.push("x\n") == "Sx"
    assert m.push("y") == "\ny"
    assert m.flush() == ""
    assert not m.stopped


def test_stop_matcher_earliest_of_several_stops_wins():
    m = StopMatcher(["world", "lo w"])
    assert m.push("hello world") == "hel"


def test_incremental_decoder_waits_for_complete_utf8():
    dec = IncrementalDecoder(lambda ids: b"".join(VOCAB[i] for i in ids).decode("utf-8", errors="replace"))
    assert dec.push(1) == "Hello"
    assert dec.push(4) == ""  # half of the euro sign
    assert dec.push(5) == " €"
    assert dec.push(2) == " world"


# ---- the generation loop through the engine -----------------------------------------------------

def test_stream_shapes_and_eos():
    backend = ScriptedBackend(VOCAB, [1, 2, 3, EOS])
    engine = make_engine([], backend=backend)
    chunks = run(collect(engine, {"messages": USER, "stream": True, "temperature": 0}))
    texts = [c.choices[0].delta.content for c in chunks[:-1]]
    assert texts == ["Hello", " world", "!"]
    # OpenAI's: the role in the first chunk only, no usage without stream_options.include_usage
    assert [c.choices[0].delta.role for c in chunks] == ["assistant", None, None, None]
    last = chunks[-1]
    assert last.choices[0].finish_reason == "stop" and last.choices[0].delta.content is None
    assert all(c.usage is None for c in chunks)
    assert len({c.id for c in chunks}) == 1
    assert backend.sampling is not None and backend.sampling.temperature == 0
    # prefill once with the whole prompt, then one token per step
    fed = backend.fed
    assert len(fed[0]) > 1 and [len(f) for f in fed[1:]] == [1, 1, 1]


def test_include_usage_adds_a_final_chunk_without_choices():
    engine = make_engine([1, 2, EOS])
    chunks = run(collect(engine, {"messages": USER, "stream": True, "stream_options": {"include_usage": True}}))
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens == chunks[-1].usage.prompt_tokens + 2
    assert chunks[-2].choices[0].finish_reason == "stop" and chunks[-2].usage is None


def test_max_tokens_gives_length_and_multibyte_is_never_split():
    engine = make_engine([4, 5, 4, 5, 4, 5])
    reply = run(chat_completion(engine, {"messages": USER, "max_tokens": 3}))
    assert reply.choices[0].finish_reason == "length"
    assert reply.usage.completion_tokens == 3
    # the third token is half a character: it is released, as decoded, only when generation ends
    assert reply.choices[0].message.content == " € \ufffd"


def test_ignore_eos_runs_to_max_tokens():
    engine = make_engine([1, EOS, 2, EOS, 3])
    reply = run(chat_completion(engine, {"messages": USER, "max_tokens": 5, "ignore_eos": True}))
    assert reply.choices[0].finish_reason == "length" and reply.usage.completion_tokens == 5


def test_stop_sequence_across_tokens_is_cut_and_reported_as_stop():
    engine = make_engine([1, 6, 7, 8, 8, 8])
    chunks = run(collect(engine, {"messages": USER, "stream": True, "stop": ["ENDD"]}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert text == "Hello "
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_non_streaming_equals_collected_stream_and_token_ids_cover_every_token():
    engine = make_engine([1, 2, 4, 5, 3, EOS])
    req = {"messages": USER, "return_token_ids": True}
    reply = run(chat_completion(engine, req))
    chunks = run(collect(engine, {**req, "stream": True}))
    assert reply.choices[0].message.content == "".join(c.choices[0].delta.content or "" for c in chunks)
    assert reply.choices[0].token_ids == [1, 2, 4, 5, 3]
    assert sum((c.choices[0].token_ids for c in chunks), []) == [1, 2, 4, 5, 3]
    assert chunks[-1].prompt_token_ids == reply.prompt_token_ids and reply.prompt_token_ids


def test_context_window_is_checked_and_generation_clamped_to_it():
    engine = make_engine([1] * 100, context_length=12)
    with pytest.raises(ContextWindowExceededError) as err:
        run(chat_completion(engine, {"messages": [{"role": "user", "content": "x" * 20}]}))
    assert "22" in err.value.message and "12" in err.value.message
    reply = run(chat_completion(engine, {"messages": USER, "max_tokens": 100}))
    assert reply.choices[0].finish_reason == "length" and reply.usage.total_tokens == 12


def test_interrupt_and_cancel_end_with_abort_and_free_the_model():
    engine = make_engine([1] * 1000, context_length=4096)

    async def scenario():
        got = []
        async for c in chat_completion_stream(engine, {"messages": USER, "stream": True}, Scope("req-1")):
            got.append(c)
            if len(got) == 3:
                engine.abort("req-1")
        after = await chat_completion(engine, {"messages": USER, "max_tokens": 2})
        return got, after

    got, after = run(scenario())
    assert got[-1].choices[0].finish_reason == "abort" and len(got) == 4
    assert after.choices[0].finish_reason == "length"


# ---- validation ---------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("request_", "param"),
    [
        ({}, "messages"),
        ({"messages": []}, "messages"),
        ({"messages": USER, "max_tokens": -1}, "max_tokens"),
        ({"messages": [{"role": "user", "content": 42}]}, "messages[0].content"),
        ({"messages": [{"role": "user", "content": [{"type": "text", "text": 1}]}]}, "messages[0].content[0].text"),
        ({"messages": [{"role": "robot", "content": "x"}]}, "messages[0]"),
        ({"messages": USER, "temperature": 3}, "temperature"),
        ({"messages": USER, "top_p": 0}, "top_p"),
        ({"messages": USER, "bogus": 1}, "bogus"),
        ({"messages": USER, "stream_options": {"include_usage": True}}, "stream_options"),
        ({"messages": [{"role": "assistant", "content": "x"}]}, "messages"),
        ({"messages": USER, "logit_bias": {"99999": 1}}, "logit_bias"),
        ({"messages": USER, "logit_bias": {"abc": 1}}, "logit_bias"),
        ({"messages": USER, "logit_bias": {"3": 101}}, "logit_bias.3"),
        ({"messages": USER, "n": 0}, "n"),
        ({"messages": USER, "top_logprobs": 3}, "top_logprobs"),
        ({"messages": USER, "logprobs": True, "top_logprobs": 21}, "top_logprobs"),
        ({"messages": USER, "frequency_penalty": 2.5}, "frequency_penalty"),
        ({"messages": USER, "presence_penalty": -3}, "presence_penalty"),
        ({"messages": USER, "repetition_penalty": 0}, "repetition_penalty"),
        ({"messages": USER, "tools": [{"type": "function"}]}, "tools[0].function"),
        ({"messages": USER, "tools": [{"type": "function", "function": {"name": "a b"}}]}, "tools[0].function.name"),
        ({"messages": USER, "tool_choice": "required"}, "tool_choice"),
        ({"messages": USER, "response_format": {"type": "json_schema"}}, "response_format.json_schema"),
        ({"messages": USER, "response_format": {"type": "xml"}}, "response_format.type"),
        ({"messages": USER, "response_format": {"type": "json_object", "schema": "{"}}, "response_format.schema"),
        ({"messages": USER, "response_format": {"type": "json_schema",
                                                "json_schema": {"name": "deep", "schema": DEEP}}},
         "response_format.json_schema.schema"),
        ({"messages": USER, "stop": 5}, "stop"),
    ],
)
def test_bad_requests_raise_typed_errors_naming_the_field(request_, param):
    engine = make_engine([1, EOS])
    with pytest.raises(InvalidInputError) as err:
        run(chat_completion(engine, request_))
    assert err.value.param == param
    assert err.value.message
    assert run(chat_completion(engine, {"messages": USER})).choices[0].message.content == "Hello"


def test_unknown_model_is_model_not_supported():
    engine = make_engine([1, EOS])
    with pytest.raises(ModelNotSupportedError) as err:
        run(chat_completion(engine, {"messages": USER, "model": "nope"}))
    assert err.value.param == "model" and "nope" in err.value.message


def test_embeddings_request_validation_and_shape():
    engine = Engine(ScriptedBackend(VOCAB, [EOS]))
    run(engine.load(["chat", "embed-model"]))
    out = run(embeddings(engine, {"input": ["a", "bc"]})).model_dump()
    assert [d["index"] for d in out["data"]] == [0, 1] and out["usage"]["prompt_tokens"] == 3
    for bad, param in [({"input": 3}, "input"), ({"input": []}, "input"),
                       ({"input": "x", "model": "chat"}, "model")]:
        with pytest.raises((InvalidInputError, ModelNotSupportedError)) as err:
            run(embeddings(engine, bad))
        assert err.value.param == param


# ---- the worker message protocol ---------------------------------------------------------------

def test_worker_app_pushes_chunks_then_one_result_and_reports_errors():
    runtime = build_runtime(ScriptedBackend(VOCAB, [1, 2, EOS]), LocalHost())
    run(runtime.engine.load(["chat"]))
    sent: list[dict] = []
    app = WorkerApp(runtime, lambda s: sent.append(json.loads(s)))
    run(app.serve(json.dumps({"id": "a", "type": "chat", "request": {"messages": USER, "stream": True}})))
    assert [m["type"] for m in sent] == ["accepted", "chunk", "chunk", "chunk", "result"]
    assert all(m["id"] == "a" for m in sent) and sent[-1]["result"] is None
    sent.clear()
    run(app.serve(json.dumps({"id": "b", "type": "chat", "request": {"messages": USER, "max_tokens": 0}})))
    # a request its model refuses is answered at once, never accepted
    assert sent == [{"id": "b", "type": "error", "error": {
        "name": "InvalidInputError", "param": "max_tokens", "message": sent[0]["error"]["message"]}}]
    sent.clear()
    run(app.serve(json.dumps({"id": "c", "type": "teleport"})))
    assert sent[0]["error"]["name"] == "InvalidInputError" and sent[0]["error"]["param"] == "type"


# ---- field paths --------------------------------------------------------------------------------

def test_blame_nests_renames_and_limits_to_kinds_of_error():
    with pytest.raises(InvalidInputError) as err, blame("requests[2]"), blame("params"):
        raise InvalidInputError("`overlap` (3) must be less than `max_tokens` (2)", "overlap")
    assert err.value.param == "requests[2].params.overlap"
    assert err.value.message == "`requests[2].params.overlap` (3) must be less than `max_tokens` (2)"
    with pytest.raises(ContextWindowExceededError) as err, blame("prompts[1]", prompt=""):
        raise ContextWindowExceededError("too long", "prompt")
    assert err.value.param == "prompts[1]"
    with pytest.raises(InvalidInputError) as err, blame("requests"):
        raise InvalidInputError("no such document", "[3].name")
    assert err.value.param == "requests[3].name"
    with pytest.raises(ModelNotSupportedError) as err, blame("input", only=(InvalidInputError,)):
        raise ModelNotSupportedError("not loaded", None)
    assert err.value.param is None


def test_engine_errors_name_generation_request_fields_and_faces_place_them():
    from tests.support.faces import inference
    chat, complete = inference.chat, inference.complete

    engine = make_engine([1, EOS], context_length=8)
    with pytest.raises(ContextWindowExceededError) as err:
        run(complete(engine, [{"model": "chat", "prompt": "x", "params": {}},
                              {"model": "chat", "prompt": "x" * 20, "params": {}}]))
    assert err.value.param == "requests[1].prompt"
    with pytest.raises(ContextWindowExceededError) as err:
        run(chat(engine, [{"model": "chat", "messages": [{"role": "user", "content": "x" * 20}], "params": {}}]))
    assert err.value.param == "requests[0].messages"
    with pytest.raises(ModelNotSupportedError) as err:
        run(complete(engine, [{"model": "nope", "prompt": "x", "params": {}}]))
    assert err.value.param == "requests[0].model"


def test_legacy_completion_logprobs_whole_equal_the_streamed_ones():
    from tests.support.faces import completion, completion_stream

    # " \xe2\x82" + "\xac" is one character split over two tokens: offsets follow the delta text
    request = {"prompt": "ab", "echo": True, "logprobs": 2, "max_tokens": 6, "temperature": 0}
    whole = run(completion(make_engine([1, 4, 5, 2, 8, 3]), request)).choices[0].logprobs

    async def streamed() -> list:
        return [c async for c in completion_stream(make_engine([1, 4, 5, 2, 8, 3]), {**request, "stream": True})]

    parts = [c.choices[0].logprobs for c in run(streamed()) if c.choices and c.choices[0].logprobs]
    assert whole.tokens == [t for p in parts for t in p.tokens] and len(whole.tokens) == 6
    assert whole.text_offset == [o for p in parts for o in p.text_offset]
    assert whole.text_offset[0] == 2
