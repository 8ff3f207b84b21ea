"""The Backend that runs in the Web Worker: calls the JS bridge (worker/bridge.js) via Pyodide.

The only module of ``csi`` that imports ``pyodide``; the worker imports it, nothing else does.
"""

from __future__ import annotations

import json
from typing import Any

from pyodide.ffi import JsException, create_proxy, to_js

from .backend import Embeddings, ModelInfo, ProgressFn, SamplingParams
from .engine import Engine
from .errors import InternalError, ModelLoadError
from .worker_app import Post, WorkerApp


class PyodideBackend:
    """``Backend`` over the JS ``Bridge`` object (transformers.js + onnxruntime-web)."""

    def __init__(self, bridge: Any) -> None:
        self._bridge = bridge

    async def load_model(self, model_id: str, device: str, progress: ProgressFn | None) -> ModelInfo:
        def on_progress(p: Any) -> None:
            if progress is not None:
                progress(p.to_py())

        callback = create_proxy(on_progress)
        try:
            info = json.loads(await self._bridge.loadModel(model_id, device, callback, None))
        except JsException as exc:
            raise ModelLoadError(f"could not load model {model_id!r}: {exc.message}", "model") from None
        finally:
            callback.destroy()
        return ModelInfo(
            model_id=model_id,
            kind=info["kind"],
            context_length=int(info["context_length"]),
            eos_token_ids=tuple(info["eos_token_ids"]),
            vocab_size=int(info["vocab_size"]),
        )

    async def unload_model(self, model_id: str) -> None:
        await self._bridge.unloadModel(model_id)

    def apply_chat_template(self, model_id: str, messages: list[dict[str, str]]) -> list[int]:
        return self._bridge.applyChatTemplate(model_id, json.dumps(messages)).to_py().tolist()

    def encode(self, model_id: str, text: str) -> list[int]:
        return self._bridge.encode(model_id, text).to_py().tolist()

    def decode(self, model_id: str, ids: list[int]) -> str:
        return self._bridge.decode(model_id, to_js(ids))

    def reset(self, model_id: str) -> None:
        self._bridge.reset(model_id)

    def set_sampling(self, model_id: str, params: SamplingParams) -> None:
        self._bridge.setSampling(model_id, json.dumps(params.to_dict()))

    async def step(self, model_id: str, ids: list[int]) -> int:
        try:
            return int(await self._bridge.step(model_id, to_js(ids)))
        except JsException as exc:
            raise InternalError(f"forward pass failed: {exc.message}") from None

    async def embed(self, model_id: str, texts: list[str]) -> Embeddings:
        try:
            out = await self._bridge.embed(model_id, json.dumps(texts))
        except JsException as exc:
            raise InternalError(f"embedding failed: {exc.message}") from None
        rows, dims = (int(d) for d in out.dims)
        flat = out.data.to_py().tolist()
        vectors = [flat[i * dims : (i + 1) * dims] for i in range(rows)]
        return Embeddings(vectors=vectors, prompt_tokens=int(out.tokens), dims=dims)


def create_app(bridge: Any, post: Post) -> WorkerApp:
    """Entry point for worker.js: an app whose engine runs on the JS bridge."""
    return WorkerApp(Engine(PyodideBackend(bridge)), post)
