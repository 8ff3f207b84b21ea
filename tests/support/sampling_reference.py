"""A numpy reference of the per-token math (written from the definitions, independent of ours).

repetition penalty as HF's RepetitionPenaltyLogitsProcessor, frequency/presence penalties as
OpenAI documents them, logit bias added, then temperature, top-k and top-p as HF's warpers.
"""

from __future__ import annotations

import numpy as np


def reference_distribution(logits: np.ndarray, *, temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0,
                           repetition_penalty: float = 1.0, repetition_window: int = 0,
                           frequency_penalty: float = 0.0, presence_penalty: float = 0.0,
                           logit_bias: dict[int, float] | None = None, sequence: list[int] = (),
                           generated: list[int] = ()) -> tuple[np.ndarray, np.ndarray]:
    """(processed logits, final probabilities over the vocabulary)."""
    z = np.array(logits, dtype=np.float64)
    if repetition_penalty != 1.0:
        ctx = list(sequence)[-repetition_window:] if repetition_window else list(sequence)
        for t in set(ctx):
            z[t] = z[t] / repetition_penalty if z[t] > 0 else z[t] * repetition_penalty
    if frequency_penalty or presence_penalty:
        ids, counts = np.unique(np.asarray(list(generated), dtype=np.int64), return_counts=True)
        z[ids] -= counts * frequency_penalty + (counts > 0) * presence_penalty
    for t, b in (logit_bias or {}).items():
        z[t] += b
    processed = z.copy()
    z = z / temperature
    if top_k:
        kth = np.sort(z)[-top_k]
        z[z < kth] = -np.inf
    p = np.exp(z - z.max())
    p /= p.sum()
    if top_p < 1.0:
        order = np.argsort(-p, kind="stable")
        cum = np.cumsum(p[order])
        keep = order[: int(np.searchsorted(cum, top_p, side="left")) + 1]
        mask = np.zeros_like(p, dtype=bool)
        mask[keep] = True
        p = np.where(mask, p, 0.0)
        p /= p.sum()
    return processed, p


def log_softmax(z: np.ndarray) -> np.ndarray:
    z = np.asarray(z, dtype=np.float64)
    return z - (z.max() + np.log(np.exp(z - z.max()).sum()))
