"""The loading role of the Pyodide backend: models loaded by the bridge (transformers.js)."""

from __future__ import annotations

from dataclasses import asdict
from json import dumps, loads
from typing import Any

from pyodide.ffi import JsException, create_proxy, to_js

from ...core.backend import ModelInfo, ProgressFn
from ...core.sampling_defaults import from_generation_config
from ...errors import ModelLoadError
from ...gguf.ids import is_gguf_id
from ...gguf.page import page_model
from .bridge_state import BridgeState


class PyodideLoading(BridgeState):
    """``Loading`` over the bridge: built-in models from the site, others from the Hub."""

    async def load_model(self, model_id: str, device: str, progress: ProgressFn | None,
                         hub: str | None = None, gguf_budget: int | None = None) -> ModelInfo:
        def on_progress(p: Any) -> None:
            if progress is not None:
                progress(p.to_py())

        callback = create_proxy(on_progress)
        try:
            if is_gguf_id(model_id):
                info = loads(await self._load_gguf(model_id, device, callback, gguf_budget))
            else:
                info = loads(await self._bridge.loadModel(model_id, device, callback, None, hub))
        except JsException as exc:
            raise ModelLoadError(f"could not load model {model_id!r}: {exc.message}", "model") from None
        finally:
            callback.destroy()
        self._eos[model_id] = tuple(info["eos_token_ids"])
        return ModelInfo(
            model_id=model_id,
            kind=info["kind"],
            context_length=int(info["context_length"]),
            eos_token_ids=tuple(info["eos_token_ids"]),
            vocab_size=int(info["vocab_size"]),
            sampling=from_generation_config(info.get("generation_config")),
        )

    async def _load_gguf(self, model_id: str, device: str, callback: Any, budget: int | None) -> str:
        """A GGUF file opened as it is: the worker reads its header, this writes its graph and files
        (``csi.gguf``), the worker expands its weights into the graph's buffer and loads it."""
        header = await self._bridge.openGGUF(model_id, callback)
        try:
            model = page_model(str(header), device, budget)
        except ValueError as exc:  # GGUFModelError, GGUFTokenizerError: the file's model is not one we run
            self._bridge.forgetGGUF(model_id)
            raise ModelLoadError(f"could not load model {model_id!r}: {exc}", "model") from None
        weights = dumps([asdict(w) for w in model.graph.weights])
        return str(await self._bridge.loadGGUF(model_id, device, callback, to_js(model.graph.model),
                                               dumps(model.files), weights, model.graph.weights_bytes))

    def cancel_loads(self) -> None:
        self._bridge.abortLoads()

    async def unload_model(self, model_id: str) -> None:
        self._insides.pop(model_id, None)
        await self._bridge.unloadModel(model_id)

    def builtin_models(self) -> tuple[str, ...]:
        return tuple(self._bridge.builtinModels())
