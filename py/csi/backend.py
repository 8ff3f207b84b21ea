"""The one protocol through which the engine runs models, and the plain data it exchanges."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from .token_bytes import TokenBytes

ModelKind = Literal["chat", "embedding"]
ProgressFn = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class ModelInfo:
    """What the engine needs to know about a loaded model."""

    model_id: str
    kind: ModelKind
    context_length: int
    eos_token_ids: tuple[int, ...] = ()
    vocab_size: int = 0


@dataclass(frozen=True)
class SamplingParams:
    """Parameters of the per-token whole-vocabulary math the backend performs.

    ``temperature == 0`` means greedy (argmax). ``top_k == 0`` and ``top_p == 1`` disable those
    filters. ``seed`` seeds the backend's generator for this request (``None``: any seed).
    """

    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "temperature": self.temperature,
            "top_k": self.top_k,
            "top_p": self.top_p,
            "seed": self.seed,
        }


@dataclass
class Embeddings:
    """Mean-pooled, L2-normalized sentence embeddings and the tokens they cost."""

    vectors: list[list[float]]
    prompt_tokens: int
    dims: int = field(default=0)


class Backend(Protocol):
    """Model execution: tokenizers, forward passes with a backend-side KV cache, sampling.

    One KV cache per loaded chat model; ``step`` appends tokens to it and returns the next
    token sampled with the parameters last given to ``set_sampling``.
    """

    async def load_model(self, model_id: str, device: str, progress: ProgressFn | None) -> ModelInfo:
        """Load tokenizer and weights; report ``{stage, file, loaded, total}`` progress."""
        ...

    async def unload_model(self, model_id: str) -> None: ...

    def apply_chat_template(self, model_id: str, messages: list[dict[str, str]]) -> list[int]:
        """Token ids of ``messages`` rendered by the model's chat template, generation prompt added."""
        ...

    def encode(self, model_id: str, text: str) -> list[int]:
        """Token ids of ``text`` without special tokens."""
        ...

    def decode(self, model_id: str, ids: list[int]) -> str:
        """Text of ``ids``, special tokens skipped."""
        ...

    def token_bytes(self, model_id: str) -> TokenBytes | None:
        """The bytes of every token (``None`` if the tokenizer's decoder is not byte-exact)."""
        ...

    def reset(self, model_id: str) -> None:
        """Drop the KV cache of a chat model."""
        ...

    def set_sampling(self, model_id: str, params: SamplingParams) -> None: ...

    async def step(self, model_id: str, ids: list[int]) -> int:
        """Run ``ids`` through the model after the cached tokens and sample the next token."""
        ...

    async def embed(self, model_id: str, texts: list[str]) -> Embeddings: ...
