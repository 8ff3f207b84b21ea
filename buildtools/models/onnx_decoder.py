"""Export a Hugging Face decoder to ONNX in transformers.js's decoder-with-past layout, and check it.

The layout: inputs ``input_ids``, ``attention_mask``, ``position_ids``, ``past_key_values.<i>.key``
and ``.value``; outputs ``logits`` and ``present.<i>.key``/``.value``. Traced with a cache of 3
and 2 new tokens, so neither the empty cache nor the one-token step is baked in. Models with
sliding-window layers (Gemma 3) get their windowed mask built in the graph as well (``WindowedDecoder``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch
from transformers import DynamicCache

from .traceable_decoder import OnnxDecoder, _additive_causal_mask

ONNX_OPSET = 17
MAX_LOGIT_DIFF = 1e-4


@dataclass(frozen=True)
class CacheShape:
    """The KV cache's shape: one key and one value ``[1, kv_heads, past, head_dim]`` per layer."""

    layers: int
    kv_heads: int
    head_dim: int


def _io_names(shape: CacheShape) -> tuple[list[str], list[str]]:
    inputs = ["input_ids", "attention_mask", "position_ids"]
    outputs = ["logits"]
    for i in range(shape.layers):
        inputs += [f"past_key_values.{i}.key", f"past_key_values.{i}.value"]
        outputs += [f"present.{i}.key", f"present.{i}.value"]
    return inputs, outputs


def _inputs(ids: list[int], past: list[np.ndarray] | list[torch.Tensor]) -> tuple[torch.Tensor, ...]:
    start = past[0].shape[2] if past else 0
    n = len(ids)
    return (torch.tensor([ids]), torch.ones(1, start + n, dtype=torch.long),
            torch.arange(start, start + n)[None], *(torch.as_tensor(p) for p in past))


def _sliding_window(model: torch.nn.Module) -> int | None:
    """The window of a model whose config mixes sliding-window and global layers (``None``: no window)."""
    config = model.config  # type: ignore[union-attr]
    window = getattr(config, "sliding_window", None)
    return window if window and "sliding_attention" in (getattr(config, "layer_types", None) or ()) else None


class WindowedDecoder(OnnxDecoder):
    """``OnnxDecoder`` for a model with sliding-window layers: the masks of both kinds of layer,
    built from tensor ops (query ``past + i`` sees key ``j`` iff ``past + i - window < j <= past + i``)."""

    def __init__(self, model: torch.nn.Module, window: int) -> None:
        super().__init__(model)  # type: ignore[arg-type]
        self.window = window

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, position_ids: torch.Tensor,
                *past: torch.Tensor) -> tuple[torch.Tensor, ...]:
        cache = DynamicCache()  # without the config: every layer keeps its whole past (the graph's cache layout)
        for layer in range(len(past) // 2):
            cache.update(past[2 * layer], past[2 * layer + 1], layer)
        dtype = self.model.dtype
        full = _additive_causal_mask(input_ids, attention_mask, dtype)
        q_ones, kv_ones = torch.ones_like(input_ids), torch.ones_like(attention_mask)
        q_index = q_ones.cumsum(-1) - 1 + kv_ones.sum(-1, keepdim=True) - q_ones.sum(-1, keepdim=True)
        kv_index = kv_ones.cumsum(-1) - 1
        near = (q_index[:, :, None] - kv_index[:, None, :]) < self.window
        blocked = torch.full((), torch.finfo(dtype).min, dtype=dtype)
        sliding = torch.where(near[:, None, :, :], full, blocked)
        out = self.model(input_ids=input_ids, attention_mask={"full_attention": full, "sliding_attention": sliding},
                         position_ids=position_ids, past_key_values=cache, use_cache=True)
        presents: list[torch.Tensor] = []
        for layer in out.past_key_values.layers:
            presents += [layer.keys, layer.values]
        return (out.logits, *presents)


def export_decoder(model: torch.nn.Module, shape: CacheShape, path: Path, seed: int) -> None:
    """Export ``model`` (a ``*ForCausalLM``) to ``path`` with its KV cache as inputs and outputs."""
    input_names, output_names = _io_names(shape)
    axes: dict[str, dict[int, str]] = {
        "input_ids": {1: "sequence_length"}, "attention_mask": {1: "total_sequence_length"},
        "position_ids": {1: "sequence_length"}, "logits": {1: "sequence_length"},
    }
    for name in input_names[3:]:
        axes[name] = {2: "past_sequence_length"}
    for name in output_names[1:]:
        axes[name] = {2: "total_sequence_length"}
    generator = torch.Generator().manual_seed(seed)
    past = [torch.randn(1, shape.kv_heads, 3, shape.head_dim, generator=generator) for _ in range(2 * shape.layers)]
    path.parent.mkdir(parents=True, exist_ok=True)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        window = _sliding_window(model)
        wrapper = OnnxDecoder(model) if window is None else WindowedDecoder(model, window)  # type: ignore[arg-type]
        torch.onnx.export(wrapper.eval(), _inputs([5, 6], past), str(path), dynamo=False,
                          opset_version=ONNX_OPSET, input_names=input_names, output_names=output_names,
                          dynamic_axes=axes, do_constant_folding=True)
    onnx.checker.check_model(str(path))


def verify_decoder(model: torch.nn.Module, shape: CacheShape, path: Path, vocab_size: int, seed: int,
                   max_diff: float = MAX_LOGIT_DIFF) -> float:
    """ORT against PyTorch: a prefill, then three one-token steps on the cache. Raise on mismatch."""
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, vocab_size, (12,), generator=generator).tolist()
    with torch.no_grad():
        reference = model(input_ids=torch.tensor([ids])).logits[0].numpy()
    input_names, _ = _io_names(shape)
    past: list[np.ndarray] = [np.zeros((1, shape.kv_heads, 0, shape.head_dim), np.float32)] * (2 * shape.layers)
    worst, done = 0.0, 0
    for chunk in (ids[:9], ids[9:10], ids[10:11], ids[11:12]):
        feeds = {name: np.asarray(t) for name, t in zip(input_names, _inputs(chunk, past), strict=True)}
        logits, *past = session.run(None, feeds)
        worst = max(worst, float(np.abs(logits[0] - reference[done:done + len(chunk)]).max()))
        done += len(chunk)
    if not worst < max_diff:
        raise RuntimeError(f"ONNX/torch logits mismatch: max abs diff {worst:.3g}")
    return worst
