"""A reply as the Responses API streams it: the engine's text and tool-call pieces become output
items (a message with one ``output_text`` part; ``function_call`` items), announced, filled by
deltas and closed, each event numbered."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

from ....core.decode import GenerationStats
from ....core.generation import Generation
from ....core.tools import ArgumentsPiece, CallStart, TextPiece, ToolEvent
from ..responses import TokenLogprob
from ..serving import token_logprobs
from .items import new_id
from .objects import FunctionCallOut, OutputItem, OutputMessage, OutputTextPart, ResponseObject, ResponseStreamEvent


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

    def __init__(self, seq: Sequence, response: ResponseObject) -> None:
        self.seq = seq
        self.response = response
        self.message: OutputMessage | None = None
        self.call: FunctionCallOut | None = None
        self.pending: list[TokenLogprob] = []
        self.calls: list[FunctionCallOut] = []

    def _add(self, item: OutputItem) -> Iterator[ResponseStreamEvent]:
        self.response.output.append(item)
        yield self.seq.event("response.output_item.added", output_index=len(self.response.output) - 1,
                             item=item.model_copy(deep=True))

    def _index(self, item: OutputItem) -> int:
        return next(i for i, o in enumerate(self.response.output) if o is item)

    def text(self, text: str, logprobs: list[TokenLogprob]) -> Iterator[ResponseStreamEvent]:
        self.pending.extend(logprobs)
        if not text:
            return
        yield from self.close_call()
        if self.message is None:
            self.message = OutputMessage(id=new_id("message"))
            yield from self._add(self.message)
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
        yield from self.close_message()
        yield from self.close_call()
        self.call = FunctionCallOut(id=new_id("function_call"), call_id=call_id, name=name)
        self.calls.append(self.call)
        yield from self._add(self.call)

    def arguments(self, text: str) -> Iterator[ResponseStreamEvent]:
        if self.call is None or not text:
            return
        self.call.arguments += text
        yield self.seq.event("response.function_call_arguments.delta", item_id=self.call.id,
                             output_index=self._index(self.call), delta=text)

    def close_call(self, status: str = "completed") -> Iterator[ResponseStreamEvent]:
        call, self.call = self.call, None
        if call is None:
            return
        index = self._index(call)
        yield self.seq.event("response.function_call_arguments.done", item_id=call.id, output_index=index,
                             arguments=call.arguments, name=call.name)
        call.status = status  # type: ignore[assignment]
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
