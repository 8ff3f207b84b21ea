"""What a face asks the engine for: one generation request, whatever the API it came from."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

from .grammar import Grammar
from .sampling_defaults import NEUTRAL, SamplingDefaults

MIN_TEMPERATURE = 1e-5
"""Temperatures below this sample as 0 does: greedily."""

MIN_LOGPROB = -9999.0
"""The floor of every log-probability sent: OpenAI's value for "very unlikely". A token with no
chance at all (or log-probabilities of logits that are not finite) gets this instead of -inf/NaN."""


@dataclass(frozen=True)
class SamplingParams:
    """Parameters of the per-token whole-vocabulary math the backend performs.

    In order: ``repetition_penalty`` (HF semantics, over the last ``repetition_window`` tokens of
    the sequence, all of it when 0), ``frequency_penalty`` and ``presence_penalty`` (OpenAI
    semantics, over the tokens generated so far), ``logit_bias``; log-probabilities are taken of
    that distribution; then ``temperature`` (0 = greedy), ``top_k`` (0 = off), ``top_p`` (1 = off)
    and a draw from the backend's generator seeded with ``seed`` (``None``: any seed).

    ``None`` in ``temperature``, ``top_k``, ``top_p`` or ``repetition_penalty``: the request left
    it out; ``resolved`` fills it from the model's defaults, then the face's, before a backend
    sees it (a server gets it left out, and applies its own).
    """

    temperature: float | None = None
    top_k: int | None = None
    top_p: float | None = None
    seed: int | None = None
    repetition_penalty: float | None = None
    repetition_window: int = 0
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    logit_bias: tuple[tuple[int, float], ...] = ()
    logprobs: bool = False
    top_logprobs: int = 0
    grammar: Grammar | None = None
    """Every token must keep the output a prefix of this grammar's language (masked before the
    penalties); the compiled grammar comes from ``Backend.compile_grammar``."""

    def __post_init__(self) -> None:
        if self.temperature is not None and 0 < self.temperature < MIN_TEMPERATURE:
            object.__setattr__(self, "temperature", 0.0)  # 1/T would overflow: the limit is greedy

    def resolved(self, model: SamplingDefaults, face: SamplingDefaults) -> SamplingParams:
        """Every left-out field filled: the model's default, else the face's, else neutral."""
        fallback = model.or_else(face).or_else(NEUTRAL)
        return replace(self, **{name: value for name, value in fallback.to_dict().items()
                                if getattr(self, name) is None})

    def to_dict(self) -> dict[str, Any]:
        """The backend's view (what is still left out reads as neutral)."""
        p = self.resolved(SamplingDefaults(), SamplingDefaults())
        return {
            "temperature": p.temperature,
            "top_k": p.top_k,
            "top_p": p.top_p,
            "seed": self.seed,
            "repetition_penalty": p.repetition_penalty,
            "repetition_window": self.repetition_window,
            "frequency_penalty": self.frequency_penalty,
            "presence_penalty": self.presence_penalty,
            "logit_bias": [list(b) for b in self.logit_bias],
            "logprobs": self.logprobs,
            "top_logprobs": self.top_logprobs,
            "grammar": self.grammar.to_dict() if self.grammar else None,
        }


@dataclass(frozen=True)
class GenerationParams:
    """What one generation needs besides the prompt; ``max_tokens=None`` = rest of the window."""

    sampling: SamplingParams = field(default_factory=SamplingParams)
    face_defaults: SamplingDefaults = field(default_factory=SamplingDefaults)
    """The face's sampling for what neither the request nor the model says."""
    max_tokens: int | None = None
    stop: tuple[str, ...] = ()
    ignore_eos: bool = False
    keep_special: bool = False
    """Show special tokens in the text, the end-of-sequence token included (byte tables only)."""
    latency_breakdown: bool = False
    """Report the seconds of every step by stage (``Backend.latency_breakdown``) in the stats."""
    speculative: bool = True
    """Draft tokens from the context and verify them in one pass where the backend can
    (``core.drafts``); the output is the same either way."""
    draft_model: str | None = None
    """A loaded chat model with the same vocabulary that drafts the tokens instead (its greedy
    choices); the output is the same either way."""


@dataclass(frozen=True)
class ToolCall:
    """A call an assistant made: ``arguments`` is the JSON text the model wrote."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ChatMessage:
    """One turn: ``tool_calls`` on assistant turns, ``tool_call_id`` on tool results."""

    role: str
    content: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None


@dataclass(frozen=True)
class Tool:
    """A function the model may call; ``parameters`` is its arguments' JSON Schema."""

    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None


@dataclass(frozen=True)
class ForcedTool:
    """A ``tool_choice`` that names the one tool to call."""

    name: str


ToolChoice = Literal["none", "auto", "required"] | ForcedTool


@dataclass(frozen=True)
class GenerationRequest:
    """A prompt for a chat model: ``messages`` (rendered by the model's chat template), a raw
    ``prompt`` (encoded with the tokenizer's special tokens) or ``prompt_ids`` (token ids, as they
    are): exactly one of them.

    ``model=None`` asks for the one chat model loaded. Errors about the request name these fields:
    ``model``, ``messages`` or ``prompt`` (too long, empty), ``logit_bias`` (outside the vocabulary).

    ``tools`` are rendered by the model's chat template (or, for a template that knows none, by
    ``csi.core.tools``); ``tool_choice`` other than ``none`` constrains the reply with a grammar,
    which then takes the place of ``params.sampling.grammar``.
    """

    model: str | None
    params: GenerationParams = field(default_factory=GenerationParams)
    messages: tuple[ChatMessage, ...] | None = None
    prompt: str | None = None
    prompt_ids: tuple[int, ...] | None = None
    n: int = 1
    tools: tuple[Tool, ...] = ()
    tool_choice: ToolChoice = "auto"
    parallel_tool_calls: bool = True
    template_vars: tuple[tuple[str, Any], ...] = ()
    """More inputs of the chat template, such as ``("enable_thinking", False)``."""
    openai: object | None = field(default=None, compare=False, repr=False)
    """The OpenAI request this one was made from, which a model on a server gets as it is (tools and
    ``response_format`` then run there); a model here ignores it."""

    def __post_init__(self) -> None:
        if [self.messages, self.prompt, self.prompt_ids].count(None) != 2:
            raise ValueError("a GenerationRequest has one of messages, a prompt or prompt ids")
