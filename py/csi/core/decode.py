"""The decode loop: prefill (reusing what the backend kept of its cache), one backend step per
token, stopping, text assembly."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, cast

from .backend import Decoding, ModelInfo, PromptCaching, StepResult, Tokenizers, Verifying
from .detokenize import ByteDecoder, IncrementalDecoder
from .drafts import DraftLength, PromptLookup
from .model_drafts import LONGEST, START, ModelDrafts
from .request import GenerationParams
from .stop_text import StopMatcher
from .token_bytes import TokenBytes

FinishReason = Literal["stop", "length", "abort"]


class DecodingBackend(Decoding, Tokenizers, Protocol):
    """The roles the decode loop uses: generation, and the tokenizer when token bytes are unknown."""


class Stopper(Protocol):
    """Decides where a reply's text stops: ``push`` returns what is safe to emit, ``stopped`` says
    the reply ends here, ``flush`` releases what was held back at the end (and sets ``stopped`` when
    what it drops is where the reply ends: then a reply that ran out of tokens ends by ``stop``)
    (``StopMatcher`` for stop sequences, ``tools.RepeatedCallStop`` for tool calls)."""

    stopped: bool

    def push(self, text: str) -> str: ...

    def flush(self) -> str: ...


@dataclass(frozen=True)
class CallPiece:
    """A piece of a tool call a server parsed itself (OpenAI's streamed ``tool_calls`` entry): the
    call's ``index`` in the reply, its ``id`` and ``name`` (first piece only), more of its arguments."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str | None = None


@dataclass(frozen=True)
class TextDelta:
    """A piece of the reply: its text, the token ids behind it, their log-probabilities if asked,
    and the tool calls a server parsed from it (a model here leaves them in the text)."""

    text: str
    token_ids: list[int]
    steps: list[StepResult]
    calls: tuple[CallPiece, ...] = ()


@dataclass
class GenerationStats:
    """Filled in as the generation runs; final once the iterator is exhausted."""

    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: FinishReason | None = None
    token_ids: list[int] = field(default_factory=list)
    started: float = 0.0
    first_token_at: float = 0.0
    finished: float = 0.0
    grammar_init_s: float | None = None
    """Seconds to compile the request's grammar (``None``: no grammar; ~0 when it was cached)."""
    grammar_s: float = 0.0
    """Seconds the steps spent on the grammar."""
    latency_breakdown: dict[str, list[float]] | None = None
    """Seconds per step by stage, when the request asked for them."""
    drafted_tokens: int = 0
    """Tokens drafted from the context and checked (speculative decoding)."""
    accepted_tokens: int = 0
    """Of those, the ones the model chose too (each saved a forward pass)."""
    restored_tokens: int = 0
    """Prompt tokens whose cache came from one kept beyond the page (an earlier visit, another tab)."""

    def timings(self) -> dict[str, Any]:
        """WebLLM's ``usage.extra`` figures (prefill counts only the tokens actually processed)."""
        e2e = max(self.finished - self.started, 1e-9)
        ttft = max(self.first_token_at - self.started, 1e-9)
        decode_time = max(self.finished - self.first_token_at, 1e-9)
        decoded = max(self.completion_tokens - 1, 0)
        grammar = {} if self.grammar_init_s is None else {
            "grammar_init_s": self.grammar_init_s,
            "grammar_per_token_s": self.grammar_s / max(self.completion_tokens, 1),
        }
        breakdown = {} if self.latency_breakdown is None else {"latencyBreakdown": self.latency_breakdown}
        drafts = {} if not self.drafted_tokens else {
            "draft_tokens": self.drafted_tokens, "accepted_draft_tokens": self.accepted_tokens}
        restored = {"prompt_cache_tokens": self.restored_tokens} if self.restored_tokens else {}
        return grammar | breakdown | drafts | restored | {
            "e2e_latency_s": e2e,
            "prefill_tokens_per_s": (self.prompt_tokens - self.cached_tokens) / ttft,
            "decode_tokens_per_s": decoded / decode_time if decoded else 0.0,
            "time_to_first_token_s": ttft,
            "time_per_output_token_s": decode_time / decoded if decoded else 0.0,
        }


async def decode(
    backend: DecodingBackend,
    model: ModelInfo,
    prompt_ids: list[int],
    params: GenerationParams,
    stats: GenerationStats,
    *,
    cancelled: Callable[[], bool] = lambda: False,
    token_bytes: TokenBytes | None = None,
    stopper: Stopper | None = None,
    drafter: ModelDrafts | None = None,
) -> AsyncIterator[TextDelta]:
    """Yield the reply to ``prompt_ids`` piece by piece; ``stats`` says how it ended.

    The backend keeps what it can of its KV cache for the prompt; only the rest is processed.
    Every generated token id is yielded once; text held back (stop-sequence prefixes, incomplete
    characters) comes with a later delta. The caller must hold the model's lock and have called
    ``set_sampling`` (or ``next_choice``). ``stopper`` replaces the stop-sequence matcher. ``drafter``
    (a draft model, whose lock the caller holds too) drafts in place of the context.
    """
    stats.started = time.perf_counter()
    stats.prompt_tokens = len(prompt_ids)
    caching = cast(PromptCaching, backend) if hasattr(backend, "restore_prefix") else None
    if caching is not None:
        stats.restored_tokens = await caching.restore_prefix(model.model_id, prompt_ids)
    kept = backend.reuse_prefix(model.model_id, prompt_ids)
    stats.cached_tokens = kept
    room = model.context_length - len(prompt_ids)
    limit = room if params.max_tokens is None else min(params.max_tokens, room)
    eos = set() if params.ignore_eos else set(model.eos_token_ids)
    decoder: ByteDecoder | IncrementalDecoder = (
        ByteDecoder(token_bytes, params.keep_special) if token_bytes is not None
        else IncrementalDecoder(lambda ids: backend.decode(model.model_id, ids)))
    stopper = stopper or StopMatcher(list(params.stop))

    feed = prompt_ids[kept:]
    finish: FinishReason = "length"
    unsent = 0
    steps: list[StepResult] = []
    verifier = backend if params.speculative and hasattr(backend, "verify") else None
    lookup = PromptLookup(prompt_ids) if verifier is not None and drafter is None else None
    if drafter is not None and verifier is not None:
        drafter.extend(prompt_ids)
    else:
        drafter = None
    lengths = DraftLength(START, LONGEST) if drafter is not None else DraftLength()
    done = False
    while not done and stats.completion_tokens < limit:
        if cancelled():
            finish = "abort"
            break
        drafts: list[int] = []
        context: PromptLookup | ModelDrafts | None = lookup or drafter
        if context is not None:
            room = min(limit - stats.completion_tokens, model.context_length - len(context.tokens)) - 1
            wanted = min(lengths.wanted(), room) if room > 0 else 0
            if wanted > 0 and lookup is not None:
                drafts = lookup.propose(wanted)
            elif wanted > 0 and drafter is not None:
                drafts = await drafter.propose(wanted)
        if drafts:
            results = await cast(Verifying, verifier).verify(model.model_id, feed, drafts)
            lengths.update(len(drafts), len(results) - 1)
            stats.drafted_tokens, stats.accepted_tokens = lengths.drafted, lengths.accepted
        else:
            results = [await backend.step(model.model_id, feed)]
        if not stats.first_token_at:
            stats.first_token_at = time.perf_counter()
        for result in results:
            stats.grammar_s += result.grammar_s
            if result.token in eos:
                finish, done = "stop", True
                if params.keep_special and isinstance(decoder, ByteDecoder):
                    tail_text = stopper.push(decoder.push(result.token))
                    if tail_text:
                        yield TextDelta(tail_text, stats.token_ids[unsent:], steps)
                        unsent, steps = len(stats.token_ids), []
                break
            stats.token_ids.append(result.token)
            stats.completion_tokens += 1
            steps.append(result)
            text = stopper.push(decoder.push(result.token))
            if text:
                yield TextDelta(text, stats.token_ids[unsent:], steps)
                unsent, steps = len(stats.token_ids), []
            if stopper.stopped:
                finish, done = "stop", True
                break
            if context is not None:
                context.extend((result.token,))
        feed = [results[-1].token]
    tail = "" if stopper.stopped else stopper.push(decoder.flush()) + stopper.flush()
    if finish == "length" and stopper.stopped:
        finish = "stop"  # the end cut short only what the stopper drops (a repeated tool call)
    if tail or unsent < len(stats.token_ids):
        yield TextDelta(tail, stats.token_ids[unsent:], steps)
    if caching is not None:
        await caching.remember(model.model_id)
    stats.finish_reason = finish
    stats.finished = time.perf_counter()
    if params.latency_breakdown:
        stats.latency_breakdown = backend.latency_breakdown(model.model_id)
    if not stats.first_token_at:
        stats.first_token_at = stats.finished
