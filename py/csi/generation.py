"""The decode loop: prefill, one backend step per token, stopping, text assembly."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from .backend import Backend, ModelInfo, SamplingParams
from .detokenize import ByteDecoder, IncrementalDecoder
from .stop_text import StopMatcher
from .token_bytes import TokenBytes


@dataclass(frozen=True)
class GenerationParams:
    """What one generation needs besides the prompt; ``max_tokens=None`` = rest of the window."""

    sampling: SamplingParams = field(default_factory=SamplingParams)
    max_tokens: int | None = None
    stop: tuple[str, ...] = ()
    ignore_eos: bool = False


@dataclass
class GenerationStats:
    """Filled in as the generation runs; final once the iterator is exhausted."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = None
    token_ids: list[int] = field(default_factory=list)
    started: float = 0.0
    first_token_at: float = 0.0
    finished: float = 0.0

    def timings(self) -> dict[str, float]:
        """WebLLM's ``usage.extra`` figures."""
        e2e = max(self.finished - self.started, 1e-9)
        ttft = max(self.first_token_at - self.started, 1e-9)
        decode_time = max(self.finished - self.first_token_at, 1e-9)
        decoded = max(self.completion_tokens - 1, 0)
        return {
            "e2e_latency_s": e2e,
            "prefill_tokens_per_s": self.prompt_tokens / ttft,
            "decode_tokens_per_s": decoded / decode_time if decoded else 0.0,
            "time_to_first_token_s": ttft,
            "time_per_output_token_s": decode_time / decoded if decoded else 0.0,
        }


async def generate(
    backend: Backend,
    model: ModelInfo,
    prompt_ids: list[int],
    params: GenerationParams,
    stats: GenerationStats,
    cancelled: Callable[[], bool] = lambda: False,
    token_bytes: TokenBytes | None = None,
) -> AsyncIterator[tuple[str, list[int]]]:
    """Yield ``(text, token_ids)`` deltas of the reply to ``prompt_ids``; ``stats`` says how it ended.

    Every generated token id is yielded once; text held back (stop-sequence prefixes, incomplete
    characters) comes with a later delta, so a delta may carry ids but no text only at the end.

    The caller must hold the model's lock: the backend's KV cache is reset and refilled here.
    """
    stats.started = time.perf_counter()
    stats.prompt_tokens = len(prompt_ids)
    room = model.context_length - len(prompt_ids)
    limit = room if params.max_tokens is None else min(params.max_tokens, room)
    eos = set() if params.ignore_eos else set(model.eos_token_ids)
    decoder: ByteDecoder | IncrementalDecoder = (
        ByteDecoder(token_bytes) if token_bytes is not None
        else IncrementalDecoder(lambda ids: backend.decode(model.model_id, ids)))
    stopper = StopMatcher(list(params.stop))

    backend.reset(model.model_id)
    backend.set_sampling(model.model_id, params.sampling)
    feed = prompt_ids
    finish = "length"
    unsent = 0
    while stats.completion_tokens < limit:
        if cancelled():
            finish = "abort"
            break
        token = await backend.step(model.model_id, feed)
        if not stats.token_ids:
            stats.first_token_at = time.perf_counter()
        if token in eos:
            finish = "stop"
            break
        stats.token_ids.append(token)
        stats.completion_tokens += 1
        text = stopper.push(decoder.push(token))
        if text:
            yield text, stats.token_ids[unsent:]
            unsent = len(stats.token_ids)
        if stopper.stopped:
            finish = "stop"
            break
        feed = [token]
    tail = "" if stopper.stopped else stopper.push(decoder.flush()) + stopper.flush()
    if tail or unsent < len(stats.token_ids):
        yield tail, stats.token_ids[unsent:]
    stats.finish_reason = finish
    stats.finished = time.perf_counter()
    if not stats.first_token_at:
        stats.first_token_at = stats.finished
