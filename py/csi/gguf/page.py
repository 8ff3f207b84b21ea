"""A GGUF opened in the page: from the header the worker read, the model folder transformers.js loads
(config, generation config, tokenizer files) and the decoder graph whose weights the worker expands."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .graph import DecoderGraph, decoder_graph
from .sampling import generation_config_of_gguf
from .spec import GGUFModelError, TensorInfo
from .tokenizer import tokenizer_files

FP32_BUDGETS = {"wasm": 1_500_000_000, "webgpu": 750_000_000}
"""The float32 weights a GGUF may expand to in the page (bytes), per device; past it, the device's
compressed form (``COMPRESSED``). On WASM a 135M model expands to ~0.5 GB, a 0.5B one to ~2 GB: past
what the worker's 32-bit WebAssembly memory holds beside onnxruntime's own copies. On WebGPU every
decoded token reads every weight from GPU memory, so float32 is kept for small models only: the
8-bit blocks read a quarter of the bytes."""
COMPRESSED = {"wasm": "int8", "webgpu": "nbits8"}
"""The form of a GGUF's weights past the budget, per device (``graph.FORMS``): ``DynamicQuantizeMatMul``
has WASM kernels and ``MatMulNBits`` none (it expands each weight to float32 at every call there);
``MatMulNBits`` has WebGPU shaders and ``DynamicQuantizeMatMul`` none."""


@dataclass
class PageModel:
    """The files of the model folder (name -> text) and its graph."""

    files: dict[str, str]
    graph: DecoderGraph


def _tensor(t: Any) -> TensorInfo:
    if not isinstance(t, dict):
        raise GGUFModelError("the file's tensor table is not readable")
    return TensorInfo(str(t["name"]), tuple(int(d) for d in t["dims"]), int(t["type"]), int(t["offset"]),
                      int(t["size"]))


def page_model(header_json: str, device: str = "wasm", budget: int | None = None) -> PageModel:
    """The model of the GGUF whose header (``worker/bridge/gguf_source.js``'s ``headerJson``) is given,
    for ``device``: float32 weights (exact) while they fit ``budget`` bytes (default: the device's
    ``FP32_BUDGETS``), else the device's compressed form."""
    header = json.loads(header_json)
    tensors = [_tensor(t) for t in header["tensors"]]
    return gguf_model(header["metadata"], tensors, FP32_BUDGETS.get(device, FP32_BUDGETS["wasm"])
                      if budget is None else budget, COMPRESSED.get(device, "int8"))


def gguf_model(meta: dict[str, Any], tensors: list[TensorInfo], budget: int = FP32_BUDGETS["wasm"],
               compressed: str = "int8") -> PageModel:
    """The model folder of a GGUF from its metadata and tensor table (``page_model``'s, and
    ``build.py import-gguf``'s with no budget): float32 weights while they fit ``budget``, else
    ``compressed``."""
    graph = decoder_graph(meta, tensors)
    if graph.weights_bytes > budget:
        graph = decoder_graph(meta, tensors, compressed)
    config = dict(graph.spec.config)
    tokenizer, tokenizer_config = tokenizer_files(meta, graph.spec.context)
    generation: dict[str, Any] = generation_config_of_gguf(meta)
    generation.update({k: config[k] for k in ("bos_token_id", "eos_token_id", "pad_token_id") if k in config})
    config["transformers.js_config"] = {"dtype": "fp32"}
    files = {"config.json": json.dumps(config), "generation_config.json": json.dumps(generation),
             "tokenizer.json": json.dumps(tokenizer, ensure_ascii=False),
             "tokenizer_config.json": json.dumps(tokenizer_config, ensure_ascii=False)}
    return PageModel(files, graph)
