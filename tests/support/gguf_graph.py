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


def block8_rows(values: np.ndarray, block: int = 32) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows requantized to 8-bit blocks (the graph's ``nbits8`` form), as the page's
    ``worker/gguf_int8.js`` does: each block of ``block`` values (the row zero-padded to whole blocks)
    over its range with 0 in it, scale ``(hi - lo) / 255`` (1 for a block of zeros), zero point
    ``rint(-lo / scale)``, values ``rint(v / scale) + zero point`` clipped to 0..255. Returns the
    values ``[rows, blocks, block]``, scales and zero points ``[rows * blocks]``."""
    rows, cols = values.shape
    blocks = -(-cols // block)
    padded = np.zeros((rows, blocks * block), np.float32)
    padded[:, :cols] = values
    b = padded.reshape(rows, blocks, block)
    lo = np.minimum(b.min(axis=2), np.float32(0))
    hi = np.maximum(b.max(axis=2), np.float32(0))
    scale = ((hi - lo) / np.float32(255)).astype(np.float32)
    scale[scale == 0] = 1
    zp = np.clip(np.rint(-lo / scale), 0, 255).astype(np.float32)
    q = np.clip(np.rint(b / scale[:, :, None]) + zp[:, :, None], 0, 255).astype(np.uint8)
    return q, scale.ravel(), zp.astype(np.uint8).ravel()


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
        if w.form == "b8":
            q8, scales, zps = block8_rows(values)
            data[w.at:w.at + q8.size] = q8.ravel()
            buffer[w.scale_at // 4:w.scale_at // 4 + scales.size] = scales
            data[w.zp_at:w.zp_at + zps.size] = zps
            continue
        q, scale = int8_rows(values)
        data[w.at:w.at + q.size] = (q if w.form == "i8" else q.T).ravel().view(np.uint8)
        buffer[w.scale_at // 4:w.scale_at // 4 + w.rows] = scale
    (folder / "onnx").mkdir(parents=True, exist_ok=True)
    (folder / "onnx" / "model.onnx").write_bytes(graph.model)
    buffer.tofile(folder / "onnx" / WEIGHTS_FILE)
    (folder / "config.json").write_text(json.dumps(graph.spec.config, indent=2))
    return graph


def run_graph(folder: Path, ids: list[int], steps: int) -> tuple[list[int], np.ndarray]:
    """A prefill then one-token steps on the graph's KV cache: greedy tokens and each step's logits."""
    import onnxruntime as ort

    from buildtools.models.onnx_decoder import CacheShape, _inputs, _io_names

    config = json.loads((folder / "config.json").read_text())
    shape = CacheShape(config["num_hidden_layers"], config["num_key_value_heads"], config["head_dim"])
    names, _ = _io_names(shape)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(folder / "onnx" / "model.onnx"), options, providers=["CPUExecutionProvider"])
    past: list[Any] = [np.zeros((1, shape.kv_heads, 0, shape.head_dim), np.float32)] * (2 * shape.layers)
    chunk, tokens, rows = ids, [], []
    for _ in range(steps):
        feeds = {n: np.asarray(t) for n, t in zip(names, _inputs(chunk, past), strict=True)}
        logits, *past = session.run(None, feeds)
        rows.append(logits[0, -1])
        tokens.append(int(logits[0, -1].argmax()))
        chunk = [tokens[-1]]
    return tokens, np.array(rows)
