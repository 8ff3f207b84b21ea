"""What a generation hands its face: the accepted request (``Generation``), its stream of
``ChoiceEvent``s, and choices collected whole (``ChoiceResult``); ``Guts`` for the model's insides."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from .backend import ModelInfo, StepResult
from .decode import FinishReason, GenerationStats, TextDelta
from .guts import GutsArrays
from .request import GenerationParams, Tool
from .scope import Scope
from .tools import RepeatedCallStop, ToolCallParser, ToolFormat


@dataclass
class ChoiceResult:
    """A whole choice, collected from the stream (for the faces that answer in one piece)."""

    deltas: list[TextDelta] = field(default_factory=list)
    stats: GenerationStats = field(default_factory=GenerationStats)

    @property
    def text(self) -> str:
        return "".join(d.text for d in self.deltas)

    @property
    def token_ids(self) -> list[int]:
        return [t for d in self.deltas for t in d.token_ids]

    @property
    def steps(self) -> list[StepResult]:
        return [s for d in self.deltas for s in d.steps]

    @property
    def finish_reason(self) -> FinishReason:
        assert self.stats.finish_reason is not None, "the choice has not ended"
        return self.stats.finish_reason


@dataclass(frozen=True)
class Guts:
    """A prompt's token ids and what the model makes of them (``Engine.guts``)."""

    ids: list[int]
    arrays: GutsArrays


@dataclass(frozen=True)
class ChoiceEvent:
    """One step of a (possibly multi-choice) generation: a text delta of choice ``index``, or,
    with ``delta=None``, the end of that choice (``stats`` final)."""

    index: int
    delta: TextDelta | None
    stats: GenerationStats


class Generation:
    """A request the engine accepted: model resolved, prompt rendered and checked against the window.

    Iterate it (once) for its ``ChoiceEvent``s, or ``collect()`` them into whole choices.
    """

    def __init__(self, run: Callable[[Generation], AsyncIterator[ChoiceEvent]], token_bytes: Callable[[int], bytes],
                 model: ModelInfo, prompt_ids: list[int], params: GenerationParams,
                 n: int, scope: Scope | None, tools: tuple[Tool, ...] = (),
                 tool_format: ToolFormat | None = None) -> None:
        """``run`` streams the generation (the engine's), ``token_bytes`` gives one token's bytes."""
        self._run = run
        self._token_bytes = token_bytes
        self.model = model
        self.prompt_ids = prompt_ids
        self.params = params
        self.n = n
        self.scope = scope
        self.tools = tools
        self.tool_format = tool_format
        """Set when the reply may hold tool calls (tools given, ``tool_choice`` not ``none``)."""

    def tool_parser(self) -> ToolCallParser | None:
        """A parser for one choice's text, when the reply may hold tool calls."""
        if self.tool_format is None:
            return None
        return ToolCallParser(self.tools, self.tool_format)

    def stopper(self) -> RepeatedCallStop | None:
        """What ends one choice early when the reply may hold tool calls: a call repeated exactly."""
        return None if self.tool_format is None else RepeatedCallStop(self.tools, self.tool_format)

    def reply(self, text: str) -> tuple[str | None, list[tuple[str, str, str]]]:
        """A whole choice's text as content and tool calls (id, name, arguments); with no tools
        in play, the text itself and no calls."""
        parser = self.tool_parser()
        return (text, []) if parser is None else parser.whole(text)

    def token_bytes(self, token: int) -> bytes:
        """The bytes of one token of this model (for log-probabilities)."""
        return self._token_bytes(token)

    def __aiter__(self) -> AsyncIterator[ChoiceEvent]:
        return self._run(self)

    async def collect(self) -> list[ChoiceResult]:
        """Every choice whole (non-streaming = the collected stream)."""
        results = [ChoiceResult() for _ in range(self.n)]
        async for event in self:
            if event.delta is None:
                results[event.index].stats = event.stats
            else:
                results[event.index].deltas.append(event.delta)
        return results
