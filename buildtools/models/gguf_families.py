"""What differs between the model families the GGUF importer reads: their Hugging Face config, the
names of their tensors, what llama.cpp's converter did to some of them, and what is refused.

- ``llama``, ``qwen2``: llama.cpp permutes Llama's q/k rows (undone in ``gguf_import._row_order``);
  Qwen2's q/k/v biases are plain tensors.
- ``qwen3``: per-head RMSNorms of queries and keys (``attn_q_norm``/``attn_k_norm``), a head size
  of its own (``attention.key_length``), no biases unless the file has them.
- ``gemma3`` (``Gemma3ForCausalLM``, text only): llama.cpp's converter stores every RMSNorm weight
  as ``1 + w`` (Gemma's norms scale by ``1 + w``), undone here as transformers does; norms before
  and after attention and the MLP; GELU-tanh MLP; sliding-window layers in llama.cpp's pattern (every
  6th layer global unless ``attention.sliding_window_pattern`` says otherwise) with their own rope
  base (``rope.freq_base_swa``, 10000 when absent, as llama.cpp); linear rope scaling on the global
  layers only; ``final_logit_softcapping`` when present; queries scaled by ``1/sqrt(head_dim)``
  (``1/sqrt(hidden/heads)`` for the 62-layer 27B), as llama.cpp does.
- ``phi3``: fused ``attn_qkv`` and ``ffn_up`` (gate then up) kept fused, as Hugging Face's Phi3 has
  them; partial rotary from ``rope.dimension_count``; the sliding window is ignored, as llama.cpp
  does. LongRoPE files (``rope_factors_long``/``_short``: Phi-3.5-mini, Phi-4-mini, the 128k
  Phi-3s) are imported with their short factors and attention factor, the context capped at the
  original length (``rope.scaling.original_context_length``): what llama.cpp runs at such contexts
  (it takes the long factors only for a context set beyond it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .gguf_import import GGUFModel

ARCHITECTURES = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM",
                 "gemma3": "Gemma3ForCausalLM", "phi3": "Phi3ForCausalLM"}
MODEL_TYPES = {"gemma3": "gemma3_text"}  # GGUF architecture -> Hugging Face model_type, where they differ
# Families whose transformers tokenizer class redoes its pipeline over the one built from the file
# (Qwen's split regex, Gemma's sentencepiece steps and <mask>): a byte-level BPE file of theirs keeps
# the file's own (its tokenizer.ggml.pre split), saved with the generic class.
FILE_TOKENIZER_FAMILIES = ("qwen3", "gemma3", "phi3")

_LAYER = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm", "attn_q": "self_attn.q_proj",
          "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
          "attn_q_norm": "self_attn.q_norm", "attn_k_norm": "self_attn.k_norm", "ffn_gate": "mlp.gate_proj",
          "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}
_LAYER_BY_ARCH = {
    "gemma3": {**_LAYER, "ffn_norm": "pre_feedforward_layernorm", "post_attention_norm": "post_attention_layernorm",
               "post_ffw_norm": "post_feedforward_layernorm"},
    "phi3": {**_LAYER, "attn_qkv": "self_attn.qkv_proj", "ffn_up": "mlp.gate_up_proj"},
}
# The config keys transformers' own GGUF reader leaves at its class defaults, per family: the check
# against transformers' reading takes them from the importer (the weights stay transformers' reading).
UNREAD_BY_TRANSFORMERS = {
    "qwen3": ("head_dim",),
    "gemma3": ("query_pre_attn_scalar", "final_logit_softcapping", "attn_logit_softcapping", "layer_types",
               "sliding_window", "rope_parameters"),
    "phi3": ("rope_parameters", "sliding_window", "original_max_position_embeddings", "pad_token_id"),
}
# llama.cpp ends generation on the file's EOS, EOT and EOM tokens and on tokens it knows by their text;
# the new families' chat templates end turns with these (Qwen's, Phi-3's, Gemma's), which their
# GGUFs do not always name as EOS (Phi-3: <|endoftext|>; Gemma 3 base models: <eos>)
END_OF_TURN = ("<|im_end|>", "<|end|>", "<end_of_turn>")
END_OF_TURN_FAMILIES = ("qwen3", "gemma3", "phi3")
GEMMA3_SWA_PATTERN = 6  # llama.cpp's default for Gemma 3: five sliding-window layers, then a global one
GEMMA3_LOCAL_BASE = 10000.0  # llama.cpp's default rope base of the sliding-window layers


def hf_name(arch: str, name: str) -> str | None:
    """The Hugging Face parameter a GGUF tensor is (``None`` for tensors the model has no use for)."""
    fixed = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
             "output.weight": "lm_head.weight"}
    if name in fixed:
        return fixed[name]
    parts = name.split(".")
    if parts[0] != "blk" or len(parts) != 4:
        return None
    layer, what, kind = parts[1], parts[2], parts[3]
    inner = _LAYER_BY_ARCH.get(arch, _LAYER).get(what)
    return None if inner is None else f"model.layers.{layer}.{inner}.{kind}"


def hf_value(arch: str, name: str, w: np.ndarray) -> np.ndarray:
    """The Hugging Face parameter's value from the GGUF tensor's (dequantized) value."""
    if arch == "gemma3" and name.endswith("norm.weight"):
        return w - np.float32(1.0)  # the converter stored 1 + w; Gemma3RMSNorm adds the 1 itself
    return w


def refuse(model: GGUFModel) -> str | None:
    """Why this file cannot be imported (``None``: it can)."""
    scaling = model.get("rope.scaling.type", "none") or "none"
    if "rope_freqs.weight" in model.tensors:
        return f"{model.arch} models with rope frequency factors (rope_freqs.weight) are not supported"
    factors = {n for n in model.tensors if n.startswith("rope_factors_")}
    if factors and not (model.arch == "phi3" and factors == {"rope_factors_long.weight", "rope_factors_short.weight"}
                        and model.get("rope.scaling.original_context_length")):
        return f"{model.arch} models with LongRoPE (su) rope scaling ({', '.join(sorted(factors))}) are not supported"
    if scaling in ("longrope", "su") and not factors:
        return f"{model.arch} models with LongRoPE rope scaling but no factors are not supported"
    if scaling != "none" and not (model.arch == "gemma3" and scaling == "linear"):
        return f"{model.arch} models with rope scaling are not supported (this file has {scaling!r})"
    if model.get("attn_logit_softcapping"):
        return f"{model.arch} models with attention logit soft-capping are not supported"
    return None


def unread(config: dict[str, Any]) -> dict[str, Any]:
    """The keys of the importer's ``config`` that transformers' GGUF reader would leave at their defaults."""
    arch = {v: k for k, v in MODEL_TYPES.items()}.get(config.get("model_type", ""), config.get("model_type", ""))
    return {k: config[k] for k in UNREAD_BY_TRANSFORMERS.get(arch, ()) if k in config}


def longrope(model: GGUFModel) -> bool:
    return "rope_factors_short.weight" in model.tensors


def context_length(model: GGUFModel) -> int:
    """The model's context: the file's, or for LongRoPE the original one its short factors serve."""
    context = int(model.get("context_length", 2048))
    return min(context, int(model.get("rope.scaling.original_context_length"))) if longrope(model) else context


def fix_rope(hf: Any) -> None:
    """LongRoPE's rotary embedding as the export keeps it: its short factors for good (transformers
    would swap in the long ones past the original context, which the import's context stops at, with
    an in-place buffer copy the ONNX exporter cannot express)."""
    for module in hf.modules():
        if getattr(module, "rope_type", None) == "longrope":
            module.rope_type = "default"  # inv_freq and attention_scaling stay the short factors' ones


def head_dim(model: GGUFModel) -> int:
    hidden, heads = int(model.get("embedding_length")), int(model.get("attention.head_count"))
    if model.get("attention.key_length") is not None:
        return int(model.get("attention.key_length"))
    if model.arch != "phi3" and model.get("rope.dimension_count") is not None:
        return int(model.get("rope.dimension_count"))
    return hidden // heads


def family_config(model: GGUFModel, config: dict[str, Any]) -> None:
    """Complete the common part of ``config`` (``gguf_import.hf_config``) with the family's own keys."""
    theta = config.pop("rope_theta")
    arch = model.arch
    has = model.tensors.__contains__
    if arch in ("llama", "qwen2"):
        config["rope_theta"] = theta
        if arch == "llama":
            config.update(attention_bias=False, mlp_bias=False)
        return
    for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
        config.setdefault(key, None)  # not the class defaults (Gemma's, Phi3's), which name other tokens
    ends = [config["eos_token_id"], model.get("tokenizer.ggml.eot_token_id"), model.get("tokenizer.ggml.eom_token_id"),
            *model.end_of_turn]
    ends = sorted({int(e) for e in ends if e is not None})
    if len(ends) > 1:
        config["eos_token_id"] = ends
    if arch == "qwen3":
        config.update(attention_bias=has("blk.0.attn_q.bias"), rope_parameters={"rope_type": "default",
                                                                                "rope_theta": theta})
    elif arch == "phi3":
        rotary = int(model.get("rope.dimension_count", config["head_dim"]))
        original = int(model.get("rope.scaling.original_context_length", config["max_position_embeddings"]))
        rope: dict[str, Any] = {"rope_type": "default", "rope_theta": theta,
                                "partial_rotary_factor": rotary / config["head_dim"]}
        if longrope(model):
            factors = {k: np.asarray(model.tensors[f"rope_factors_{k}.weight"].data, np.float32).tolist()
                       for k in ("short", "long")}
            rope.update(rope_type="longrope", short_factor=factors["short"], long_factor=factors["long"],
                        original_max_position_embeddings=original,
                        attention_factor=_f32(model.get("rope.scaling.attn_factor", 1.0)))
        config.update(rope_parameters=rope, original_max_position_embeddings=original,
                      sliding_window=None)  # llama.cpp ignores Phi-3's window (full attention)
    elif arch == "gemma3":
        _gemma3_config(model, config, theta)


def _gemma3_config(model: GGUFModel, config: dict[str, Any], theta: float) -> None:
    layers = config["num_hidden_layers"]
    window = int(model.get("attention.sliding_window", 0) or 0)
    pattern = model.get("attention.sliding_window_pattern", GEMMA3_SWA_PATTERN)
    if window <= 0:
        sliding = [False] * layers
    elif isinstance(pattern, list):
        sliding = [bool(p) for p in pattern][:layers]
    else:  # llama.cpp's set_swa_pattern: layer i slides unless it is the last of each group of n
        n = int(pattern)
        sliding = [n == 0 or i % n < n - 1 for i in range(layers)]
    full: dict[str, Any] = {"rope_type": "default", "rope_theta": theta}
    if (model.get("rope.scaling.type", "none") or "none") == "linear":
        full = {"rope_type": "linear", "rope_theta": theta, "factor": _f32(model.get("rope.scaling.factor"))}
    large = layers == 62  # llama.cpp: the 27B scales queries by the model width per head
    del config["hidden_act"]
    config.update(
        model_type="gemma3_text", hidden_activation="gelu_pytorch_tanh",
        query_pre_attn_scalar=config["hidden_size"] // config["num_attention_heads"] if large else config["head_dim"],
        sliding_window=window or None,
        layer_types=["sliding_attention" if s else "full_attention" for s in sliding],
        rope_parameters={"full_attention": full, "sliding_attention": {
            "rope_type": "default", "rope_theta": _f32(model.get("rope.freq_base_swa", GEMMA3_LOCAL_BASE))}},
        final_logit_softcapping=_f32(model.get("final_logit_softcapping")) or None,
        attn_logit_softcapping=None)


def _f32(x: Any) -> float:
    return 0.0 if x is None else float(str(np.float32(x)))
