"""A Hugging Face causal LM as a function of flat tensors (ids, mask, positions, past keys and
values), so the legacy ONNX exporter can trace it in transformers.js's decoder-with-past layout."""

from __future__ import annotations

import torch
from torch import nn
from transformers import DynamicCache, LlamaForCausalLM


def _additive_causal_mask(input_ids: torch.Tensor, attention_mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """4-D additive mask [batch, 1, seq, past+seq] built only from tensor ops (trace-safe).

    Query ``i`` sits at absolute index ``past + i`` and may attend to key ``j`` iff
    ``j <= past + i`` and ``attention_mask[:, j]`` is set.
    """
    q_ones = torch.ones_like(input_ids)
    kv_ones = torch.ones_like(attention_mask)
    past = kv_ones.sum(-1, keepdim=True) - q_ones.sum(-1, keepdim=True)
    q_index = q_ones.cumsum(-1) - 1 + past
    kv_index = kv_ones.cumsum(-1) - 1
    allowed = (kv_index[:, None, :] <= q_index[:, :, None]) & (attention_mask[:, None, :] > 0)
    zero = torch.zeros((), dtype=dtype)
    blocked = torch.full((), torch.finfo(dtype).min, dtype=dtype)
    return torch.where(allowed, zero, blocked)[:, None, :, :]


class OnnxDecoder(nn.Module):
    """Flat-tensor wrapper around ``LlamaForCausalLM`` for the legacy ONNX exporter."""

    def __init__(self, model: LlamaForCausalLM) -> None:
        super().__init__()
        self.model = model

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        position_ids: torch.Tensor,
        *past: torch.Tensor,
    ) -> tuple[torch.Tensor, ...]:
        cache = DynamicCache(config=self.model.config)
        for layer in range(len(past) // 2):
            cache.update(past[2 * layer], past[2 * layer + 1], layer)
        mask = _additive_causal_mask(input_ids, attention_mask, self.model.dtype)
        out = self.model(
            input_ids=input_ids,
            attention_mask=mask,
            position_ids=position_ids,
            past_key_values=cache,
            use_cache=True,
        )
        presents: list[torch.Tensor] = []
        for layer in out.past_key_values.layers:
            presents += [layer.keys, layer.values]
        return (out.logits, *presents)
