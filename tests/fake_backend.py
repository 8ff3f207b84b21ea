"""A scripted Backend for fast tests of the engine's pure logic (never the only test of a feature)."""

from __future__ import annotations

from csi.backend import Embeddings, ModelInfo, ProgressFn, SamplingParams

EOS = 0


class ScriptedBackend:
    """Tokens are UTF-8 byte strings from ``vocab``; ``step`` replays ``script`` then repeats its last."""

    def __init__(self, vocab: list[bytes], script: list[int], context_length: int = 64) -> None:
        self.vocab = vocab
        self.script = script
        self.context_length = context_length
        self.fed: list[list[int]] = []
        self.sampling: SamplingParams | None = None
        self._pos = 0

    async def load_model(self, model_id: str, device: str, progress: ProgressFn | None) -> ModelInfo:
        if progress:
            progress({"stage": "ready", "file": None, "loaded": 1, "total": 1, "model": model_id})
        kind = "embedding" if model_id.startswith("embed") else "chat"
        return ModelInfo(model_id, kind, self.context_length, (EOS,), len(self.vocab))  # type: ignore[arg-type]

    async def unload_model(self, model_id: str) -> None:
        pass

    def apply_chat_template(self, model_id: str, messages: list[dict[str, str]]) -> list[int]:
        return [1] * sum(len(m["content"]) + 2 for m in messages)

    def encode(self, model_id: str, text: str) -> list[int]:
        return [1] * len(text)

    def decode(self, model_id: str, ids: list[int]) -> str:
        return b"".join(self.vocab[i] for i in ids).decode("utf-8", errors="replace")

    def token_bytes(self, model_id: str) -> None:
        return None  # decode through the backend, like a tokenizer with an unknown decoder

    def reset(self, model_id: str) -> None:
        self._pos = 0

    def set_sampling(self, model_id: str, params: SamplingParams) -> None:
        self.sampling = params

    async def step(self, model_id: str, ids: list[int]) -> int:
        self.fed.append(list(ids))
        token = self.script[min(self._pos, len(self.script) - 1)]
        self._pos += 1
        return token

    async def embed(self, model_id: str, texts: list[str]) -> Embeddings:
        return Embeddings([[1.0, 0.0] for _ in texts], sum(len(t) for t in texts), 2)
