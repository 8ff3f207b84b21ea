"""What the CPython backend holds for each loaded model, and the table every role reads it from."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from ...core.backend import SamplingParams
from ...core.token_bytes import TokenBytes
from .grammars import Grammars
from .insides_session import InsidesSession
from .mulberry32 import Mulberry32
from .sampling import BREAKDOWN_KEYS


@dataclass
class ChatModel:
    """A loaded chat model: tokenizer, template, session, its KV cache and the current request."""

    tokenizer: Tokenizer
    session: ort.InferenceSession
    template: Any
    chat_template: str | None
    special: dict[str, str]
    kv_heads: int
    head_dim: int
    cache_inputs: list[str]
    uses_position_ids: bool
    token_bytes: TokenBytes | None
    past: dict[str, np.ndarray] = field(default_factory=dict)
    sequence: list[int] = field(default_factory=list)
    sampling: SamplingParams = field(default_factory=SamplingParams)
    rng: Mulberry32 = field(default_factory=lambda: Mulberry32(0))
    counts: dict[int, int] = field(default_factory=dict)
    grammars: Grammars | None = None
    grammar_args: tuple[Path, int, list[int]] | None = None
    matcher: Any = None
    bitmask: Any = None
    """The matcher's token bitmask, filled anew each step (allocated once per request)."""
    folder: Path = Path()
    config: dict[str, Any] = field(default_factory=dict)
    insides: InsidesSession | None = None
    breakdown: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in BREAKDOWN_KEYS})


@dataclass
class EmbeddingModel:
    """A loaded embedding model."""

    tokenizer: Tokenizer
    session: ort.InferenceSession


def chat_feeds(m: ChatModel, ids: list[int], start: int) -> dict[str, np.ndarray]:
    """The graph's inputs to run ``ids`` after the first ``start`` cached tokens (0: no cache)."""
    n = len(ids)
    feeds: dict[str, np.ndarray] = {
        "input_ids": np.asarray([ids], dtype=np.int64),
        "attention_mask": np.ones((1, start + n), dtype=np.int64),
        "position_ids": np.arange(start, start + n, dtype=np.int64)[None, :],
    }
    if not m.uses_position_ids:
        del feeds["position_ids"]
    for name in m.cache_inputs:
        feeds[name] = (m.past if start else {}).get(name, np.zeros((1, m.kv_heads, 0, m.head_dim), np.float32))
    return feeds


class ModelTable:
    """The state every role of the CPython backend shares: the models folder, the loaded models and
    the tokenizers kept for counting."""

    def __init__(self, models_dir: str | Path) -> None:
        self.models_dir = Path(models_dir)
        self._models: dict[str, ChatModel | EmbeddingModel] = {}
        self._counters: dict[str, Tokenizer] = {}

    def _chat(self, model_id: str) -> ChatModel:
        m = self._models[model_id]
        assert isinstance(m, ChatModel), f"{model_id} is not a chat model"
        return m

    def _embedder(self, model_id: str) -> EmbeddingModel:
        m = self._models[model_id]
        assert isinstance(m, EmbeddingModel), f"{model_id} is not an embedding model"
        return m
