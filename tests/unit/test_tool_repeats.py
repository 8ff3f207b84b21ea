"""Tool calls a reply repeats: the decode loop's stopper ends the reply at a call that repeats an
earlier one exactly and drops it; distinct calls pass. And the call parser finds where arguments
end by their JSON, in every format (Llama 3's ``}`` end also closes objects inside them).
References are built from the calls the tests write, never from the code under test."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types.responses import Response as OpenAIResponse

from csi.core.backend import StepResult
from csi.core.engine import Engine
from csi.core.grammar import Grammar
from csi.core.request import Tool
from csi.core.tools import GENERIC, HERMES, LLAMA3, MISTRAL, RepeatedCallStop, TextPiece, ToolCallParser, ToolFormat
from csi.faces.openai.responses_api.protocol import ResponseCreateRequest
from csi.faces.openai.responses_api.serving import create_response
from csi.faces.openai.responses_api.store import MemoryResponseStore
from csi.testing import EOS, ScriptedBackend
from csi.wire import parse_request
from tests.support.aio import run_async
from tests.support.faces import chat_completion, chat_completion_stream

TOOLS = (Tool("get_weather", None, None), Tool("add", None, None))
FORMATS = [HERMES, LLAMA3, MISTRAL, GENERIC]
ARGUMENTS: list[Any] = [
    {"city": "Paris"}, {"city": "Paris, TX"}, {"city": "Paris"} | {"unit": "C"}, {"unit": "C", "city": "Paris"},
    {"a": {"b": [1, {"c": "}]"}]}, "d": "}\n</tool_call>"}, {"q": "a \"quoted\" } and \\ backslash"},
    {"deep": [[[]], {}]}, {}, {"s": "[TOOL_CALLS]"},
]


def call_text(fmt: ToolFormat, name: str, arguments: Any) -> str:
    return fmt.begin_for(name) + json.dumps(arguments) + fmt.end


def chunks(text: str, sizes: list[int]) -> list[str]:
    out, at = [], 0
    for size in sizes:
        out.append(text[at:at + size])
        at += size
    return [*out, text[at:]]


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize("size", [1, 2, 3, 7, 10_000])
def test_arguments_end_where_their_json_ends_in_every_format(fmt, size):
    calls = [(TOOLS[i % 2].name, args) for i, args in enumerate(ARGUMENTS)]
    reply = "Sure.\n" + "\n".join(call_text(fmt, name, args) for name, args in calls)
    parser = ToolCallParser(TOOLS, fmt)
    text = ""
    for piece in [reply[i:i + size] for i in range(0, len(reply), size)]:
        text += "".join(e.text for e in parser.push(piece) if isinstance(e, TextPiece))
    text += "".join(e.text for e in parser.flush() if isinstance(e, TextPiece))
    assert [(name, json.loads(args)) for _, name, args in parser.tool_calls()] == calls
    assert text == "Sure.\n" + "\n" * (len(calls) - 1)


def test_a_bare_scalar_as_arguments_ends_at_the_formats_end():
    parser = ToolCallParser(TOOLS, LLAMA3)
    content, calls = parser.whole(call_text(LLAMA3, "add", 12.5) + " and " + call_text(LLAMA3, "add", "x}"))
    assert [(n, json.loads(a)) for _, n, a in calls] == [("add", 12.5), ("add", "x}")]
    assert content == "and"


def expected_output(fmt: ToolFormat, calls: list[tuple[str, Any]], separator: str) -> tuple[str, str, bool]:
    """The whole reply, what the stopper must let through, and whether it stops (a repeat)."""
    texts = [call_text(fmt, name, args) for name, args in calls]
    whole = separator.join(texts)
    for i, text in enumerate(texts):
        if text in texts[:i]:
            return whole, separator.join(texts[:i]) + separator, True
    return whole, whole, False


def run_stopper(fmt: ToolFormat, pieces: list[str]) -> tuple[str, bool]:
    stopper = RepeatedCallStop(TOOLS, fmt)
    out = ""
    for piece in pieces:
        out += stopper.push(piece)
        if stopper.stopped:
            return out, True
    return out + stopper.flush(), False


@settings(max_examples=300, deadline=None)
@given(fmt=st.sampled_from(FORMATS), separator=st.sampled_from(["\n", "", " then "]),
       calls=st.lists(st.tuples(st.sampled_from([t.name for t in TOOLS]), st.sampled_from(ARGUMENTS)),
                      min_size=1, max_size=5),
       sizes=st.lists(st.integers(1, 40), max_size=30))
def test_the_stopper_lets_distinct_calls_through_and_ends_at_the_first_exact_repeat(fmt, separator, calls, sizes):
    whole, expected, repeats = expected_output(fmt, calls, separator)
    assert run_stopper(fmt, chunks(whole, sizes)) == (expected, repeats)


def test_calls_equal_as_json_but_written_differently_are_both_kept():
    """The comparison is on the text the grammar wrote (so nothing of a repeat is ever streamed)."""
    calls = [("get_weather", {"city": "Paris", "unit": "C"}), ("get_weather", {"unit": "C", "city": "Paris"})]
    whole, expected, repeats = expected_output(HERMES, calls, "\n")
    assert not repeats and run_stopper(HERMES, [whole]) == (whole, False)


# ---- through the engine and the OpenAI face ------------------------------------------------------


class LoopingBackend(ScriptedBackend):
    """Replays its script in a loop (a model repeating itself); takes any grammar."""

    async def compile_grammar(self, model_id: str, grammar: Grammar) -> None:
        pass

    async def step(self, model_id: str, ids: list[int]) -> StepResult:
        await super().step(model_id, ids)
        return StepResult(self.script[(self._pos - 1) % len(self.script)])


def pieces(fmt: ToolFormat, *calls: tuple[str, Any]) -> list[bytes]:
    """Token byte strings of ``calls``, each followed by a newline (several tokens per call)."""
    out: list[bytes] = []
    for name, args in calls:
        text = call_text(fmt, name, args) + "\n"
        out += [text[i:i + 5].encode() for i in range(0, len(text), 5)]
    return out


def engine_for(tokens: list[bytes], end: bool) -> Engine:
    vocab = [b"<eos>", *tokens]
    engine = Engine(LoopingBackend(vocab, [*range(1, len(vocab)), *([EOS] if end else [])], context_length=4096))
    run_async(engine.load(["m"]))
    return engine


REQUEST = {"messages": [{"role": "user", "content": "Weather?"}], "tool_choice": "required", "max_tokens": 400,
           "tools": [{"type": "function", "function": {"name": t.name}} for t in TOOLS]}
PARIS = ("get_weather", {"city": "Paris"})
OSLO = ("get_weather", {"city": "Oslo"})
SUM = ("add", {"a": 1, "b": 2})


def calls_of(reply: Any) -> list[tuple[str, Any]]:
    return [(c.function.name, json.loads(c.function.arguments)) for c in reply.choices[0].message.tool_calls or []]


@pytest.mark.parametrize(("script", "end", "calls"), [
    ([PARIS], False, [PARIS]),
    ([PARIS, OSLO], False, [PARIS, OSLO]),
    ([PARIS, SUM, OSLO], False, [PARIS, SUM, OSLO]),
    ([PARIS, OSLO, SUM], True, [PARIS, OSLO, SUM]),
    ([SUM], True, [SUM]),
])
def test_a_reply_ends_at_the_first_repeated_call_with_finish_reason_tool_calls(script, end, calls):
    engine = engine_for(pieces(GENERIC, *script), end)
    reply = run_async(chat_completion(engine, REQUEST))
    assert calls_of(reply) == calls
    assert reply.choices[0].finish_reason == "tool_calls"
    assert reply.choices[0].message.content is None
    assert reply.usage.completion_tokens < REQUEST["max_tokens"]


def test_a_streamed_reply_never_shows_the_repeat():
    engine = engine_for(pieces(GENERIC, PARIS, SUM), False)

    async def go() -> list[Any]:
        return [c async for c in chat_completion_stream(engine, {**REQUEST, "stream": True})]
    chunks_ = run_async(go())
    assert assembled(chunks_) == [PARIS, SUM]
    assert [c.choices[0].finish_reason for c in chunks_ if c.choices][-1] == "tool_calls"


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_repeat_cut_short_by_the_end_of_the_reply_is_dropped_too(fmt):
    """``max_tokens`` can end a reply inside a call that repeats the first: what was held back of it
    is not released at the end, where the parser would read it as a second call."""
    first = call_text(fmt, "get_weather", {"city": "Paris"})
    for cut in range(1, len(first)):
        assert run_stopper(fmt, [first, "\n" + first[:cut]]) == (first + "\n", False), cut
    other = call_text(fmt, "add", {"city": "Paris"})
    assert run_stopper(fmt, [first, "\n" + other[:-1]]) == (first + "\n" + other[:-1], False)


# ---- a repeat that max_tokens cuts short: the reply is its complete calls --------------------------

PER_CALL = len(pieces(GENERIC, PARIS))
"""Tokens of one call and its newline: a reply of ``PER_CALL + k`` tokens (0 < k < PER_CALL - 1) is the
first call whole and a repeat of it cut short after k tokens."""


def streamed(engine: Engine, request: dict[str, Any]) -> tuple[list[tuple[str, Any]], str | None, Any]:
    """The calls a stream assembles, its last finish reason and its usage."""
    async def go() -> list[Any]:
        return [c async for c in chat_completion_stream(engine, {**request, "stream": True,
                                                                 "stream_options": {"include_usage": True}})]
    chunks_ = run_async(go())
    finish = [c.choices[0].finish_reason for c in chunks_ if c.choices][-1]
    return assembled(chunks_), finish, chunks_[-1].usage


def assembled(chunks_: list[Any]) -> list[tuple[str, Any]]:
    """The tool calls a stream's chunks assemble: (name, parsed arguments) in the order they begin."""
    calls: dict[int, list[str]] = {}
    for chunk in chunks_:
        for delta in chunk.choices[0].delta.tool_calls or [] if chunk.choices else []:
            entry = calls.setdefault(delta.index, ["", ""])
            entry[0] += delta.function.name or ""
            entry[1] += delta.function.arguments or ""
    return [(name, json.loads(args)) for name, args in calls.values()]


@pytest.mark.parametrize("k", range(1, PER_CALL - 1))
def test_a_repeat_cut_short_by_max_tokens_ends_the_reply_with_finish_reason_tool_calls(k):
    """OpenAI's clients run tools only on ``tool_calls``: the calls are whole, only the dropped repeat was cut."""
    request = {**REQUEST, "max_tokens": PER_CALL + k}
    reply = run_async(chat_completion(engine_for(pieces(GENERIC, PARIS), False), request))
    assert calls_of(reply) == [PARIS] and reply.choices[0].message.content is None
    assert reply.choices[0].finish_reason == "tool_calls"
    assert reply.usage.completion_tokens == PER_CALL + k  # the tokens were spent all the same
    calls, finish, usage = streamed(engine_for(pieces(GENERIC, PARIS), False), request)
    assert (calls, finish, usage.completion_tokens) == ([PARIS], "tool_calls", PER_CALL + k)


@pytest.mark.parametrize("max_tokens", [3, PER_CALL - 2, PER_CALL])
def test_max_tokens_that_cuts_no_repeat_still_says_length(max_tokens):
    """A call cut short, or calls whole with nothing dropped after them: ``length``, as before."""
    reply = run_async(chat_completion(engine_for(pieces(GENERIC, PARIS), False), {**REQUEST, "max_tokens": max_tokens}))
    assert reply.choices[0].finish_reason == "length"


def test_a_distinct_call_cut_short_after_it_parts_from_the_first_says_length():
    first, second = call_text(GENERIC, *PARIS), call_text(GENERIC, *OSLO)
    parted = next(i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b)  # chars in common
    max_tokens = PER_CALL + parted // 5 + 2  # past the first differing character, before the call's end
    assert (parted // 5 + 2) * 5 < len(second)
    engine = engine_for(pieces(GENERIC, PARIS, OSLO), False)
    reply = run_async(chat_completion(engine, {**REQUEST, "max_tokens": max_tokens}))
    assert reply.choices[0].finish_reason == "length"
    names = [c.function.name for c in reply.choices[0].message.tool_calls or []]
    assert names == ["get_weather", "get_weather"]  # the second one unfinished


def test_the_responses_api_completes_a_response_whose_repeat_max_output_tokens_cut():
    req = parse_request(ResponseCreateRequest, {
        "input": "Weather?", "tool_choice": "required", "max_output_tokens": PER_CALL + 4,
        "tools": [{"type": "function", "name": t.name} for t in TOOLS]})
    final = run_async(create_response(engine_for(pieces(GENERIC, PARIS), False), MemoryResponseStore(), req))
    OpenAIResponse.model_validate(final.model_dump(mode="json"))
    calls = [i for i in final.model_dump(mode="json")["output"] if i["type"] == "function_call"]
    assert [(c["name"], json.loads(c["arguments"])) for c in calls] == [PARIS]
    assert final.status == "completed" and final.incomplete_details is None
