"""The sampling defaults a GGUF declares (llama.cpp's ``general.sampling.*`` keys), as the
``generation_config.json`` entries csi-web and transformers.js read."""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

GGUF_SAMPLING_KEYS = {"general.sampling.temp": "temperature", "general.sampling.top_k": "top_k",
                      "general.sampling.top_p": "top_p", "general.sampling.penalty_repeat": "repetition_penalty"}
"""The sampling keys a GGUF may carry and their ``generation_config.json`` names."""


def generation_config_of_gguf(metadata: dict[str, Any]) -> dict[str, Any]:
    """The ``generation_config.json`` sampling entries a GGUF's metadata declares (none: ``{}``);
    a temperature above 0 samples, 0 is greedy."""
    out: dict[str, Any] = {}
    for key, name in GGUF_SAMPLING_KEYS.items():
        value = metadata.get(key)
        if isinstance(value, Integral) and not isinstance(value, bool):
            out[name] = int(value)
        elif isinstance(value, Real) and not isinstance(value, bool):
            out[name] = float(value)
    if "temperature" in out:
        out["do_sample"] = out["temperature"] > 0
    return out
