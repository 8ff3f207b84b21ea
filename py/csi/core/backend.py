"""The port through which the engine runs models, split by role (loading, tokenizers, generation,
embeddings, insides) with ``Backend`` their union, and the plain data it exchanges."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from .grammar import Grammar
from .insides import InsidesArrays
from .request import SamplingParams
from .sampling_defaults import SamplingDefaults
from .token_bytes import TokenBytes

__all__ = ["Backend", "Decoding", "Embedder", "Embeddings", "Insides", "Loading", "ModelInfo", "ModelKind",
           "ProgressFn", "SamplingParams", "StepResult", "Tokenizers", "reusable_prefix"]

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
    remote: str | None = None
    """The base URL of the server that serves it (``None``: it runs here)."""
    fallback: str | None = None
    """Why the server serves a ``prefer-local`` model: the local load's error."""
    sampling: SamplingDefaults = field(default_factory=SamplingDefaults)
    """The sampling the model declares for what a request leaves out."""


@dataclass(frozen=True)
class StepResult:
    """The token a step chose and, when asked for, its log-probability and the top alternatives."""

    token: int
    logprob: float | None = None
    top: tuple[tuple[int, float], ...] = ()
    grammar_s: float = 0.0
    """Seconds this step spent on the grammar (mask, applying it, accepting the token)."""


@dataclass
class Embeddings:
    """Mean-pooled, L2-normalized sentence embeddings and the tokens they cost."""

    vectors: list[list[float]]
    prompt_tokens: int
    dims: int = field(default=0)


def reusable_prefix(cached: list[int], ids: list[int]) -> int:
    """How many leading tokens of a cache holding ``cached`` a prompt ``ids`` can keep: their common
    prefix, never all of ``ids`` (what ``Decoding.reuse_prefix`` keeps)."""
    n = min(len(cached), len(ids) - 1)
    i = 0
    while i < n and cached[i] == ids[i]:
        i += 1
    return i


class Loading(Protocol):
    """Loading and unloading models, and which models load without the network."""

    async def load_model(self, model_id: str, device: str, progress: ProgressFn | None,
                         hub: str | None = None, gguf_budget: int | None = None) -> ModelInfo:
        """Load tokenizer and weights; report ``{stage, file, loaded, total}`` progress. A model that
        is not built in comes from the Hugging Face Hub, or from the mirror at ``hub`` (its base URL).
        A GGUF file's weights stay float32 up to ``gguf_budget`` bytes (``None``: the backend's default)."""
        ...

    def cancel_loads(self) -> None:
        """Stop the downloads of a load under way (the load then fails)."""
        ...

    async def unload_model(self, model_id: str) -> None: ...

    def builtin_models(self) -> tuple[str, ...]:
        """Model ids this backend can load without the network."""
        ...


class Tokenizers(Protocol):
    """Text to token ids and back: the loaded models' tokenizers and chat templates, and token counters
    for models that need not be loaded."""

    def chat_template(self, model_id: str) -> str | None:
        """The model's chat template (its source), if it has one."""
        ...

    def apply_chat_template(self, model_id: str, messages: list[dict[str, Any]],
                            tools: list[dict[str, Any]] | None = None,
                            variables: dict[str, Any] | None = None) -> list[int]:
        """Token ids of ``messages`` (and ``tools``, OpenAI-shaped) rendered by the model's chat
        template, generation prompt added; ``variables`` are more of the template's inputs (such
        as ``enable_thinking``)."""
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

    async def load_tokenizer(self, model_id: str) -> None:
        """Make ``count_tokens`` work for ``model_id`` (a loaded or built-in model); idempotent."""
        ...

    def count_tokens(self, model_id: str, texts: list[str]) -> list[int]:
        """Token counts of ``texts`` without special tokens, one batch per call."""
        ...


class Decoding(Protocol):
    """Forward passes over a backend-side KV cache and the choice of each next token.

    One KV cache per loaded chat model, owned here: ``reuse_prefix`` fits it to a new prompt,
    ``step`` appends tokens to it and returns the next token chosen with the parameters last given
    to ``set_sampling``.
    """

    async def compile_grammar(self, model_id: str, grammar: Grammar) -> None:
        """Compile ``grammar`` for this model's vocabulary (xgrammar) unless it is cached. Raise
        ``GrammarError`` with the compiler's message."""
        ...

    def reuse_prefix(self, model_id: str, ids: list[int]) -> int:
        """Start a prompt: keep the longest prefix of the KV cache that ``ids`` begins with, but never
        all of ``ids`` (its last token must run to give logits); drop the rest. Return how many
        tokens were kept (``[]`` drops the cache). The backend alone knows what its cache holds."""
        ...

    def set_sampling(self, model_id: str, params: SamplingParams) -> None:
        """Start a request: these parameters, a generator seeded anew, no tokens generated yet; a
        grammar (compiled before) starts matching from its beginning."""
        ...

    def next_choice(self, model_id: str) -> None:
        """Start the next choice of the same request: generated-token counts and the grammar restart."""
        ...

    def latency_breakdown(self, model_id: str) -> dict[str, list[float]]:
        """Seconds per step of the current request (since ``set_sampling``), by stage: WebLLM's
        ``latencyBreakdown`` keys (``logitProcessorTime``, ``logitBiasTime``, ``penaltyTime``,
        ``sampleTime``, ``totalTime``, ``grammarBitmaskTime``) and ``forwardTime``."""
        ...

    async def step(self, model_id: str, ids: list[int]) -> StepResult:
        """Run ``ids`` through the model after the cached tokens and choose the next token."""
        ...


class PromptCaching(Protocol):
    """A decoding backend that keeps KV caches beyond the process (the browser's storage), so a prompt
    that an earlier visit or another tab ran starts where that one ended."""

    async def restore_prefix(self, model_id: str, ids: list[int]) -> int:
        """Before ``reuse_prefix``: when a kept cache holds more of ``ids`` than the cache in memory,
        make it the model's cache; return how many tokens it brought (0: none). Never raises: a kept
        cache that cannot be read is a miss."""
        ...

    async def remember(self, model_id: str) -> None:
        """After a request: keep the model's cache (in the background; the cache may change once this
        returns). Never raises."""
        ...


class Verifying(Protocol):
    """A decoding backend that checks drafted tokens in one forward pass (speculative decoding)."""

    async def verify(self, model_id: str, ids: list[int], drafts: list[int]) -> list[StepResult]:
        """Run ``ids`` then ``drafts`` after the cached tokens in one forward pass and choose the token
        at each position exactly as ``step`` would (the sampling state advancing as it would), while
        the choices agree with ``drafts``: the choices made, the accepted drafts then the first that
        differs (or the one after them all). The cache keeps ``ids`` and the accepted drafts. Where it
        cannot check drafts (a page's logit processor), it runs ``ids`` alone: one choice."""
        ...


class Embedder(Protocol):
    """Sentence embeddings from an embedding model."""

    async def embed(self, model_id: str, texts: list[str]) -> Embeddings: ...

    async def embed_ids(self, model_id: str, ids: list[list[int]]) -> Embeddings:
        """Embed token ids as they are (no special tokens added), pooled and normalized as ``embed``."""
        ...


class Insides(Protocol):
    """A chat model's intermediate tensors, for the insides view."""

    async def insides(self, model_id: str, ids: list[int], *, fft: bool, keep: int, top_k: int) -> InsidesArrays:
        """Run ``ids`` (no cache) through a session of the model that also outputs the tensors
        ``csi.core.insides.find_tensors`` names (made on first use, freed with the model). Each vector:
        the real part of its DFT if ``fft``, then its first ``keep`` values (0: all). Raise
        ``ModelNotSupportedError`` when the graph lacks them."""
        ...


class Backend(Loading, Tokenizers, Decoding, Embedder, Insides, Protocol):
    """Model execution, every role in one object: what an adapter implements and the composition root
    (``csi.runtime``) receives; each consumer asks only for the roles it uses."""
