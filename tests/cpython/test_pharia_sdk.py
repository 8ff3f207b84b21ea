"""Skills written for pharia-skill 0.20.0 run unchanged on csi-web's CSI (CPython, real models):
chat and its streams, @message_stream skills through the registry, aliases, RAG, the SDK's tool
loop, upstream-style StubCsi tests. The browser runs the same sources (test_browser_sdk_skills)."""

from __future__ import annotations

import sys
import threading
import types
from collections.abc import Iterator
from typing import Any

import pytest
from pharia_skill import (
    ChatParams,
    ChatResponse,
    CompletionParams,
    FinishReason,
    Message,
    TokenUsage,
    ToolOutput,
)
from pharia_skill.csi.inference import MessageAppend
from pharia_skill.testing import StubCsi

from csi.errors import InvalidInputError, ModelNotSupportedError, NotSupportedError, SkillError
from csi.local import local_runtime
from csi.runtime import Runtime
from csi.skills.engine_csi import EngineCsi
from tests.support import sdk_skills
from tests.support.aio import run_async
from tests.support.faces import index as index_face
from tests.support.paths import DIST
from tests.support.skill_sources import SEARCH_DOCS
from tests.support.skills import SkillsClient

REAL = "smollm2-135m-instruct"
ALIASES = {"llama-3.1-8b-instruct": REAL, "tool-model": "tiny-chat"}


def module(source: str, name: str) -> types.ModuleType:
    """The skill source as an imported module, the way a skill author's tests import it."""
    mod = types.ModuleType(name)
    sys.modules[name] = mod
    exec(compile(source, f"<{name}>", "exec", dont_inherit=True), mod.__dict__)
    return mod


TOOL_CALLS: list[tuple[str, Any]] = []


def get_weather(arguments: dict[str, Any]) -> str:
    TOOL_CALLS.append(("get_weather", arguments))
    return f'{{"city": "{arguments["city"]}", "celsius": 18}}'


async def broken_tool(arguments: dict[str, Any]) -> str:
    TOOL_CALLS.append(("broken_tool", arguments))
    raise RuntimeError("the weather station is offline")


def register_tools(runtime: Runtime) -> None:
    """Python functions as the tools skills see (the page's functions, in the browser)."""
    runtime.tools.register(sdk_skills.WEATHER_TOOL, get_weather)
    runtime.tools.register(sdk_skills.BROKEN_TOOL, broken_tool)


@pytest.fixture(scope="module")
def local() -> Iterator[tuple[Runtime, EngineCsi]]:
    with local_runtime(DIST, [REAL, "tiny-chat"], ALIASES) as (runtime, csi):
        register_tools(runtime)
        yield runtime, csi


# ---- upstream-style tests: StubCsi, no engine -----------------------------------------------------

def test_a_skill_tested_the_upstream_way_with_a_stub_csi():
    haiku = module(sdk_skills.HAIKU, "haiku_stub")

    class PoetCsi(StubCsi):
        def chat(self, model: str, messages: list[Message], params: ChatParams | None = None) -> ChatResponse:
            assert model == "llama-3.1-8b-instruct" and messages[-1].content == "autumn"
            return ChatResponse(message=Message.assistant(" Leaves fall slowly \n"), finish_reason=FinishReason.STOP,
                                logprobs=[], usage=TokenUsage(prompt=9, completion=4))

    assert haiku.haiku(PoetCsi(), haiku.Input(topic="autumn")) == haiku.Output(haiku="Leaves fall slowly")


# ---- the engine's CSI ---------------------------------------------------------------------------

def test_chat_stream_yields_as_it_decodes_and_assembles_to_chat(local):
    _, csi = local
    messages = [Message.user("What is the capital of France?")]
    params = ChatParams(max_tokens=24, temperature=0.0, logprobs="sampled")
    whole = csi.chat("llama-3.1-8b-instruct", messages, params)
    with csi.chat_stream("llama-3.1-8b-instruct", messages, params) as response:
        assert response.role == "assistant"
        appends = list(response.stream())
        assert response.finish_reason() == whole.finish_reason
        assert response.usage() == whole.usage
    assert len(appends) >= 3  # one per decoded piece, not one block
    assert "".join(a.content for a in appends) == whole.message.content
    assert "Paris" in whole.message.content  # the real model, answering
    assert sum(len(a.logprobs) for a in appends) == whole.usage.completion == len(whole.logprobs)


def test_completion_stream_assembles_to_complete(local):
    _, csi = local
    params = CompletionParams(max_tokens=12, temperature=0.0, stop=["\n\n"])
    whole = csi.complete(REAL, "The three primary colors are", params)
    with csi.completion_stream(REAL, "The three primary colors are", params) as response:
        text = "".join(a.text for a in response.stream())
        assert response.finish_reason() == whole.finish_reason and response.usage() == whole.usage
    assert text == whole.text


def test_a_model_neither_loaded_nor_aliased_says_how_to_alias_it(local):
    _, csi = local
    with pytest.raises(ModelNotSupportedError) as err:
        csi.chat("qwen3-32b", [Message.user("hi")])
    assert "modelAliases" in err.value.message and "aliases=" in err.value.message
    assert err.value.param == "requests[0].model"
    with pytest.raises(InvalidInputError) as bad:
        local[0].engine.aliases.set({"a": "b", "b": REAL})
    assert bad.value.param == "aliases.a"


def test_chunks_are_sdk_chunks_with_offsets(local):
    from pharia_skill import Chunk, ChunkParams

    _, csi = local
    text = "Owls hunt at night. " * 12
    chunks = csi.chunk(text, ChunkParams("llama-3.1-8b-instruct", max_tokens=16))
    assert len(chunks) > 1 and all(isinstance(c, Chunk) for c in chunks)
    for c in chunks:
        assert text[c.character_offset:c.character_offset + len(c.text)] == c.text


def test_explain_is_a_typed_not_supported_error(local):
    _, csi = local
    with pytest.raises(NotSupportedError):
        csi.explain("An apple a day", " keeps the doctor away", REAL)


def test_an_open_stream_does_not_hold_the_model_against_the_next_call(local):
    _, csi = local
    params = ChatParams(max_tokens=12, temperature=0.0)
    stream = csi.chat_stream(REAL, [Message.user("Name a color.")], params)
    first = stream.next()  # the first piece of text (the role came when the stream opened)
    other = csi.chat(REAL, [Message.user("Name a fruit.")], params)  # would wait forever on the model's lock
    rest = "".join(a.content for a in stream.stream())
    assert isinstance(first, MessageAppend) and other.message.content
    assert first.content + rest == csi.chat(REAL, [Message.user("Name a color.")], params).message.content


def test_leaving_the_local_csi_ends_a_stream_the_skill_left_unread():
    """The SDK's ``tool_call()`` reads a ``chat_stream_step`` only until it knows; a test that calls
    such a skill and leaves ``local_csi`` must not wait forever for the model the stream holds."""
    left: list[str] = []

    def skill_test() -> None:
        with local_runtime(DIST, ["tiny-chat"]) as (runtime, csi):
            stream = csi.chat_stream("tiny-chat", [Message.user("What does json.dumps do?")],
                                     ChatParams(max_tokens=64, temperature=0.0))
            left.append(stream.next().content)  # one piece of text, the rest unread
        left.append("left")
        assert not runtime.engine.models

    thread = threading.Thread(target=skill_test, daemon=True)
    thread.start()
    thread.join(60)
    assert left[-1:] == ["left"], "leaving local_runtime waited for the unread stream's model"


# ---- skills through the registry (what the worker runs) ----------------------------------------

def test_the_same_reply_run_and_streamed_by_skills(local):
    runtime, _ = local
    reg = SkillsClient(runtime.skills)
    run_async(reg.register("haiku", sdk_skills.HAIKU))
    run_async(reg.register("haiku-stream", sdk_skills.HAIKU_STREAM))
    out = run_async(reg.run("haiku", {"topic": "the sea"}))

    async def collect() -> list[dict[str, Any]]:
        return [e async for e in await reg.stream("haiku-stream", {"topic": "the sea"})]

    events = run_async(collect())
    assert events[0] == {"type": "message_begin", "role": "assistant"}
    appends = [e["text"] for e in events if e["type"] == "message_append"]
    assert len(appends) >= 3 and events[-1]["type"] == "message_end"
    assert "".join(appends).strip() == out["haiku"] and out["haiku"]
    assert events[-1]["payload"]["finish_reason"] in ("stop", "length")
    assert events[-1]["payload"]["completion_tokens"] >= len(appends)
    # a stream skill is streamed, a plain one run
    with pytest.raises(InvalidInputError, match="stream it"):
        run_async(reg.run("haiku-stream", {"topic": "x"}))
    with pytest.raises(InvalidInputError, match="run it"):
        run_async(reg.stream("haiku", {"topic": "x"}))


def test_cancelling_a_stream_mid_way_ends_it_with_the_skills_error_and_the_engine_goes_on(local):
    from csi.core.scope import Scope

    runtime, csi = local
    reg = SkillsClient(runtime.skills)
    run_async(reg.register("haiku-stream", sdk_skills.HAIKU_STREAM.replace("max_tokens=40", "max_tokens=400")))

    async def cancelled() -> tuple[list[dict[str, Any]], BaseException | None]:
        seen: list[dict[str, Any]] = []
        try:
            async for event in await reg.stream("haiku-stream", {"topic": "a very long story"}, None,
                                                Scope("stream-1", runtime.engine.interrupt_epoch)):
                seen.append(event)
                if len(seen) == 3:
                    runtime.engine.abort("stream-1")
        except BaseException as exc:  # noqa: BLE001
            return seen, exc
        finally:
            runtime.engine.forget("stream-1")
        return seen, None

    seen, error = run_async(cancelled())
    assert isinstance(error, SkillError) and "cancelled" in error.message
    assert 3 <= len(seen) < 40 and seen[-1]["type"] != "message_end"
    assert csi.chat(REAL, [Message.user("Say hi.")], ChatParams(max_tokens=4)).message.content


def test_rag_skill_answers_from_the_document_index(local):
    runtime, csi = local
    csi._run(index_face.create(csi.index, {"namespace": "skills", "collection": "docs", "index": "small",
                                           "max_tokens": 16}))
    csi._run(index_face.put(csi.index, [
        {"path": {"namespace": "skills", "collection": "docs", "name": name}, "contents": [{"text": text}]}
        for name, text in SEARCH_DOCS.items()]))
    rag = module(sdk_skills.RAG, "rag_local")
    out = rag.rag(csi, rag.Input(question="What does json.dumps return?"))
    assert out.sources[0] == "json.txt"
    assert "string" in out.answer.lower()


def test_the_sdks_tool_loop_calls_the_tool_and_answers(local):
    _, csi = local
    tool_user = module(sdk_skills.TOOL_USER, "tool_user_local")
    TOOL_CALLS.clear()
    out = tool_user.tool_user(csi, tool_user.Input(question="What is the weather in Oslo?"))
    assert sorted(out.tools) == ["broken_tool", "get_weather"]
    assert out.direct == '{"city": "Oslo", "celsius": 18}'
    assert out.failed == "the weather station is offline"
    model_calls = TOOL_CALLS[2:]
    assert model_calls and model_calls[0][0] == "get_weather" and isinstance(model_calls[0][1]["city"], str)
    assert out.answer and "<tool_call>" not in out.answer  # the loop ended on a plain reply


def test_structured_output_through_a_tool_schema(local):
    _, csi = local
    extract = module(sdk_skills.STRUCTURED, "extract_local")
    outs = [extract.extract(csi, extract.Input(text=text)) for text in sdk_skills.PEOPLE]
    called = [out for out in outs if out.called]
    assert called, "tiny-chat, trained on tool calls, should call the only tool offered for one of the texts"
    for out in called:  # the model chose to call: the arguments follow the schema, always
        assert out.name == "record_person"
        assert isinstance(out.parameters["name"], str) and isinstance(out.parameters["age"], int)


def test_invoke_tool_concurrent_keeps_order_and_reports_failures_as_tool_errors(local):
    from pharia_skill import InvokeRequest, ToolError

    _, csi = local
    out = csi.invoke_tool_concurrent([InvokeRequest("broken_tool", {}), InvokeRequest("get_weather", {"city": "Rome"})])
    assert isinstance(out[0], ToolError) and isinstance(out[1], ToolOutput)
    assert out[1].text() == '{"city": "Rome", "celsius": 18}'
    with pytest.raises(InvalidInputError) as err:
        csi.invoke_tool("no_such_tool")
    assert err.value.param == "name"
    with pytest.raises(InvalidInputError) as err:
        csi.invoke_tool("get_weather", city=7)
    assert err.value.param == "arguments.city"


def test_the_files_built_for_pharia_kernel_run_in_csi_web_unchanged(local):
    """tests/cpython/test_kernel_build.py builds these very files into Kernel components."""
    from tests.support.paths import ROOT

    runtime, _ = local
    folder = ROOT / "tests" / "support" / "kernel_skills"
    reg = SkillsClient(runtime.skills)
    run_async(reg.register("kernel-haiku", (folder / "haiku.py").read_text()))
    run_async(reg.register("kernel-relay", (folder / "relay.py").read_text()))
    poem = run_async(reg.run("kernel-haiku", {"subject": "snow"}))

    async def relay() -> list[dict[str, Any]]:
        return [e async for e in await reg.stream("kernel-relay", {"text": "What is the capital of France?"})]

    events = run_async(relay())
    assert isinstance(poem["text"], str) and poem["text"]
    assert [e["type"] for e in events][0] == "message_begin" and events[-1]["type"] == "message_end"
    assert events[-1]["payload"]["finish_reason"] in ("stop", "length")
