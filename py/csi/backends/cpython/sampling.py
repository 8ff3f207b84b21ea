"""The per-token sampling of the CPython backend as a named list of steps, in the order
worker/sampling/ runs its own (``maskGrammar``, ``penalize``, ``bias``, ``draw``, ``count``,
``acceptGrammar``, ``logprobs``), so the two read side by side. ``step`` runs them in order."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...core.backend import SamplingParams, StepResult
from ...core.grammar import GrammarError
from .logits import apply_bitmask, biased, penalized, sample, token_logprobs
from .mulberry32 import Mulberry32

SAMPLING_STEPS = ("mask_grammar", "penalize", "bias", "draw", "count", "accept_grammar", "logprobs")

BREAKDOWN_KEYS = ("forwardTime", "logitProcessorTime", "grammarBitmaskTime", "penaltyTime", "logitBiasTime",
                  "sampleTime", "totalTime")


@dataclass
class StepState:
    """One token's sampling: what the steps read (the request's state) and what they leave."""

    params: SamplingParams
    logits: np.ndarray
    """The last position's logits, as the steps so far left them."""
    sequence: list[int]
    """Every token in the KV cache, the ones just run included (the repetition window)."""
    counts: dict[int, int]
    """How often each token was generated in this choice."""
    rng: Mulberry32
    matcher: Any = None
    bitmask: Any = None
    fresh: bool = False
    """``logits`` is this step's own float32 copy (a later step may change it in place)."""
    token: int = -1
    grammar_s: float = 0.0
    result: StepResult | None = None


def mask_grammar(s: StepState) -> None:
    """Rule out (at -inf) every token the grammar does not allow next."""
    if s.matcher is None:
        return
    started = time.perf_counter()
    s.matcher.fill_next_token_bitmask(s.bitmask)
    words = s.bitmask.numpy()[0]
    if not words.any():
        raise GrammarError("the grammar allows no token here: it accepts no text")
    s.logits = apply_bitmask(s.logits, words)
    s.grammar_s += time.perf_counter() - started


def penalize(s: StepState) -> None:
    """Repetition, frequency and presence penalties."""
    out = penalized(s.logits, s.params, s.sequence, s.counts)
    s.fresh, s.logits = s.fresh or out is not s.logits, out


def bias(s: StepState) -> None:
    """``logit_bias``."""
    out = biased(s.logits, s.params, s.fresh)
    s.fresh, s.logits = s.fresh or out is not s.logits, out


def draw(s: StepState) -> None:
    """Choose the token: greedy, or a draw from the generator among the candidates."""
    s.token = sample(s.logits, s.params, s.rng)


def count(s: StepState) -> None:
    """Count the token for later frequency and presence penalties."""
    s.counts[s.token] = s.counts.get(s.token, 0) + 1


def accept_grammar(s: StepState) -> None:
    """Advance the grammar past the token."""
    if s.matcher is None:
        return
    started = time.perf_counter()
    if not s.matcher.accept_token(s.token):
        raise RuntimeError(f"the grammar rejected token {s.token} it allowed")
    s.grammar_s += time.perf_counter() - started


def logprobs(s: StepState) -> None:
    """The result, with the token's log-probability and the top alternatives when asked for."""
    p = s.params
    s.result = (StepResult(s.token, *token_logprobs(s.logits, s.token, p.top_logprobs), s.grammar_s) if p.logprobs
                else StepResult(s.token, grammar_s=s.grammar_s))


STEPS: dict[str, Callable[[StepState], None]] = {
    "mask_grammar": mask_grammar, "penalize": penalize, "bias": bias, "draw": draw, "count": count,
    "accept_grammar": accept_grammar, "logprobs": logprobs,
}
assert tuple(STEPS) == SAMPLING_STEPS


def run_steps(s: StepState) -> dict[str, float]:
    """Run every step in order on ``s``; return the seconds each took, by name."""
    seconds: dict[str, float] = {}
    for name in SAMPLING_STEPS:
        started = time.perf_counter()
        STEPS[name](s)
        seconds[name] = time.perf_counter() - started
    return seconds
