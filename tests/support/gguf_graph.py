"""csi's GGUF decoder graph (``csi.gguf.graph``) made runnable in CPython: the file read by gguf-py
(metadata as plain values, the tensor table), the graph written to a model folder's
``onnx/model.onnx`` and its weights buffer filled as the page's loader fills it, with gguf-py's own
dequantization (the page's, ``worker/gguf_dequant.js``, is held to gguf-py bit for bit elsewhere)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from csi.gguf.graph import WEIGHTS_FILE, DecoderGraph, decoder_graph
from csi.gguf.spec import TensorInfo


def plain_gguf(path: Path) -> tuple[dict[str, Any], list[TensorInfo]]:
    """The file's metadata (plain Python values) and tensor table, as the worker's reader gives them."""
    from buildtools.models.gguf_import import read_header

    return read_header(path)


def int8_rows(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows requantized to int8 with a float32 scale each (max |w| / 127), as the page's
    ``worker/gguf_int8.js`` does."""
    scale = (np.abs(values).max(axis=1) / np.float32(127)).astype(np.float32)
    scale[scale == 0] = 1
    return np.clip(np.rint(values / scale[:, None]), -127, 127).astype(np.int8), scale


def graph_folder(path: Path, folder: Path, form: str = "fp32") -> DecoderGraph:
    """Write the GGUF at ``path`` as the model folder ``folder`` (config and ONNX with its weights)."""
    from gguf import GGMLQuantizationType
    from gguf.quants import dequantize

    meta, tensors = plain_gguf(path)
    graph = decoder_graph(meta, tensors, form)
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    buffer = np.zeros(graph.weights_bytes // 4, np.float32)
    data = buffer.view(np.uint8)
    for w in graph.weights:
        rows = np.asarray(raw[w.offset:w.offset + w.size]).reshape(w.rows, -1)
        values = dequantize(rows, GGMLQuantizationType(w.type)).astype(np.float32).reshape(w.rows, w.cols)
        if w.row_order is not None:
            values = values[list(w.row_order)]
        if w.form == "f32":
            buffer[w.at // 4:w.at // 4 + w.rows * w.cols] = values.ravel()
            continue
        q, scale = int8_rows(values)
        data[w.at:w.at + q.size] = (q if w.form == "i8" else q.T).ravel().view(np.uint8)
        buffer[w.scale_at // 4:w.scale_at // 4 + w.rows] = scale
    (folder / "onnx").mkdir(parents=True, exist_ok=True)
    (folder / "onnx" / "model.onnx").write_bytes(graph.model)
    buffer.tofile(folder / "onnx" / WEIGHTS_FILE)
    (folder / "config.json").write_text(json.dumps(graph.spec.config, indent=2))
    return graph
