"""The SDK's ``ChatStreamResponse`` and ``CompletionStreamResponse`` over an engine generation: each
``next()`` takes the next token's text from the engine (one blocking ``run_sync`` per event), so a
skill sees its reply as it is produced."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from types import TracebackType
from typing import Any

from pharia_skill import ChatStreamResponse, CompletionStreamResponse, Distribution, Logprob, TokenUsage
from pharia_skill.csi.inference import ChatEvent, CompletionAppend, CompletionEvent, MessageAppend, MessageBegin

from ..core.decode import TextDelta
from ..core.generation import ChoiceEvent, Generation
from ..core.tools import TextPiece, ToolCallParser
from .sdk_wire import finish_reason

RunSync = Callable[[Awaitable[Any]], Any]


class EngineEvents:
    """One generation's events, pulled one at a time from the engine's loop; ``drain`` reads the
    rest into memory (the model is then free for the skill's next call), ``close`` ends it early."""

    def __init__(self, gen: Generation, run: RunSync, top: int | None) -> None:
        self._gen = gen
        self._run = run
        self._top = top
        """``None``: no log-probabilities; else how many alternatives each token lists."""
        self._events: AsyncIterator[ChoiceEvent] | None = None
        self._buffer: list[ChoiceEvent] = []
        self.done = False

    async def _next_event(self) -> ChoiceEvent | None:
        if self._events is None:
            self._events = aiter(self._gen)
        return await anext(self._events, None)

    async def _rest(self) -> list[ChoiceEvent]:
        rest = []
        while (event := await self._next_event()) is not None:
            rest.append(event)
        return rest

    def next(self) -> ChoiceEvent | None:
        if self._buffer:
            return self._buffer.pop(0)
        if self.done:
            return None
        event = self._run(self._next_event())
        if event is None:
            self.done = True
        return event

    def drain(self) -> None:
        if not self.done:
            self.done = True
            self._buffer.extend(self._run(self._rest()))

    def close(self) -> None:
        if not self.done:
            self.done = True
            if self._events is not None:
                aclose = getattr(self._events, "aclose", None)
                if aclose is not None:
                    self._run(aclose())

    def tool_parser(self) -> ToolCallParser | None:
        return self._gen.tool_parser()

    def logprobs(self, delta: TextDelta) -> list[Distribution]:
        if self._top is None:
            return []

        def lp(token: int, value: float) -> Logprob:
            return Logprob(self._gen.token_bytes(token), value)

        return [Distribution(lp(s.token, s.logprob or 0.0), [lp(t, v) for t, v in s.top] if self._top else [])
                for s in delta.steps]


def _sdk_events(source: EngineEvents, append: Callable[[TextDelta], Any]) -> Callable[[], Any]:
    """A ``next`` for the SDK's responses: appends, then the finish reason, then the usage, then ``None``.

    When the reply may call tools, its text passes through the engine's tool-call parser: plain text
    is appended as it comes, and each call, once whole, is appended as the JSON object the SDK's
    ``parse_tool_call`` reads (``{"type": "function", "function": {"name", "parameters"}}``)."""
    pending: list[Any] = []
    parser = source.tool_parser()

    def next_event() -> Any:
        while not pending:
            event = source.next()
            if event is None:
                return None
            if event.delta is not None:
                if parser is not None:
                    text = "".join(p.text for p in parser.push(event.delta.text) if isinstance(p, TextPiece))
                    if text:
                        return append(TextDelta(text, [], []))
                    continue
                if event.delta.text or event.delta.steps:
                    return append(event.delta)
                continue
            if parser is not None:
                text = "".join(p.text for p in parser.flush() if isinstance(p, TextPiece))
                if text:
                    pending.append(append(TextDelta(text, [], [])))
                pending.extend(append(TextDelta(sdk_tool_call(name, arguments), [], []))
                               for _, name, arguments in parser.tool_calls())
            stats = event.stats
            pending.extend([finish_reason(str(stats.finish_reason)),
                            TokenUsage(stats.prompt_tokens, stats.completion_tokens)])
        return pending.pop(0)

    return next_event


def sdk_tool_call(name: str, arguments: str) -> str:
    """A call as the SDK's ``parse_tool_call`` reads it (a call cut short keeps its text raw)."""
    try:
        parameters = json.loads(arguments)
    except ValueError:
        parameters = {"_raw": arguments}
    return json.dumps({"type": "function", "function": {"name": name, "parameters": parameters}})


class _ClosesItsSource:
    """Leaving the response's ``with`` block ends the generation if it is still running."""

    source: EngineEvents

    def __exit__(self, exc_type: type[BaseException] | None, exc_value: BaseException | None,
                 traceback: TracebackType | None) -> bool | None:
        self.source.close()
        return None


class EngineChatStream(_ClosesItsSource, ChatStreamResponse):
    """``csi.chat_stream``: ``MessageBegin``, then ``MessageAppend`` per piece of text as the engine
    decodes it, then ``FinishReason`` and ``TokenUsage``."""

    def __init__(self, source: EngineEvents) -> None:
        self.source = source
        self._began = False
        self._pull = _sdk_events(source, lambda d: MessageAppend(d.text, source.logprobs(d)))
        super().__init__()

    def _next(self) -> ChatEvent | None:
        if not self._began:
            self._began = True
            return MessageBegin("assistant")
        event: ChatEvent | None = self._pull()
        return event


class EngineCompletionStream(_ClosesItsSource, CompletionStreamResponse):
    """``csi.completion_stream``: ``CompletionAppend`` per piece of text, then ``FinishReason`` and
    ``TokenUsage``."""

    def __init__(self, source: EngineEvents) -> None:
        self.source = source
        self._pull = _sdk_events(source, lambda d: CompletionAppend(d.text, source.logprobs(d)))

    def next(self) -> CompletionEvent | None:
        event: CompletionEvent | None = self._pull()
        return event
