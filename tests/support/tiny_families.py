"""Tiny random-weight models of the Qwen2, Qwen3, Gemma 3 and Phi-3 families, made by transformers, with
tiny-chat's tokenizer and chat template: the sources the GGUF family tests convert with llama.cpp's
converter and hold the import to."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import torch

from tests.support.gguf_files import TINY_CHAT

COMMON: dict[str, Any] = dict(vocab_size=4096, hidden_size=256, intermediate_size=512, num_attention_heads=4,
                              num_key_value_heads=2, max_position_embeddings=1024, rms_norm_eps=1e-6,
                              initializer_range=0.08, bos_token_id=None, eos_token_id=2, pad_token_id=0)
# What each family's tiny model exercises, beyond the common shape.
FAMILIES: dict[str, dict[str, Any]] = {
    # q/k/v biases (Qwen2, Qwen2.5), an output matrix of its own
    "qwen2": dict(model_type="qwen2", num_hidden_layers=2, tie_word_embeddings=False, rope_theta=1000000.0),
    # per-head q/k norms, a head size that is not hidden/heads, tied embeddings
    "qwen3": dict(model_type="qwen3", num_hidden_layers=2, head_dim=96, tie_word_embeddings=True,
                  rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}),
    # six layers: five sliding-window ones (window 4, local rope base) and a global one (linear rope
    # scaling); (1 + w) norms before and after attention and MLP, q/k norms, head size 96 (not
    # hidden/heads), queries scaled by 1/sqrt(head_dim), final logit soft-capping, GELU-tanh
    "gemma3": dict(model_type="gemma3_text", num_hidden_layers=6, head_dim=96, query_pre_attn_scalar=96,
                   sliding_window=4, final_logit_softcapping=30.0, tie_word_embeddings=True,
                   rope_parameters={"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
                                    "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}),
    # fused qkv and gate/up projections, partial rotary (3/4 of each head), an output matrix of its own
    "phi3": dict(model_type="phi3", num_hidden_layers=2, tie_word_embeddings=False,
                 original_max_position_embeddings=1024,
                 rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.75}),
    # LongRoPE (Phi-3.5-mini, Phi-4-mini): per-frequency short and long factors, an attention factor
    # (here sqrt(1 + ln 4 / ln 512), from 2048 positions over the original 512)
    "phi3-longrope": dict(model_type="phi3", num_hidden_layers=2, tie_word_embeddings=False,
                          max_position_embeddings=2048, original_max_position_embeddings=512,
                          rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0,
                                           "partial_rotary_factor": 0.75, "original_max_position_embeddings": 512,
                                           "short_factor": [1.0 + 0.04 * i for i in range(24)],
                                           "long_factor": [1.0 + 0.5 * i for i in range(24)]}),
}


def make_family_model(family: str, folder: Path, seed: int = 0) -> torch.nn.Module:
    """The family's tiny model (random weights, norms included) saved in ``folder`` with tiny-chat's
    tokenizer files; returned in eval mode, float32."""
    from transformers import AutoConfig, AutoModelForCausalLM

    spec = dict(FAMILIES[family])
    config = AutoConfig.for_model(spec.pop("model_type"), **{**COMMON, **spec})
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32, attn_implementation="eager")
    generator = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:  # not the 1s (0s for Gemma) they start as: their storage must matter
                base = 0.0 if family == "gemma3" else 1.0
                p.copy_(base + torch.empty(p.shape).uniform_(-0.5, 0.5, generator=generator))
    model.eval()
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    shutil.copy(TINY_CHAT / "tokenizer.json", folder / "tokenizer.json")
    tok_config = json.loads((TINY_CHAT / "tokenizer_config.json").read_text())
    tok_config["tokenizer_class"] = "GPT2Tokenizer"  # what llama.cpp's Phi-3 converter needs to read BPE
    (folder / "tokenizer_config.json").write_text(json.dumps(tok_config, indent=2))
    return model
