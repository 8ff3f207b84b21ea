"""The embeddings role of the Pyodide backend: vectors computed by the bridge, read as one typed array."""

from __future__ import annotations

from json import dumps
from typing import Any

from pyodide.ffi import JsException

from ...core.backend import Embeddings
from ...errors import InternalError
from .bridge_state import BridgeState


class PyodideEmbedder(BridgeState):
    """``Embedder`` over the bridge."""

    async def embed(self, model_id: str, texts: list[str]) -> Embeddings:
        return await self._embeddings(self._bridge.embed, model_id, texts)

    async def embed_ids(self, model_id: str, ids: list[list[int]]) -> Embeddings:
        return await self._embeddings(self._bridge.embedIds, model_id, ids)

    async def _embeddings(self, method: Any, model_id: str, inputs: list[Any]) -> Embeddings:
        try:
            out = await method(model_id, dumps(inputs))
        except JsException as exc:
            raise InternalError(f"embedding failed: {exc.message}") from None
        rows, dims = (int(d) for d in out.dims)
        flat = out.data.to_py().tolist()
        vectors = [flat[i * dims : (i + 1) * dims] for i in range(rows)]
        return Embeddings(vectors=vectors, prompt_tokens=int(out.tokens), dims=dims)
