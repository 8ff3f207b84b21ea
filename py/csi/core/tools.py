"""Tool calls: how a chat template writes them, the grammar that enforces them, rendering for
templates that know no tools, and a streaming parser that turns the reply's text into calls."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from dataclasses import dataclass
from json import dumps, loads
from typing import Any, Literal

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
            "Take the arguments' values from the user's message.\n"  # SmolLM2-135M: Tokyo's time asked for UTC
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


class _ValueEnd:
    """Where one JSON value ends, in text fed piece by piece (the grammar wrote it well formed):
    an object or array where its depth returns to zero outside strings, a bare scalar at the first
    character that cannot continue it."""

    SCALAR = frozenset("0123456789+-.eEtrufalsn")

    def __init__(self) -> None:
        self.depth = 0
        self.in_string = False
        self.escaped = False
        self.scalar = False

    def feed(self, text: str) -> int:
        """The index in ``text`` just past the value, or -1 when it goes on."""
        for i, ch in enumerate(text):
            if self.in_string:
                self.escaped, closes = (False, False) if self.escaped else (ch == "\\", ch == '"')
                if closes:
                    self.in_string = False
                    if self.depth == 0:
                        return i + 1
            elif self.scalar and ch not in self.SCALAR:
                return i
            elif ch == '"':
                self.in_string = True
            elif ch in "{[":
                self.depth += 1
            elif ch in "}]":
                if self.depth == 0:
                    return i
                self.depth -= 1
                if self.depth == 0:
                    return i + 1
            elif self.depth == 0 and ch in self.SCALAR:
                self.scalar = True
        return -1


class ToolCallParser:
    """Splits a reply's text, as it streams, into content and calls (name first, arguments in
    pieces as they arrive). Text that may begin a call is held back until it is clear. A call's
    arguments end where their JSON value ends (the format's ``end`` may also occur inside them,
    as Llama 3's ``}`` does); ``spans`` says where each call lies in the whole text."""

    def __init__(self, tools: tuple[Tool, ...], fmt: ToolFormat) -> None:
        self.fmt = fmt
        self.begins = {fmt.begin_for(t.name): t.name for t in tools}
        self.buffer = ""
        self.pushed = 0
        self.state: Literal["text", "arguments", "end"] = "text"
        self.value = _ValueEnd()
        self.calls: list[tuple[str, str, list[str]]] = []
        self.spans: list[tuple[int, int | None]] = []
        """Each call's start and end (``None`` while open) as offsets in the whole text."""

    @property
    def offset(self) -> int:
        """Where the text not yet taken apart (``buffer``) starts in the whole text."""
        return self.pushed - len(self.buffer)

    def push(self, text: str) -> Iterator[ToolEvent]:
        self.buffer += text
        self.pushed += len(text)
        while self.buffer:
            before = (self.state, len(self.buffer))
            yield from {"text": self._text, "arguments": self._arguments, "end": self._end}[self.state]()
            if (self.state, len(self.buffer)) == before:
                return  # the rest is held until more text comes

    def _plain(self, n: int) -> Iterator[ToolEvent]:
        if n:
            yield TextPiece(self.buffer[:n])
            self.buffer = self.buffer[n:]

    def _text(self) -> Iterator[ToolEvent]:
        at = self.buffer.find(self.fmt.trigger)
        if at < 0:
            yield from self._plain(len(self.buffer) - _partial_suffix(self.buffer, self.fmt.trigger))
            return
        yield from self._plain(at)
        begin = next((b for b in self.begins if self.buffer.startswith(b)), None)
        if begin is None:
            if not any(b.startswith(self.buffer) for b in self.begins):
                yield from self._plain(len(self.fmt.trigger))  # the trigger, but not a call: plain text
            return  # else a begin still arriving
        self.spans.append((self.offset, None))
        self.buffer = self.buffer[len(begin):]
        self.state, self.value = "arguments", _ValueEnd()
        self.calls.append((new_call_id(), self.begins[begin], []))
        yield CallStart(len(self.calls) - 1, self.calls[-1][0], self.calls[-1][1])

    def _arguments(self) -> Iterator[ToolEvent]:
        index = len(self.calls) - 1
        end = self.value.feed(self.buffer)
        piece = self.buffer if end < 0 else self.buffer[:end]
        if piece:
            self.calls[index][2].append(piece)
            yield ArgumentsPiece(index, piece)
        self.buffer = self.buffer[len(piece):]
        if end >= 0:
            self.state = "end"

    def _end(self) -> Iterator[ToolEvent]:
        end = self.fmt.end
        if self.buffer.startswith(end):
            self.buffer = self.buffer[len(end):]
        elif end.startswith(self.buffer):
            return  # the end still arriving
        self.spans[-1] = (self.spans[-1][0], self.offset)  # (without its end, never under the grammar)
        self.state = "text"
        yield from ()

    def flush(self) -> Iterator[ToolEvent]:
        """The end of the reply: what was held back. An unfinished call keeps what it got; a
        call's end cut short is dropped."""
        rest, self.buffer = self.buffer, ""
        if rest and self.state == "arguments":
            self.calls[-1][2].append(rest)
            yield ArgumentsPiece(len(self.calls) - 1, rest)
        elif rest and self.state == "text":
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


class RepeatedCallStop:
    """Ends a reply at a tool call that repeats an earlier call of the same reply exactly (the same
    text: name and arguments as the grammar wrote them), and drops that repeat: a small model made
    to call a tool otherwise writes the same call again and again until ``max_tokens``. Text that
    may still become a repeat is held back, so a stream never shows one. The decode loop's stopper
    for replies that may call tools (as ``StopMatcher`` is for stop sequences)."""

    def __init__(self, tools: tuple[Tool, ...], fmt: ToolFormat) -> None:
        self.parser = ToolCallParser(tools, fmt)
        self.text = ""
        self.sent = 0
        self.seen: set[str] = set()
        self.checked = 0
        self.stopped = False

    def push(self, text: str) -> str:
        """What of the reply so far is safe to emit (it cannot become part of a repeat)."""
        if self.stopped:
            return ""
        self.text += text
        for _ in self.parser.push(text):
            pass
        repeat = self._repeat()
        if repeat is not None:
            self.stopped = True
            return self._release(repeat)
        unsettled = self._unsettled()
        return self._release(len(self.text) if unsettled is None else unsettled)

    def _unsettled(self) -> int | None:
        """Where the text that may still become a repeat starts (``None``: there is none)."""
        start = self.parser.spans[-1][0] if self.parser.state != "text" else self.parser.offset
        return start if any(call.startswith(self.text[start:]) for call in self.seen) else None

    def _repeat(self) -> int | None:
        """Where the first completed call that repeats an earlier one starts."""
        for start, end in self.parser.spans[self.checked:]:
            if end is None:
                break
            self.checked += 1
            call = self.text[start:end]
            if call in self.seen:
                return start
            self.seen.add(call)
        return None

    def _release(self, upto: int) -> str:
        out = self.text[self.sent:max(upto, self.sent)]
        self.sent += len(out)
        return out

    def flush(self) -> str:
        """The end of the reply: what was held back, but for the start of a repeat that the reply's
        end cut short (``max_tokens``), and nothing after a repeat. A repeat cut short ends the reply
        as a whole one does (``stopped``): what is left are the calls before it, all complete."""
        if self.stopped:
            return ""
        unsettled = self._unsettled()
        if unsettled is not None and unsettled < len(self.text):
            self.stopped = True
        return self._release(len(self.text) if unsettled is None else unsettled)


def _partial_suffix(text: str, marker: str) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of ``marker``."""
    for n in range(min(len(marker) - 1, len(text)), 0, -1):
        if marker.startswith(text[-n:]):
            return n
    return 0


def content_texts(parts: list[dict[str, Any]]) -> list[str]:
    """Content parts (an MCP tool's result) as text, one string per part: a text part is its text, an
    embedded text resource its text, any other part (an image, a link) its JSON."""
    out: list[str] = []
    for part in parts:
        resource = part.get("resource")
        if part.get("type") == "text":
            out.append(str(part.get("text", "")))
        elif part.get("type") == "resource" and isinstance(resource, dict) and isinstance(resource.get("text"), str):
            out.append(resource["text"])
        else:
            out.append(dumps(part, ensure_ascii=False))
    return out
