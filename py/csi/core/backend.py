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

    In order: ``repetition_penalty`` (HF semantics, over the last ``repetition_window`` tokens of
    the sequence, all of it when 0), ``frequency_penalty`` and ``presence_penalty`` (OpenAI
    semantics, over the tokens generated so far), ``logit_bias``; log-probabilities are taken of
    that distribution; then ``temperature`` (0 = greedy), ``top_k`` (0 = off), ``top_p`` (1 = off)
    and a draw from the backend's generator seeded with ``seed`` (``None``: any seed).
    """

    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int | None = None
    repetition_penalty: float = 1.0
    repetition_window: int = 0
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    logit_bias: tuple[tuple[int, float], ...] = ()
    logprobs: bool = False
    top_logprobs: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "temperature": self.temperature,
            "top_k": self.top_k,
            "top_p": self.top_p,
            "seed": self.seed,
            "repetition_penalty": self.repetition_penalty,
            "repetition_window": self.repetition_window,
            "frequency_penalty": self.frequency_penalty,
            "presence_penalty": self.presence_penalty,
            "logit_bias": [list(b) for b in self.logit_bias],
            "logprobs": self.logprobs,
            "top_logprobs": self.top_logprobs,
        }


@dataclass(frozen=True)
class StepResult:
    """The token a step chose and, when asked for, its log-probability and the top alternatives."""

    token: int
    logprob: float | None = None
    top: tuple[tuple[int, float], ...] = ()


@dataclass
class Embeddings:
    """Mean-pooled, L2-normalized sentence embeddings and the tokens they cost."""

    vectors: list[list[float]]
    prompt_tokens: int
    dims: int = field(default=0)


class Backend(Protocol):
    """Model execution: tokenizers, forward passes with a backend-side KV cache, sampling.

    One KV cache per loaded chat model, owned here: ``reuse_prefix`` fits it to a new prompt,
    ``step`` appends tokens to it and returns the next token chosen with the parameters last given
    to ``set_sampling``.
    """

    async def load_model(self, model_id: str, device: str, progress: ProgressFn | None) -> ModelInfo:
        """Load tokenizer and weights; report ``{stage, file, loaded, total}`` progress."""
        ...

    async def unload_model(self, model_id: str) -> None: ...

    def apply_chat_template(self, model_id: str, messages: list[dict[str, str]]) -> list[int]:
        """Token ids of ``messages`` rendered by the model's chat template, generation prompt added."""
        ...

    def encode(self, model_id: str, text: str, add_special_tokens: bool = False) -> list[int]:
        """Token ids of ``text``; with ``add_special_tokens`` what the tokenizer adds (a BOS, say)."""
        ...

    def decode(self, model_id: str, ids: list[int]) -> str:
        """Text of ``ids``, special tokens skipped."""
        ...

    def token_bytes(self, model_id: str) -> TokenBytes | None:
        """The bytes of every token (``None`` if the tokenizer's decoder is not byte-exact)."""
        ...

    def reuse_prefix(self, model_id: str, ids: list[int]) -> int:
        """Start a prompt: keep the longest prefix of the KV cache that ``ids`` begins with, but never
        all of ``ids`` (its last token must run to give logits); drop the rest. Return how many
        tokens were kept (``[]`` drops the cache). The backend alone knows what its cache holds."""
        ...

    def set_sampling(self, model_id: str, params: SamplingParams) -> None:
        """Start a request: these parameters, a generator seeded anew, no tokens generated yet."""
        ...

    def next_choice(self, model_id: str) -> None:
        """Start the next choice of the same request: generated-token counts restart."""
        ...

    async def step(self, model_id: str, ids: list[int]) -> StepResult:
        """Run ``ids`` through the model after the cached tokens and choose the next token."""
        ...

    async def embed(self, model_id: str, texts: list[str]) -> Embeddings: ...

    def builtin_models(self) -> tuple[str, ...]:
        """Model ids this backend can load without the network."""
        ...

    async def load_tokenizer(self, model_id: str) -> None:
        """Make ``count_tokens`` work for ``model_id`` (a loaded or built-in model); idempotent."""
        ...

    def count_tokens(self, model_id: str, texts: list[str]) -> list[int]:
        """Token counts of ``texts`` without special tokens, one batch per call."""
        ...
