"""Models on an OpenAI-compatible server, through every face, against a real llama.cpp server
(llama-cpp-python serving the GGUF the built-in SmolLM2 is made from). The reference for what a
face answers is the same server asked directly over HTTP (``requests``), not csi-web."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from csi.backends.cpython import CPythonBackend
from csi.core.engine import Engine
from csi.core.scope import Scope
from csi.errors import (
    ContextWindowExceededError,
    InvalidInputError,
    ServerTimeoutError,
    ServerUnavailableError,
)
from csi.faces.openai import serving
from csi.faces.openai.protocol import ChatCompletionRequest
from csi.faces.openai.responses_api.protocol import ResponseCreateRequest
from csi.faces.openai.responses_api.serving import create_response
from csi.faces.openai.responses_api.store import MemoryResponseStore
from csi.servers import ServerPlacement
from csi.servers.asyncio_http import AsyncioHttp
from csi.worker.remotes import set_remotes
from csi.worker.requests import RemotesRequest
from tests.support.aio import run_async
from tests.support.faces import chat_completion, completion, embeddings, inference, remote_llm, spin
from tests.support.llama_server import LlamaServer
from tests.support.paths import MODELS
from tests.support.responses import checked

ASK = [{"role": "user", "content": "What is the capital of France?"}]


def configure(engine: Engine, remotes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return run_async(set_remotes(engine, RemotesRequest.model_validate({"remotes": remotes})))


@pytest.fixture(scope="module")
def engine(llama_server: LlamaServer) -> Engine:
    eng = Engine(CPythonBackend(MODELS), ServerPlacement(AsyncioHttp()))
    configure(eng, [{"base_url": llama_server.url + "/v1", "models": [
        {"id": "smollm2-remote", "server_model": llama_server.model}]}])
    run_async(eng.load(["smollm2-remote", "tiny-chat"]))
    return eng



def test_a_response_is_the_servers_chat_answer_streamed_as_responses_events(engine, llama_server):
    """llama.cpp's server has no /v1/responses: the Responses API reaches it through chat completions."""
    body = {"messages": [{"role": "system", "content": "Be brief."}, *ASK], "max_tokens": 16, "temperature": 0}
    theirs = llama_server.ask("chat/completions", body)
    req = ResponseCreateRequest.model_validate({"model": "smollm2-remote", "instructions": "Be brief.",
                                                "input": ASK[0]["content"], "max_output_tokens": 16,
                                                "temperature": 0, "stream": True})

    async def events() -> list[dict[str, Any]]:
        stream = await create_response(engine, MemoryResponseStore(), req)
        return [json.loads(e.model_dump_json()) async for e in stream]  # type: ignore[union-attr]

    final = checked(run_async(events()))
    assert final["output_text"] == theirs["choices"][0]["message"]["content"]
    assert final["status"] == "incomplete" and final["incomplete_details"] == {"reason": "max_output_tokens"}
    assert final["usage"]["output_tokens"] == theirs["usage"]["completion_tokens"]


def test_chat_is_the_servers_answer_with_usage_saying_who_served_it(engine, llama_server):
    body = {"messages": ASK, "max_tokens": 16, "temperature": 0}
    ours = run_async(chat_completion(engine, {"model": "smollm2-remote", **body})).model_dump(mode="json")
    theirs = llama_server.ask("chat/completions", body)
    assert ours["model"] == "smollm2-remote"
    assert ours["choices"][0]["message"]["content"] == theirs["choices"][0]["message"]["content"]
    assert ours["choices"][0]["finish_reason"] == theirs["choices"][0]["finish_reason"] == "length"
    extra = ours["usage"]["extra"]
    assert extra["served_by"] == "remote" and extra["server"] == llama_server.url + "/v1"
    assert ours["usage"]["completion_tokens"] == 16
    local = run_async(chat_completion(engine, {"model": "tiny-chat", **body})).model_dump(mode="json")
    assert local["usage"]["extra"]["served_by"] == "local" and "server" not in local["usage"]["extra"]


def test_the_stream_assembles_to_the_servers_answer_with_logprobs(engine, llama_server):
    body = {"messages": ASK, "max_tokens": 12, "temperature": 0, "logprobs": True, "top_logprobs": 2}

    async def collect() -> list[Any]:
        req = ChatCompletionRequest.model_validate({"model": "smollm2-remote", "stream": True,
                                                    "stream_options": {"include_usage": True}, **body})
        return [c.model_dump(mode="json") async for c in await serving.create_chat_completion(engine, req)]

    chunks = run_async(collect())
    theirs = llama_server.ask("chat/completions", body)["choices"][0]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text == theirs["message"]["content"]
    ours_lp = [t for c in chunks if c["choices"] and c["choices"][0].get("logprobs")
               for t in c["choices"][0]["logprobs"]["content"]]
    assert [t["token"] for t in ours_lp] == [t["token"] for t in theirs["logprobs"]["content"]]
    assert [t["logprob"] for t in ours_lp] == pytest.approx([t["logprob"] for t in theirs["logprobs"]["content"]])
    assert all(len(t["top_logprobs"]) == 2 and bytes(t["bytes"]).decode() == t["token"] for t in ours_lp)
    assert chunks[-2]["choices"][0]["finish_reason"] == "length" and chunks[-1]["choices"] == []
    assert chunks[-1]["usage"]["extra"]["served_by"] == "remote"


def test_text_completions_and_their_logprobs_are_the_servers(engine, llama_server):
    body = {"prompt": "The capital of France is", "max_tokens": 6, "temperature": 0, "logprobs": 2}
    ours = run_async(completion(engine, {"model": "smollm2-remote", **body})).model_dump(mode="json")
    theirs = llama_server.ask("completions", body)["choices"][0]
    assert ours["choices"][0]["text"] == theirs["text"]
    assert ours["choices"][0]["logprobs"]["tokens"] == theirs["logprobs"]["tokens"]
    assert ours["choices"][0]["logprobs"]["token_logprobs"] == pytest.approx(theirs["logprobs"]["token_logprobs"])


def test_embeddings_are_the_servers_token_vectors_pooled(engine, llama_server):
    ours = run_async(embeddings(engine, {"model": "smollm2-remote", "input": ["hello world", "Paris"]}))
    theirs = llama_server.ask("embeddings", {"input": ["hello world", "Paris"]})["data"]
    for mine, row in zip(ours.data, sorted(theirs, key=lambda d: d["index"]), strict=True):
        tokens = row["embedding"] if isinstance(row["embedding"][0], list) else [row["embedding"]]
        mean = [sum(col) / len(tokens) for col in zip(*tokens, strict=True)]
        norm = sum(x * x for x in mean) ** 0.5
        expected = mean if not isinstance(row["embedding"][0], list) else [x / norm for x in mean]
        assert mine.embedding == pytest.approx(expected, rel=1e-5, abs=1e-6)
    assert len(ours.data[0].embedding) == 576


def test_csi_spin_and_remote_llm_faces_are_served_by_the_server(engine, llama_server):
    prompt = "<|im_start|>user\nName a primary colour.<|im_end|>\n<|im_start|>assistant\n"
    theirs = llama_server.ask("completions", {"prompt": prompt, "max_tokens": 10, "temperature": 0})
    expected = theirs["choices"][0]["text"]
    [done] = run_async(inference.complete(engine, [{"model": "smollm2-remote", "prompt": prompt, "params": {
        "max_tokens": 10, "temperature": 0.0, "logprobs": {"top": 2}}}]))
    assert done["text"] == expected and done["finish_reason"] == "length"
    assert len(done["logprobs"]) == 10 and all(len(d["top"]) == 2 for d in done["logprobs"])
    assert bytes(b for d in done["logprobs"] for b in d["sampled"]["token"]).decode() == expected
    [said] = run_async(inference.chat(engine, [{"model": "smollm2-remote", "messages": ASK,
                                                "params": {"max_tokens": 8, "temperature": 0.0}}]))
    reference = llama_server.ask("chat/completions", {"messages": ASK, "max_tokens": 8, "temperature": 0})
    assert said["message"]["content"] == reference["choices"][0]["message"]["content"]
    infer = run_async(spin.infer(engine, {"model": "smollm2-remote", "prompt": prompt, "params": {
        "max_tokens": 10, "temperature": 0.0, "repeat_penalty": 1.0}}))
    assert infer["text"] == expected and infer["usage"]["generated_token_count"] == 10
    # RemoteLLM serves the one chat model loaded
    only_remote = Engine(CPythonBackend(MODELS), ServerPlacement(AsyncioHttp()))
    configure(only_remote, [{"base_url": llama_server.url + "/v1", "models": [
        {"id": "smollm2-remote", "server_model": llama_server.model}]}])
    run_async(only_remote.load(["smollm2-remote"]))
    generated = run_async(remote_llm.generate(only_remote, {"prompts": [prompt], "stop": ["\n"]}))
    greedy = llama_server.ask("completions", {"prompt": prompt, "temperature": 0, "stop": ["\n"],
                                                  "max_tokens": 200})
    assert generated["generations"][0]["generations"][0]["text"] == greedy["choices"][0]["text"]


def test_aborting_a_stream_cancels_the_servers_request(engine, llama_server):
    since = llama_server.mark()

    async def run() -> list[Any]:
        req = ChatCompletionRequest.model_validate({"model": "smollm2-remote", "stream": True, "messages": [
            {"role": "user", "content": "Write a long story about a dragon."}], "max_tokens": 1500})
        out = []
        async for chunk in await serving.create_chat_completion(engine, req, Scope(request_id="cut-me")):
            out.append(chunk.model_dump(mode="json"))
            if len(out) == 3:
                engine.abort("cut-me")
        return out

    chunks = run_async(run())
    assert chunks[-1]["choices"][0]["finish_reason"] == "abort"
    assert len(chunks) < 30
    llama_server.wait_for_disconnect(since)


def test_a_server_that_is_down_is_a_typed_error_and_local_models_serve_on(llama_server_down):
    eng = Engine(CPythonBackend(MODELS), ServerPlacement(AsyncioHttp()))
    configure(eng, [{"base_url": llama_server_down + "/v1", "models": ["gone"]}])
    run_async(eng.load(["gone", "tiny-chat"]))
    for call in (lambda: chat_completion(eng, {"model": "gone", "messages": ASK}),
                 lambda: inference.complete(eng, [{"model": "gone", "prompt": "Hi", "params": {}}])):
        with pytest.raises(ServerUnavailableError) as err:
            run_async(call())
        assert llama_server_down in err.value.message
    reply = run_async(chat_completion(eng, {"model": "tiny-chat", "messages": ASK, "max_tokens": 4}))
    assert reply.choices[0].finish_reason in ("length", "stop")


def test_the_servers_refusals_keep_its_message(engine):
    long = [{"role": "user", "content": "word " * 3000}]
    with pytest.raises(ContextWindowExceededError) as err:
        run_async(chat_completion(engine, {"model": "smollm2-remote", "messages": long}))
    assert "context" in err.value.message.lower() and "127.0.0.1" in err.value.message
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    for body, param in (({"return_token_ids": True}, "return_token_ids"),
                        ({"response_format": {"type": "regex", "pattern": "a+"}}, "response_format.type"),
                        # llama-cpp-python refuses OpenAI's json_schema (with a 500 naming the field)
                        ({"response_format": {"type": "json_schema", "json_schema": {"name": "c", "schema": schema}}},
                         "response_format.type")):
        with pytest.raises(InvalidInputError) as bad:
            run_async(chat_completion(engine, {"model": "smollm2-remote", "messages": ASK, **body}))
        assert bad.value.param == param


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A server that takes connections and never answers."""
    sock = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        sock.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(sock.accept()[0])
            except OSError:
                pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    stop.set()
    thread.join()
    for s in held:
        s.close()
    sock.close()


def test_a_server_that_never_answers_times_out(silent_server):
    eng = Engine(CPythonBackend(MODELS), ServerPlacement(AsyncioHttp()))
    configure(eng, [{"base_url": silent_server, "timeout_s": 0.5, "models": ["mute"]}])
    run_async(eng.load(["mute"]))
    with pytest.raises(ServerTimeoutError) as err:
        run_async(chat_completion(eng, {"model": "mute", "messages": ASK}))
    assert "0.5 s" in err.value.message


def test_prefer_local_loads_here_and_falls_back_to_the_server_when_the_local_load_fails(llama_server):
    eng = Engine(CPythonBackend(MODELS), ServerPlacement(AsyncioHttp()))
    base = llama_server.url + "/v1"
    configure(eng, [{"base_url": base, "models": [
        {"id": "tiny-chat", "policy": "prefer-local", "server_model": llama_server.model},
        {"id": "no-such-local-model", "policy": "prefer-local", "server_model": llama_server.model}]}])
    [here] = run_async(eng.load(["tiny-chat"]))
    assert here.remote is None
    [there] = run_async(eng.load(["no-such-local-model"]))
    assert there.remote == base and there.fallback and "ModelLoadError" in there.fallback
    reply = run_async(chat_completion(eng, {"model": "no-such-local-model", "messages": ASK, "max_tokens": 4}))
    assert reply.usage.extra.served_by == "remote"


def test_old_functions_through_the_server_answer_with_function_call(engine, llama_server):
    functions = [{"name": "get_weather", "description": "The weather in a city",
                  "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                 "required": ["city"]}}]
    body = {"model": "smollm2-remote", "messages": [{"role": "user", "content": "Weather in Paris?"}],
            "functions": functions, "function_call": {"name": "get_weather"}, "max_tokens": 60, "temperature": 0}
    reply = run_async(chat_completion(engine, body)).model_dump(mode="json", exclude_none=True)
    choice = reply["choices"][0]
    assert "tool_calls" not in choice["message"]
    assert choice["message"]["function_call"]["name"] == "get_weather"
    assert isinstance(json.loads(choice["message"]["function_call"]["arguments"]), dict)
    assert choice["finish_reason"] in ("function_call", "stop")


def test_set_remotes_refuses_by_field():
    eng = Engine(CPythonBackend(MODELS), ServerPlacement(AsyncioHttp()))
    cases = [([{"base_url": "ftp://x", "models": ["a"]}], "remotes[0].base_url"),
             ([{"base_url": "http://127.0.0.1:1/v1", "models": ["a", "a"]}], "remotes[0].models[1]"),
             ([{"base_url": "http://127.0.0.1:1/v1", "models": ["../x"]}], "remotes[0].models[0]")]
    for remotes, param in cases:
        with pytest.raises(InvalidInputError) as err:
            configure(eng, remotes)
        assert err.value.param == param
    assert asyncio.iscoroutinefunction(set_remotes)


def test_a_pharia_skill_chats_and_streams_with_a_model_on_the_server(llama_server):
    from pharia_skill import ChatParams, Message  # noqa: PLC0415

    from csi.local import local_csi  # noqa: PLC0415
    from csi.servers import Endpoint, ServerModel  # noqa: PLC0415
    from tests.support.paths import DIST  # noqa: PLC0415

    remote = ServerModel("llama-3.1-8b-instruct", Endpoint(llama_server.url + "/v1"), llama_server.model)
    with local_csi(DIST, ["llama-3.1-8b-instruct"], remotes=[remote]) as csi:
        params = ChatParams(max_tokens=12, temperature=0.0, logprobs="sampled")
        messages = [Message.user("What is the capital of France?")]
        whole = csi.chat("llama-3.1-8b-instruct", messages, params)
        with csi.chat_stream("llama-3.1-8b-instruct", messages, params) as response:
            appends = list(response.stream())
            finish = response.finish_reason()
    reference = llama_server.ask("chat/completions", {"messages": ASK, "max_tokens": 12, "temperature": 0})
    assert whole.message.content == reference["choices"][0]["message"]["content"]
    assert "".join(a.content for a in appends) == whole.message.content
    assert finish == whole.finish_reason and len(whole.logprobs) == 12


def test_n_choices_are_one_server_request_each_with_the_seed_counting_up(engine, llama_server):
    body = {"messages": ASK, "max_tokens": 10, "temperature": 1.0, "seed": 5}
    ours = run_async(chat_completion(engine, {"model": "smollm2-remote", "n": 2, **body}))
    first = llama_server.ask("chat/completions", body)["choices"][0]["message"]["content"]
    second = llama_server.ask("chat/completions", {**body, "seed": 6})["choices"][0]["message"]["content"]
    assert [c.message.content for c in ours.choices] == [first, second] and first != second
    assert [c.index for c in ours.choices] == [0, 1] and ours.usage.completion_tokens == 20


def test_a_json_schema_through_llama_cpps_own_format_is_kept(engine):
    import jsonschema  # noqa: PLC0415

    schema = {"type": "object", "properties": {"city": {"type": "string"}, "people": {"type": "integer"}},
              "required": ["city", "people"]}
    reply = run_async(chat_completion(engine, {"model": "smollm2-remote", "messages": ASK, "max_tokens": 40,
                                               "temperature": 0,
                                               "response_format": {"type": "json_object", "schema": schema}}))
    jsonschema.validate(json.loads(reply.choices[0].message.content or ""), schema)


def test_what_needs_the_models_tokenizer_or_insides_is_refused_for_a_model_on_a_server(llama_server):
    from csi.backends.local_host import LocalHost  # noqa: PLC0415
    from csi.errors import ModelNotSupportedError, NotSupportedError  # noqa: PLC0415
    from csi.runtime import build_runtime  # noqa: PLC0415
    from tests.support.faces import index as index_face  # noqa: PLC0415
    from tests.support.faces import text  # noqa: PLC0415
    from tests.support.paths import DIST  # noqa: PLC0415

    rt = build_runtime(CPythonBackend(MODELS), LocalHost(DIST / "lang"), http=AsyncioHttp())
    configure(rt.engine, [{"base_url": llama_server.url + "/v1", "models": ["on-server"]}])
    run_async(rt.engine.load(["on-server"]))
    with pytest.raises(ModelNotSupportedError) as chunking:
        run_async(text.chunk(rt.text, [{"text": "a b c", "params": {"model": "on-server", "max_tokens": 4}}]))
    assert chunking.value.param == "requests[0].params.model"
    with pytest.raises(ModelNotSupportedError) as indexing:
        run_async(index_face.create(rt.index, {"namespace": "n", "collection": "c", "index": "i",
                                               "model": "on-server", "max_tokens": 16}))
    assert indexing.value.param == "model"
    with pytest.raises(NotSupportedError) as insides:
        run_async(remote_llm.generational_guts(rt.engine, {"prompt": "x"}))
    assert insides.value.param == "model"


def test_include_usage_gives_its_own_last_chunk_after_every_finish(engine):
    async def collect() -> list[Any]:
        req = ChatCompletionRequest.model_validate({"model": "smollm2-remote", "stream": True, "n": 2, "messages": ASK,
                                                    "max_tokens": 5, "stream_options": {"include_usage": True}})
        return [c.model_dump(mode="json") async for c in await serving.create_chat_completion(engine, req)]

    chunks = run_async(collect())
    finishes = [(c["choices"][0]["index"], c["choices"][0]["finish_reason"]) for c in chunks
                if c["choices"] and c["choices"][0]["finish_reason"]]
    assert finishes == [(0, "length"), (1, "length")]
    assert all(c["usage"] is None for c in chunks[:-1])
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 10
    assert chunks[-1]["usage"]["extra"]["served_by"] == "remote"
