"""Tool-call formats, prompts for templates without tools, and the streaming call parser."""

from __future__ import annotations

import json

import pytest

from buildtools.models.tiny_chat_tools import CHAT_TEMPLATE as TINY_CHAT_TEMPLATE
from csi.core.request import ChatMessage, ForcedTool, Tool, ToolCall
from csi.core.tools import (
    GENERIC,
    HERMES,
    LLAMA3,
    MISTRAL,
    ArgumentsPiece,
    CallStart,
    TextPiece,
    ToolCallParser,
    detect_format,
    template_messages,
    tool_grammar,
)

TOOLS = (Tool("get_weather", "Weather", {"type": "object", "properties": {"city": {"type": "string"}}}),
         Tool("add", None, None))
REPLY = ('Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>\n'
         '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>')


def collect(parser: ToolCallParser, pieces: list[str]) -> tuple[str, list[tuple[str, str]]]:
    text, calls = "", []
    for piece in pieces:
        for event in parser.push(piece):
            if isinstance(event, TextPiece):
                text += event.text
            elif isinstance(event, CallStart):
                assert event.index == len(calls) and event.id.startswith("call_")
                calls.append([event.name, ""])
            else:
                assert isinstance(event, ArgumentsPiece)
                calls[event.index][1] += event.text
    for event in parser.flush():
        assert isinstance(event, TextPiece)
        text += event.text
    return text, [tuple(c) for c in calls]


@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
def test_the_parser_gives_the_same_calls_however_the_text_is_split(size):
    text, calls = collect(ToolCallParser(TOOLS, HERMES), [REPLY[i:i + size] for i in range(0, len(REPLY), size)])
    assert text == "Let me check.\n\n"
    assert calls == [("get_weather", '{"city": "Oslo"}'), ("add", '{"a": 1, "b": 2}')]
    assert all(isinstance(json.loads(args), dict) for _, args in calls)


def test_text_that_only_looks_like_a_call_stays_text():
    text, calls = collect(ToolCallParser(TOOLS, HERMES), ["a <tool", "_call>x and <tool_c", "all> not a call", "<to"])
    assert calls == []
    assert text == "a <tool_call>x and <tool_call> not a call<to"


def test_formats_are_read_from_the_template():
    assert detect_format(None) is GENERIC
    assert detect_format("{{ messages }}") is GENERIC
    assert detect_format(TINY_CHAT_TEMPLATE) is HERMES
    assert detect_format("{% if tools %}[AVAILABLE_TOOLS]{% endif %}[TOOL_CALLS]") is MISTRAL
    assert detect_format('{% if tools %}{"name": ..., "parameters": ...}<|python_tag|>{% endif %}') is LLAMA3


def test_a_template_without_tools_gets_them_in_its_system_turn_and_calls_as_text():
    messages = (ChatMessage("system", "Be brief."), ChatMessage("user", "Weather?"),
                ChatMessage("assistant", None, (ToolCall("call_1", "get_weather", '{"city": "Oslo"}'),)),
                ChatMessage("tool", '{"celsius": 3}', tool_call_id="call_1"))
    rendered, tools = template_messages(messages, TOOLS, GENERIC)
    assert tools is None
    assert rendered[0]["role"] == "system" and rendered[0]["content"].startswith("Be brief.\n\n")
    assert json.dumps({"type": "function", "function": {"name": "add", "parameters": {
        "type": "object", "properties": {}}}}) in rendered[0]["content"]
    assert rendered[2] == {"role": "assistant", "content": GENERIC.begin_for("get_weather") + '{"city": "Oslo"}'
                           + GENERIC.end}
    assert rendered[3] == {"role": "user", "content": '<tool_response>\n{"celsius": 3}\n</tool_response>'}
    rendered, tools = template_messages(messages, TOOLS, HERMES)
    assert tools is not None and rendered[2]["tool_calls"][0]["function"]["arguments"] == {"city": "Oslo"}


def test_the_tool_grammar_follows_the_choice():
    assert tool_grammar(TOOLS, "none", True, HERMES) is None
    auto = json.loads(tool_grammar(TOOLS, "auto", True, HERMES).source)["format"]
    assert auto["type"] == "triggered_tags" and auto["triggers"] == ["<tool_call>"]
    named = json.loads(tool_grammar(TOOLS, ForcedTool("add"), False, HERMES).source)["format"]
    assert named["type"] == "tags_with_separator" and named["at_least_one"] and named["stop_after_first"]
    assert [t["begin"] for t in named["tags"]] == [HERMES.begin_for("add")]
