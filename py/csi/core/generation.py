"""What a generation hands its face: the accepted request (``Generation``), its stream of
``ChoiceEvent``s, and choices collected whole (``ChoiceResult``); ``PromptInsides`` for the model's insides."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field

from .backend import ModelInfo, StepResult
from .decode import FinishReason, GenerationStats, TextDelta
from .insides import InsidesArrays
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
    def calls(self) -> list[tuple[str, str, str]]:
        """The tool calls a server parsed, whole: (id, name, arguments) in the order of their index."""
        merged: dict[int, list[str]] = {}
        for piece in (p for d in self.deltas for p in d.calls):
            slot = merged.setdefault(piece.index, ["", "", ""])
            slot[0] = piece.id or slot[0]
            slot[1] += piece.name or ""
            slot[2] += piece.arguments or ""
        return [(cid or f"call_{secrets.token_hex(6)}", name, args) for cid, name, args in
                (merged[k] for k in sorted(merged))]

    @property
    def finish_reason(self) -> FinishReason:
        assert self.stats.finish_reason is not None, "the choice has not ended"
        return self.stats.finish_reason


@dataclass(frozen=True)
class PromptInsides:
    """A prompt's token ids and what the model makes of them (``Engine.insides``)."""

    ids: list[int]
    arrays: InsidesArrays


@dataclass(frozen=True)
class ChoiceEvent:
    """One step of a (possibly multi-choice) generation: a text delta of choice ``index``, or,
    with ``delta=None``, the end of that choice (``stats`` final)."""

    index: int
    delta: TextDelta | None
    stats: GenerationStats


class Generation:
    """A request a runner accepted: model resolved, prompt rendered and checked against the window
    (by a model here; a server checks its own).

    Iterate it (once) for its ``ChoiceEvent``s, or ``collect()`` them into whole choices.
    """

    def __init__(self, run: Callable[[Generation], AsyncIterator[ChoiceEvent]], *, model: ModelInfo,
                 prompt_ids: list[int], params: GenerationParams, n: int, scope: Scope | None,
                 token_bytes: Callable[[int], bytes], token_text: Callable[[int], str],
                 tools: tuple[Tool, ...] = (), tool_format: ToolFormat | None = None,
                 served: Mapping[str, str] | None = None) -> None:
        """``run`` streams the generation (the runner's); ``token_bytes`` and ``token_text`` name
        one token (for log-probabilities); ``served`` says who serves it (for usage reports)."""
        self._run = run
        self._token_bytes = token_bytes
        self._token_text = token_text
        self.model = model
        self.prompt_ids = prompt_ids
        self.params = params
        self.n = n
        self.scope = scope
        self.tools = tools
        self.tool_format = tool_format
        """Set when the reply may hold tool calls in its text (tools given, ``tool_choice`` not ``none``)."""
        self.served: Mapping[str, str] = served or {}
        self.draft: ModelInfo | None = None
        """A model here that drafts tokens for this one (``extra_body.draft_model``)."""

    def tool_parser(self) -> ToolCallParser | None:
        """A parser for one choice's text, when the reply may hold tool calls."""
        if self.tool_format is None:
            return None
        return ToolCallParser(self.tools, self.tool_format)

    def stopper(self) -> RepeatedCallStop | None:
        """What ends one choice early when the reply may hold tool calls: a call repeated exactly."""
        return None if self.tool_format is None else RepeatedCallStop(self.tools, self.tool_format)

    def reply(self, choice: ChoiceResult) -> tuple[str | None, list[tuple[str, str, str]]]:
        """A whole choice as content and tool calls (id, name, arguments): parsed from its text when
        tools are in play here, as the server parsed them otherwise."""
        parser = self.tool_parser()
        if parser is not None:
            return parser.whole(choice.text)
        calls = choice.calls
        return (choice.text or None) if calls else choice.text, calls

    def token_bytes(self, token: int) -> bytes:
        """The bytes of one token of this model (for log-probabilities)."""
        return self._token_bytes(token)

    def token_text(self, token: int) -> str:
        """One token as text, as log-probabilities show it."""
        return self._token_text(token)

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
