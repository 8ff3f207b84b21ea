"""A reply as the Responses API streams it: the engine's text and tool-call pieces become output
items (a message with one ``output_text`` part; ``function_call`` items), announced, filled by
deltas and closed, each event numbered."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

from ....core.decode import GenerationStats
from ....core.generation import Generation
from ....core.tools import ArgumentsPiece, CallStart, TextPiece, ToolEvent
from ....errors import AbortError
from ..responses import TokenLogprob
from ..serving import token_logprobs
from .items import new_id
from .objects import (
    FunctionCallOut,
    McpApprovalRequestOut,
    McpCallOut,
    OutputItem,
    OutputMessage,
    OutputTextPart,
    ResponseObject,
    ResponseStreamEvent,
)

if TYPE_CHECKING:
    from .mcp_tools import McpServers

Call = FunctionCallOut | McpCallOut | McpApprovalRequestOut


class Sequence:
    """Numbers the events of one response, from 0."""

    def __init__(self) -> None:
        self.next = 0

    def event(self, kind: str, **fields: Any) -> ResponseStreamEvent:
        event = ResponseStreamEvent(type=kind, sequence_number=self.next, **fields)
        self.next += 1
        return event


class ReplyItems:
    """The output items of one model reply, appended to ``response.output`` as they begin."""

    def __init__(self, seq: Sequence, response: ResponseObject, mcp: McpServers | None = None) -> None:
        self.seq = seq
        self.response = response
        self.mcp = mcp
        self.message: OutputMessage | None = None
        self.call: Call | None = None
        self.pending: list[TokenLogprob] = []
        self.blank = ""
        self.calls: list[FunctionCallOut] = []
        """The function calls for the client to run."""
        self.mcp_calls: list[McpCallOut] = []
        """The MCP calls for the engine to run (their items not yet done)."""
        self.aborted = False
        """An MCP call was cancelled with the request."""
        self._at: dict[str, int] = {}  # an item's place in the output, by its id (asked at every delta)

    def add(self, item: OutputItem) -> Iterator[ResponseStreamEvent]:
        """Append ``item`` to the output and announce it."""
        self._at[item.id] = len(self.response.output)
        self.response.output.append(item)
        yield self.seq.event("response.output_item.added", output_index=self._at[item.id],
                             item=item.model_copy(deep=True))

    def _index(self, item: OutputItem) -> int:
        return self._at[item.id]

    def text(self, text: str, logprobs: list[TokenLogprob]) -> Iterator[ResponseStreamEvent]:
        self.pending.extend(logprobs)
        if not text:
            return
        if self.message is None and not (self.blank + text).strip():
            self.blank += text  # no message of blanks alone (such as the newline after a tool call)
            return
        text, self.blank = self.blank + text, ""
        yield from self.close_call()
        if self.message is None:
            self.message = OutputMessage(id=new_id("message"))
            yield from self.add(self.message)
            part = OutputTextPart()
            yield self.seq.event("response.content_part.added", item_id=self.message.id,
                                 output_index=self._index(self.message), content_index=0, part=part.model_copy())
            self.message.content.append(part)
        part = self.message.content[0]
        part.text += text
        part.logprobs.extend(self.pending)
        yield self.seq.event("response.output_text.delta", item_id=self.message.id,
                             output_index=self._index(self.message), content_index=0, delta=text,
                             logprobs=list(self.pending))
        self.pending = []

    def close_message(self, status: str = "completed") -> Iterator[ResponseStreamEvent]:
        message, self.message = self.message, None
        if message is None:
            return
        index = self._index(message)
        part = message.content[0]
        yield self.seq.event("response.output_text.done", item_id=message.id, output_index=index, content_index=0,
                             text=part.text, logprobs=list(part.logprobs))
        yield self.seq.event("response.content_part.done", item_id=message.id, output_index=index, content_index=0,
                             part=part.model_copy(deep=True))
        message.status = status  # type: ignore[assignment]
        yield self.seq.event("response.output_item.done", output_index=index, item=message.model_copy(deep=True))

    def start_call(self, call_id: str, name: str) -> Iterator[ResponseStreamEvent]:
        self.blank = ""
        yield from self.close_message()
        yield from self.close_call()
        server = self.mcp.server_of(name) if self.mcp is not None else None
        if server is not None and self.mcp is not None and self.mcp.needs_approval(server, name):
            self.call = McpApprovalRequestOut(id=new_id("mcp_approval_request"), server_label=server.spec.server_label,
                                              name=name, arguments="")
        elif server is not None:
            self.call = McpCallOut(id=new_id("mcp_call"), server_label=server.spec.server_label, name=name,
                                   arguments="")
            self.mcp_calls.append(self.call)
        else:
            self.call = FunctionCallOut(id=new_id("function_call"), call_id=call_id, name=name)
            self.calls.append(self.call)
        yield from self.add(self.call)

    def arguments(self, text: str) -> Iterator[ResponseStreamEvent]:
        if self.call is None or not text:
            return
        self.call.arguments += text
        kind = {"function_call": "response.function_call_arguments.delta",
                "mcp_call": "response.mcp_call_arguments.delta"}.get(self.call.type)
        if kind is not None:
            yield self.seq.event(kind, item_id=self.call.id, output_index=self._index(self.call), delta=text)

    def close_call(self, status: str = "completed") -> Iterator[ResponseStreamEvent]:
        """Close the call being written; an MCP call stays open until the engine has made it."""
        call, self.call = self.call, None
        if call is None:
            return
        index = self._index(call)
        if isinstance(call, McpCallOut):
            yield self.seq.event("response.mcp_call_arguments.done", item_id=call.id, output_index=index,
                                 arguments=call.arguments)
            if status != "completed":
                self.mcp_calls.remove(call)
                call.status = "incomplete"
                yield self.seq.event("response.output_item.done", output_index=index, item=call.model_copy(deep=True))
            return
        if isinstance(call, FunctionCallOut):
            yield self.seq.event("response.function_call_arguments.done", item_id=call.id, output_index=index,
                                 arguments=call.arguments, name=call.name)
            call.status = status  # type: ignore[assignment]
        yield self.seq.event("response.output_item.done", output_index=index, item=call.model_copy(deep=True))

    def drop_mcp_calls(self) -> Iterator[ResponseStreamEvent]:
        """Leave the reply's MCP calls unmade (``max_tool_calls`` reached): their items ``incomplete``."""
        for call in self.mcp_calls:
            call.status = "incomplete"
            yield self.seq.event("response.output_item.done", output_index=self._index(call),
                                 item=call.model_copy(deep=True))
        self.mcp_calls = []

    async def run_mcp_calls(self, scope: Any) -> AsyncIterator[ResponseStreamEvent]:
        """Make the reply's MCP calls, one after the other, each item done once its server answered."""
        assert self.mcp is not None
        for call in self.mcp_calls:
            index = self._index(call)
            if self.aborted:
                call.status = "incomplete"
                yield self.seq.event("response.output_item.done", output_index=index, item=call.model_copy(deep=True))
                continue
            yield self.seq.event("response.mcp_call.in_progress", item_id=call.id, output_index=index)
            try:
                await self.mcp.call(call, scope)
            except AbortError:  # the request was cancelled or interrupted: the server has been told
                self.aborted = True
                call.status = "incomplete"
            kind = "response.mcp_call.completed" if call.status == "completed" else "response.mcp_call.failed"
            yield self.seq.event(kind, item_id=call.id, output_index=index)
            yield self.seq.event("response.output_item.done", output_index=index, item=call.model_copy(deep=True))

    def close(self, status: str) -> Iterator[ResponseStreamEvent]:
        yield from self.close_message(status)
        yield from self.close_call(status)

    def tool_events(self, events: list[ToolEvent], logprobs: list[TokenLogprob]) -> Iterator[ResponseStreamEvent]:
        texted = False
        for e in events:
            if isinstance(e, TextPiece):
                yield from self.text(e.text, [] if texted else logprobs)
                texted = True
            elif isinstance(e, CallStart):
                yield from self.start_call(e.id, e.name)
            elif isinstance(e, ArgumentsPiece):
                yield from self.arguments(e.text)
        if not texted:
            self.pending.extend(logprobs)


async def reply_events(gen: Generation, items: ReplyItems, logprobs: bool,
                       stats_out: list[GenerationStats]) -> AsyncIterator[ResponseStreamEvent]:
    """Run ``gen`` (one choice) into ``items``; its final stats are appended to ``stats_out``."""
    parser = gen.tool_parser()
    async for event in gen:
        if event.delta is None:
            if parser is not None:
                for e in items.tool_events(list(parser.flush()), []):
                    yield e
            stats_out.append(event.stats)
            status = "completed" if event.stats.finish_reason == "stop" else "incomplete"
            for e in items.close(status):
                yield e
            continue
        d = event.delta
        lps = token_logprobs(gen, d) if logprobs else []
        if d.calls:
            for e in items.text(d.text, lps):
                yield e
            for p in d.calls:
                if p.name is not None:
                    for e in items.start_call(p.id or new_id("call"), p.name):
                        yield e
                for e in items.arguments(p.arguments or ""):
                    yield e
        elif parser is None:
            for e in items.text(d.text, lps):
                yield e
        else:
            for e in items.tool_events(list(parser.push(d.text)), lps):
                yield e
