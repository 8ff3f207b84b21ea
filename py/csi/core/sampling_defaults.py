"""Sampling a request leaves out: the model's own defaults first, then the face's.

A model declares its defaults in ``generation_config.json`` (Hugging Face's keys, read as
transformers and transformers.js read them: ``do_sample: false`` is greedy, ``do_sample: true``
without ``top_k`` is top-k 50) or, for a GGUF, in its ``general.sampling.*`` keys. A request's own
value always wins; what neither the request nor the model says comes from the face (OpenAI's
temperature 1, Spin's 0.8 / top-k 40 / top-p 0.9 / repeat penalty 1.1, ...).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from math import isfinite
from typing import Any

HF_TOP_K = 50
"""transformers' (and transformers.js's) top-k when a config samples without naming one."""


@dataclass(frozen=True)
class SamplingDefaults:
    """Values for the sampling fields a request leaves out (``None``: not declared here)."""

    temperature: float | None = None
    top_k: int | None = None
    top_p: float | None = None
    repetition_penalty: float | None = None

    def or_else(self, other: SamplingDefaults) -> SamplingDefaults:
        """These defaults, with ``other``'s where these say nothing."""
        mine = {f.name: getattr(self, f.name) for f in fields(self)}
        return SamplingDefaults(**{k: getattr(other, k) if v is None else v for k, v in mine.items()})

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}


NEUTRAL = SamplingDefaults(temperature=1.0, top_k=0, top_p=1.0, repetition_penalty=1.0)
"""What sampling is with nothing declared anywhere: the full distribution at temperature 1."""


def _number(value: Any, low: float, high: float) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not isfinite(value):
        return None
    return float(value) if low <= value <= high else None


def from_generation_config(config: Any) -> SamplingDefaults:
    """The defaults a ``generation_config.json`` declares; values out of range are ignored."""
    if not isinstance(config, dict):
        return SamplingDefaults()
    penalty = _number(config.get("repetition_penalty"), 0.01, 100.0)
    if config.get("do_sample") is False:  # greedy; the penalty still applies, as in transformers
        return SamplingDefaults(temperature=0.0, repetition_penalty=penalty)
    temperature = _number(config.get("temperature"), 0.0, 2.0)
    top_p = _number(config.get("top_p"), 0.0, 1.0)
    top_k = _number(config.get("top_k"), 0, 1 << 20)
    if config.get("do_sample") is True:
        temperature = 1.0 if temperature is None else temperature
        top_k = HF_TOP_K if top_k is None else top_k
    return SamplingDefaults(temperature=temperature, top_k=None if top_k is None else int(top_k),
                            top_p=top_p or None, repetition_penalty=penalty)

