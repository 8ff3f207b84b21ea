"""A scripted ``Backend`` for fast tests of the engine's pure logic (never the only test of a
feature), public as pharia-skill ships its ``StubCsi``."""

from __future__ import annotations

from typing import Any

from .core.backend import Embeddings, ModelInfo, ModelKind, ProgressFn, SamplingParams, StepResult, reusable_prefix
from .core.grammar import Grammar, GrammarError
from .core.insides import InsidesArrays
from .errors import ModelNotSupportedError

EOS = 0


class ScriptedBackend:
    """Tokens are UTF-8 byte strings from ``vocab``; ``step`` replays ``script`` then repeats its last."""

    def __init__(self, vocab: list[bytes], script: list[int], context_length: int = 64) -> None:
        self.vocab = vocab
        self.script = script
        self.context_length = context_length
        self.fed: list[list[int]] = []
        self.sampling: SamplingParams | None = None
        self.cache: list[int] = []
        self._pos = 0

    async def load_model(self, model_id: str, device: str, progress: ProgressFn | None,
                         hub: str | None = None, gguf_budget: int | None = None) -> ModelInfo:
        if progress:
            progress({"stage": "ready", "file": None, "loaded": 1, "total": 1, "model": model_id})
        kind: ModelKind = "embedding" if model_id.startswith("embed") else "chat"
        return ModelInfo(model_id, kind, self.context_length, (EOS,), len(self.vocab))

    async def unload_model(self, model_id: str) -> None:
        pass

    def cancel_loads(self) -> None:
        pass

    def chat_template(self, model_id: str) -> str | None:
        return "{# scripted: each message is its characters plus two #}"

    def apply_chat_template(self, model_id: str, messages: list[dict[str, Any]],
                            tools: list[dict[str, Any]] | None = None,
                            variables: dict[str, Any] | None = None) -> list[int]:
        return [1] * sum(len(m["content"]) + 2 for m in messages)

    async def compile_grammar(self, model_id: str, grammar: Grammar) -> None:
        raise GrammarError("the scripted backend has no grammar compiler")

    async def insides(self, model_id: str, ids: list[int], *, fft: bool, keep: int, top_k: int) -> InsidesArrays:
        raise ModelNotSupportedError("the scripted backend has no insides", "model")

    def encode(self, model_id: str, text: str, add_special_tokens: bool = False) -> list[int]:
        return [1] * len(text)

    def decode(self, model_id: str, ids: list[int]) -> str:
        return b"".join(self.vocab[i] for i in ids).decode("utf-8", errors="replace")

    def builtin_models(self) -> tuple[str, ...]:
        return ()

    async def load_tokenizer(self, model_id: str) -> None:
        pass

    def count_tokens(self, model_id: str, texts: list[str]) -> list[int]:
        return [len(t) for t in texts]

    def token_bytes(self, model_id: str) -> None:
        return None  # decode through the backend, like a tokenizer with an unknown decoder

    def reuse_prefix(self, model_id: str, ids: list[int]) -> int:
        self._pos = 0  # each request replays the script from its start
        n = reusable_prefix(self.cache, ids)
        self.cache = self.cache[:n]
        return n

    def set_sampling(self, model_id: str, params: SamplingParams) -> None:
        self.sampling = params

    def next_choice(self, model_id: str) -> None:
        pass

    def latency_breakdown(self, model_id: str) -> dict[str, list[float]]:
        return {"forwardTime": [0.0] * self._pos}

    async def step(self, model_id: str, ids: list[int]) -> StepResult:
        self.fed.append(list(ids))
        self.cache += ids
        token = self.script[min(self._pos, len(self.script) - 1)]
        self._pos += 1
        return StepResult(token)

    async def embed(self, model_id: str, texts: list[str]) -> Embeddings:
        return Embeddings([[1.0, 0.0] for _ in texts], sum(len(t) for t in texts), 2)

    async def embed_ids(self, model_id: str, ids: list[list[int]]) -> Embeddings:
        return Embeddings([[1.0, 0.0] for _ in ids], sum(len(r) for r in ids), 2)
