"""The embeddings role of the CPython backend: mean-pooled, L2-normalized sentence vectors."""

from __future__ import annotations

import numpy as np

from ...core.backend import Embeddings
from .models import EmbeddingModel, ModelTable


class CPythonEmbedder(ModelTable):
    """``Embedder`` over the loaded embedding models' onnxruntime sessions."""

    async def embed(self, model_id: str, texts: list[str]) -> Embeddings:
        m = self._embedder(model_id)
        enc = m.tokenizer.encode_batch(texts)
        return _pooled(m, np.asarray([e.ids for e in enc], dtype=np.int64),
                       np.asarray([e.attention_mask for e in enc], dtype=np.int64))

    async def embed_ids(self, model_id: str, ids: list[list[int]]) -> Embeddings:
        m = self._embedder(model_id)
        width = max(len(r) for r in ids)
        batch = np.zeros((len(ids), width), dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for i, row in enumerate(ids):
            batch[i, :len(row)], mask[i, :len(row)] = row, 1
        return _pooled(m, batch, mask)


def _pooled(m: EmbeddingModel, ids: np.ndarray, mask: np.ndarray) -> Embeddings:
    feeds = {"input_ids": ids, "attention_mask": mask}
    if "token_type_ids" in {i.name for i in m.session.get_inputs()}:
        feeds["token_type_ids"] = np.zeros_like(ids)
    hidden = m.session.run(None, feeds)[0]
    summed = (hidden * mask[..., None]).sum(axis=1)
    pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1)
    normed = pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
    return Embeddings(vectors=normed.tolist(), prompt_tokens=int(mask.sum()), dims=normed.shape[1])
