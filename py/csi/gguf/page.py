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

FP32_BUDGET = 1_500_000_000
"""The float32 weights a GGUF may expand to in the page (bytes); past it they are held as int8
(``graph.FORMS``). A 135M model expands to ~0.5 GB; a 0.5B one to ~2 GB, past what the worker's
32-bit WebAssembly memory holds beside onnxruntime's own copies."""


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


def page_model(header_json: str, budget: int = FP32_BUDGET) -> PageModel:
    """The model of the GGUF whose header (``worker/bridge/gguf_source.js``'s ``headerJson``) is given:
    float32 weights (exact) while they fit ``budget`` bytes, else int8."""
    header = json.loads(header_json)
    return gguf_model(header["metadata"], [_tensor(t) for t in header["tensors"]], budget)


def gguf_model(meta: dict[str, Any], tensors: list[TensorInfo], budget: int = FP32_BUDGET) -> PageModel:
    """The model folder of a GGUF from its metadata and tensor table (``page_model``'s, and
    ``build.py import-gguf``'s with no budget)."""
    graph = decoder_graph(meta, tensors)
    if graph.weights_bytes > budget:
        graph = decoder_graph(meta, tensors, "int8")
    config = dict(graph.spec.config)
    tokenizer, tokenizer_config = tokenizer_files(meta, graph.spec.context)
    generation: dict[str, Any] = generation_config_of_gguf(meta)
    generation.update({k: config[k] for k in ("bos_token_id", "eos_token_id", "pad_token_id") if k in config})
    config["transformers.js_config"] = {"dtype": "fp32"}
    files = {"config.json": json.dumps(config), "generation_config.json": json.dumps(generation),
             "tokenizer.json": json.dumps(tokenizer, ensure_ascii=False),
             "tokenizer_config.json": json.dumps(tokenizer_config, ensure_ascii=False)}
    return PageModel(files, graph)
