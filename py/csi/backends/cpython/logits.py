"""The whole-vocabulary math of one sampling step, over numpy arrays, as worker/sampling/ does it:
grammar masks, penalties, bias, the candidates a draw picks from, and log-probabilities."""

from __future__ import annotations

import math

import numpy as np

from ...core.request import MIN_LOGPROB, SamplingParams
from .mulberry32 import Mulberry32

F32_MAX = float(np.finfo(np.float32).max)


def apply_bitmask(logits: np.ndarray, bitmask: np.ndarray) -> np.ndarray:
    """``logits`` with every token the packed ``bitmask`` rejects (and every id past it) at -inf."""
    allowed = np.unpackbits(bitmask.view(np.uint8), bitorder="little").astype(bool)
    out = np.full(len(logits), -np.inf, dtype=np.float32)
    n = min(len(logits), len(allowed))
    out[:n] = np.where(allowed[:n], logits[:n], np.float32(-np.inf))
    return out


def penalized(logits: np.ndarray, p: SamplingParams, sequence: list[int], counts: dict[int, int]) -> np.ndarray:
    """Repetition, frequency and presence penalties, as worker/sampling/ ``processLogits`` (float32,
    like its copy); ``logits`` itself when there are none."""
    repetition = 1.0 if p.repetition_penalty is None else p.repetition_penalty
    if repetition == 1 and not p.frequency_penalty and not p.presence_penalty:
        return logits
    out = logits.astype(np.float32).copy()
    if repetition != 1:
        window = sequence[-p.repetition_window:] if p.repetition_window > 0 else sequence
        seen = np.fromiter(sorted(set(window)), dtype=np.int64)
        seen = seen[seen < len(out)]
        vals = out[seen]
        with np.errstate(over="ignore"):  # saturated, as processLogits does
            rep = np.float32(repetition)
            penalized = np.where(vals > 0, vals / rep, vals * rep)
        out[seen] = np.clip(penalized, -F32_MAX, F32_MAX)
    for token, n in counts.items():
        if token < len(out):
            out[token] = np.float32(float(out[token]) - (n * p.frequency_penalty + (p.presence_penalty if n else 0.0)))
    return out


def biased(logits: np.ndarray, p: SamplingParams, fresh: bool) -> np.ndarray:
    """``logit_bias`` added (float32); ``logits`` itself when there is none. ``fresh``: ``logits`` is
    already this step's own float32 copy, changed in place."""
    if not p.logit_bias:
        return logits
    out = logits if fresh else logits.astype(np.float32).copy()
    for token, bias in p.logit_bias:
        if 0 <= token < len(out):
            out[token] = np.float32(float(out[token]) + bias)
    return out


def process_logits(logits: np.ndarray, p: SamplingParams, sequence: list[int], counts: dict[int, int]) -> np.ndarray:
    """Penalties then bias, as worker/sampling/ ``processLogits``."""
    out = penalized(logits, p, sequence, counts)
    return biased(out, p, out is not logits)


def candidates(logits: np.ndarray, p: SamplingParams) -> tuple[np.ndarray, np.ndarray]:
    """Token ids kept by temperature/top-k/top-p, most likely first, and their probabilities."""
    z = logits.astype(np.float64)
    w = np.exp((z - z.max()) * (1.0 / (p.temperature or 1.0)))
    order = np.lexsort((np.arange(len(w)), -w))  # by weight desc, then id asc
    order = order[w[order] > 0]  # never a token a grammar ruled out (or too unlikely to weigh)
    k = p.top_k if p.top_k and 0 < p.top_k < len(order) else len(order)
    ids = order[:k]
    kept = w[ids]
    if p.top_p is not None and p.top_p < 1:
        cum = np.cumsum(kept)
        keep = int(np.searchsorted(cum, p.top_p * cum[-1], side="left")) + 1
        ids, kept = ids[:keep], kept[:keep]
    return ids, kept / kept.sum()


def sample(logits: np.ndarray, p: SamplingParams, rng: Mulberry32) -> int:
    """The greedy token at temperature 0, else a draw from ``candidates`` with ``rng``."""
    if p.temperature is not None and not p.temperature > 0:
        return int(np.argmax(logits))
    ids, probs = candidates(logits, p)
    u = rng.next()
    acc = 0.0
    for token, prob in zip(ids, probs, strict=True):
        acc += float(prob)
        if u < acc:
            return int(token)
    return int(ids[-1])


def floor_logprob(value: float) -> float:
    """A log-probability as sent: finite, at least ``MIN_LOGPROB`` (NaN and -inf become it)."""
    return value if math.isfinite(value) and value > MIN_LOGPROB else MIN_LOGPROB


def token_logprobs(logits: np.ndarray, token: int, k: int) -> tuple[float, tuple[tuple[int, float], ...]]:
    """Log-probability of ``token`` and the ``k`` most likely tokens, floored as worker/sampling/
    ``logprobs`` does (tokens a grammar ruled out, at -inf, are never among them)."""
    z = logits.astype(np.float64)
    with np.errstate(invalid="ignore"):  # logits all -inf, or +inf: NaN, floored below
        lse = z.max() + np.log(np.exp(z - z.max()).sum())
        top: np.ndarray | list[int] = np.lexsort((np.arange(len(z)), -z))[:k] if k else []
        return floor_logprob(float(z[token] - lse)), tuple((int(i), floor_logprob(float(z[i] - lse)))
                                                           for i in top if z[i] > -np.inf)
