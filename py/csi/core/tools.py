"""Tool calls: how a chat template writes them, the grammar that enforces them, rendering for
templates that know no tools, and a streaming parser that turns the reply's text into calls."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from dataclasses import dataclass
from json import dumps, loads
from typing import Any

from .grammar import Grammar, structural_tag_grammar
from .request import ChatMessage, Tool, ToolChoice


@dataclass(frozen=True)
class ToolFormat:
    """How a model family writes one call: ``begin`` (with the tool's name as JSON), the
    arguments object, ``end``. ``trigger`` starts every call."""

    name: str
    trigger: str
    begin: str
    """``{name}`` is replaced by the tool's name as a JSON string."""
    end: str
    template_renders_tools: bool

    def begin_for(self, tool_name: str) -> str:
        return self.begin.replace("{name}", dumps(tool_name))


HERMES = ToolFormat("hermes", "<tool_call>", '<tool_call>\n{"name": {name}, "arguments": ', "}\n</tool_call>", True)
LLAMA3 = ToolFormat("llama3", '{"name": ', '{"name": {name}, "parameters": ', "}", True)
MISTRAL = ToolFormat("mistral", "[TOOL_CALLS]", '[TOOL_CALLS][{"name": {name}, "arguments": ', "}]", True)
GENERIC = ToolFormat("generic", "<tool_call>", HERMES.begin, HERMES.end, False)
"""Templates that know no tools: csi-web writes the tools into the system turn, Hermes-style."""


def detect_format(chat_template: str | None) -> ToolFormat:
    """The tool-call format a chat template teaches its model (Hermes/Qwen, Llama 3.x, Mistral);
    ``GENERIC`` when the template does not render tools."""
    t = chat_template or ""
    if "tools" not in t:
        return GENERIC
    if "<tool_call>" in t:
        return HERMES
    if "[TOOL_CALLS]" in t:
        return MISTRAL
    if "<|python_tag|>" in t or ("parameters" in t and "<|eot_id|>" in t):
        return LLAMA3
    return HERMES


# ---- prompt ---------------------------------------------------------------------------------


def tool_dict(tool: Tool) -> dict[str, Any]:
    """The OpenAI shape chat templates expect in ``tools``."""
    fn: dict[str, Any] = {"name": tool.name}
    if tool.description is not None:
        fn["description"] = tool.description
    fn["parameters"] = tool.parameters if tool.parameters is not None else {"type": "object", "properties": {}}
    return {"type": "function", "function": fn}


def _arguments_value(text: str) -> Any:
    try:
        return loads(text)
    except ValueError:
        return text


def template_messages(messages: tuple[ChatMessage, ...], tools: tuple[Tool, ...],
                      fmt: ToolFormat) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """Messages and tools as a chat template takes them. For a template that knows tools, tool
    calls keep their structure (arguments as objects, as Hugging Face templates expect); for one
    that does not, tools go into the system turn and calls and results become text."""
    if fmt.template_renders_tools:
        out: list[dict[str, Any]] = []
        for m in messages:
            d: dict[str, Any] = {"role": m.role, "content": m.content or ""}
            if m.tool_calls:
                d["tool_calls"] = [{"id": c.id, "type": "function",
                                    "function": {"name": c.name, "arguments": _arguments_value(c.arguments)}}
                                   for c in m.tool_calls]
            if m.tool_call_id is not None:
                d["tool_call_id"] = m.tool_call_id
            out.append(d)
        return out, [tool_dict(t) for t in tools] or None
    rendered = [_plain_turn(m, fmt) for m in messages]
    if tools:
        preamble = tools_preamble(tools, fmt)
        if rendered and rendered[0]["role"] == "system":
            rendered[0] = {"role": "system", "content": f"{rendered[0]['content']}\n\n{preamble}"}
        else:
            rendered.insert(0, {"role": "system", "content": preamble})
    return rendered, None


def tools_preamble(tools: tuple[Tool, ...], fmt: ToolFormat) -> str:
    """The system-turn text that describes ``tools`` to a model whose template cannot."""
    listing = "\n".join(dumps(tool_dict(t)) for t in tools)
    example = fmt.begin_for("<function-name>") + "<arguments-json-object>" + fmt.end
    return ("You may call one or more functions to assist with the user query.\n"
            "You are provided with function signatures within <tools></tools> XML tags:\n"
            f"<tools>\n{listing}\n</tools>\n"
            f"For each function call, write:\n{example}")


def _plain_turn(m: ChatMessage, fmt: ToolFormat) -> dict[str, Any]:
    if m.role == "tool":
        return {"role": "user", "content": f"<tool_response>\n{m.content or ''}\n</tool_response>"}
    text = m.content or ""
    calls = "\n".join(fmt.begin_for(c.name) + c.arguments + fmt.end for c in m.tool_calls)
    return {"role": m.role, "content": "\n".join(p for p in (text, calls) if p)}


# ---- grammar --------------------------------------------------------------------------------


def tool_grammar(tools: tuple[Tool, ...], choice: ToolChoice, parallel: bool, fmt: ToolFormat) -> Grammar | None:
    """The structural tag that enforces ``choice``: ``required`` and a named tool force at least
    one call whose arguments validate against the tool's schema; ``auto`` leaves text free until
    the format's trigger, then forces a well-formed call; ``none`` constrains nothing."""
    if choice == "none" or not tools:
        return None
    chosen = tools if isinstance(choice, str) else tuple(t for t in tools if t.name == choice.name)
    tags = [{"type": "tag", "begin": fmt.begin_for(t.name),
             "content": {"type": "json_schema",
                         "json_schema": t.parameters if t.parameters is not None else {"type": "object"}},
             "end": fmt.end} for t in chosen]
    if choice == "auto":
        return structural_tag_grammar({"type": "triggered_tags", "triggers": [fmt.trigger], "tags": tags,
                                       "stop_after_first": not parallel}, "tools")
    return structural_tag_grammar({"type": "tags_with_separator", "tags": tags, "separator": "\n",
                                   "at_least_one": True, "stop_after_first": not parallel}, "tool_choice")


# ---- parsing the reply ----------------------------------------------------------------------


@dataclass(frozen=True)
class TextPiece:
    text: str


@dataclass(frozen=True)
class CallStart:
    index: int
    id: str
    name: str


@dataclass(frozen=True)
class ArgumentsPiece:
    index: int
    text: str


ToolEvent = TextPiece | CallStart | ArgumentsPiece

_call_ids = itertools.count()


def new_call_id() -> str:
    """``call_`` and 24 hex digits, unique in the worker."""
    return f"call_{os.urandom(8).hex()}{next(_call_ids) % 4096:08x}"


class ToolCallParser:
    """Splits a reply's text, as it streams, into content and calls (name first, arguments in
    pieces as they arrive). Text that may begin a call is held back until it is clear."""

    def __init__(self, tools: tuple[Tool, ...], fmt: ToolFormat) -> None:
        self.fmt = fmt
        self.begins = {fmt.begin_for(t.name): t.name for t in tools}
        self.buffer = ""
        self.in_call = False
        self.calls: list[tuple[str, str, list[str]]] = []

    def push(self, text: str) -> Iterator[ToolEvent]:
        self.buffer += text
        while self.buffer:
            if not self.in_call:
                at = self.buffer.find(self.fmt.trigger)
                if at < 0:
                    keep = _partial_suffix(self.buffer, self.fmt.trigger)
                    emit, self.buffer = self.buffer[:len(self.buffer) - keep], self.buffer[len(self.buffer) - keep:]
                    if emit:
                        yield TextPiece(emit)
                    return
                if at:
                    yield TextPiece(self.buffer[:at])
                    self.buffer = self.buffer[at:]
                begin = next((b for b in self.begins if self.buffer.startswith(b)), None)
                if begin is None:
                    if any(b.startswith(self.buffer) for b in self.begins):
                        return  # a begin still arriving
                    yield TextPiece(self.fmt.trigger)  # the trigger, but not a call: plain text
                    self.buffer = self.buffer[len(self.fmt.trigger):]
                    continue
                self.buffer = self.buffer[len(begin):]
                self.in_call = True
                self.calls.append((new_call_id(), self.begins[begin], []))
                yield CallStart(len(self.calls) - 1, self.calls[-1][0], self.calls[-1][1])
            else:
                index = len(self.calls) - 1
                at = self.buffer.find(self.fmt.end)
                if at < 0:
                    keep = _partial_suffix(self.buffer, self.fmt.end)
                    emit, self.buffer = self.buffer[:len(self.buffer) - keep], self.buffer[len(self.buffer) - keep:]
                    if emit:
                        self.calls[index][2].append(emit)
                        yield ArgumentsPiece(index, emit)
                    return
                if at:
                    self.calls[index][2].append(self.buffer[:at])
                    yield ArgumentsPiece(index, self.buffer[:at])
                self.buffer = self.buffer[at + len(self.fmt.end):]
                self.in_call = False

    def flush(self) -> Iterator[ToolEvent]:
        """The end of the reply: what was held back. An unfinished call keeps what it got."""
        rest, self.buffer = self.buffer, ""
        if rest:
            if self.in_call:
                self.calls[-1][2].append(rest)
                yield ArgumentsPiece(len(self.calls) - 1, rest)
            else:
                yield TextPiece(rest)

    def whole(self, text: str) -> tuple[str | None, list[tuple[str, str, str]]]:
        """A whole reply split into its content (``None`` when it is only calls, stripped when
        there are calls) and its calls (id, name, arguments)."""
        content = "".join(e.text for e in [*self.push(text), *self.flush()] if isinstance(e, TextPiece))
        calls = self.tool_calls()
        return ((content.strip() or None) if calls else content), calls

    def tool_calls(self) -> list[tuple[str, str, str]]:
        """(id, name, arguments) of every call so far."""
        return [(cid, name, "".join(parts)) for cid, name, parts in self.calls]


def _partial_suffix(text: str, marker: str) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of ``marker``."""
    for n in range(min(len(marker) - 1, len(text)), 0, -1):
        if marker.startswith(text[-n:]):
            return n
    return 0
