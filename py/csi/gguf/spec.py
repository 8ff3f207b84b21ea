"""What a GGUF file's metadata and tensor table say about its model: the shape, the family's
variations (norms, biases, rope, sliding windows, soft-capping) and why a file is refused.

The families and llama.cpp's conventions for them (what its converter did to the tensors):
- ``llama``, ``qwen2``: q/k rows permuted for llama.cpp's interleaved rope (Llama only; undone
  when the weights are expanded); Qwen2's q/k/v biases.
- ``qwen3``: per-head RMSNorms of queries and keys; a head size of its own (``attention.key_length``).
- ``gemma3`` (text): every RMSNorm weight stored as ``1 + w``; norms before and after attention and
  MLP; GELU-tanh; embeddings scaled by ``sqrt(hidden)``; sliding-window layers in llama.cpp's pattern
  with their own rope base; linear rope scaling on the global layers; final logit soft-capping.
- ``phi3``: fused ``attn_qkv`` and ``ffn_up`` (gate then up); partial rotary; LongRoPE files run
  with their short factors, the context capped at the original length, as llama.cpp does there.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

FAMILIES = ("gemma3", "llama", "phi3", "qwen2", "qwen3")
HF_ARCHITECTURES = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM",
                    "gemma3": "Gemma3ForCausalLM", "phi3": "Phi3ForCausalLM"}
HF_MODEL_TYPES = {"gemma3": "gemma3_text"}
END_OF_TURN = ("<|im_end|>", "<|end|>", "<end_of_turn>")  # turn ends the new families' templates write
GEMMA3_SWA_PATTERN = 6
GEMMA3_LOCAL_BASE = 10000.0


class GGUFModelError(ValueError):
    """A GGUF file whose model csi-web cannot run; the message says what is wrong."""


@dataclass(frozen=True)
class TensorInfo:
    """One entry of the tensor table: ``dims`` as the file has them (the row's length first)."""

    name: str
    dims: tuple[int, ...]
    type: int  # ggml type id
    offset: int  # absolute, in the file
    size: int  # bytes


@dataclass(frozen=True)
class Rope:
    """One rotary embedding over the first ``dims`` of a head: ``inv_freq`` (float32 values), or with
    ``factors`` (LongRoPE) ``1 / (factors * powers)`` computed in the graph from the file's tensor."""

    inv_freq: tuple[float, ...]
    dims: int
    scale: float = 1.0  # LongRoPE's attention factor, applied to cos and sin
    factors: str | None = None  # the GGUF tensor of per-frequency factors
    powers: tuple[float, ...] = ()  # base ** (2i / dims), float32


@dataclass
class ModelSpec:
    """The decoder a GGUF holds, as the graph builder needs it."""

    arch: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ff: int
    vocab: int
    eps: float
    context: int
    tensors: dict[str, TensorInfo]
    rope: list[Rope]  # per layer
    sliding: list[int | None] = field(default_factory=list)  # per layer: its window, or None
    query_scale: float = 1.0
    final_softcap: float | None = None
    config: dict[str, Any] = field(default_factory=dict)  # the Hugging Face config.json

    @property
    def tied(self) -> bool:
        return "output.weight" not in self.tensors


def f32(x: float) -> float:
    """``x`` rounded to float32."""
    return float(struct.unpack("<f", struct.pack("<f", x))[0])


def _short(x: float) -> float:
    """A float32 as the shortest decimal that is the same float32 (``1e-05``, not 9.99999974e-06)."""
    x = f32(x)
    for digits in range(1, 10):
        s = float(f"{x:.{digits}g}")
        if f32(s) == x:
            return s
    return x


def _powers(base: float, dims: int) -> tuple[float, ...]:
    """``base ** (arange(0, dims, 2) / dims)`` in float32, as transformers computes it."""
    return tuple(f32(f32(base) ** f32(f32(i) / dims)) for i in range(0, dims, 2))


def _inv_freq(base: float, dims: int, linear: float = 1.0) -> tuple[float, ...]:
    return tuple(f32(f32(1.0 / p) / linear) for p in _powers(base, dims))


def read_spec(meta: Mapping[str, Any], tensors: Sequence[TensorInfo]) -> ModelSpec:
    """The model of a GGUF file from its metadata and tensor table; GGUFModelError for anything
    csi-web does not run, naming it."""
    arch = str(meta.get("general.architecture") or "")
    if arch not in FAMILIES:
        raise GGUFModelError(f"unsupported architecture {arch or '(none)'!r}: csi-web runs GGUF models of the "
                             f"{', '.join(FAMILIES[:-1])} and {FAMILIES[-1]} architectures")
    table = {t.name: t for t in tensors}

    def get(key: str, default: Any = None) -> Any:
        return meta.get(f"{arch}.{key}", default)

    _refuse(arch, get, table)

    def need(key: str) -> int:
        value = get(key)
        if not isinstance(value, int) or isinstance(value, bool) or not 0 < value < 2**20:
            raise GGUFModelError(f"the file's {arch}.{key} is {value!r}, not a positive size")
        return value

    hidden, heads, layers, ff = need("embedding_length"), need("attention.head_count"), need("block_count"), \
        need("feed_forward_length")
    kv_heads = int(get("attention.head_count_kv", heads) or heads)
    if "token_embd.weight" not in table:
        raise GGUFModelError("the file has no token_embd.weight tensor")
    vocab = int(table["token_embd.weight"].dims[-1])
    head_dim = int(get("attention.key_length") or 0) or (
        int(get("rope.dimension_count") or 0) if arch != "phi3" else 0) or hidden // heads
    if heads % kv_heads or head_dim % 2:
        raise GGUFModelError(f"{heads} attention heads over {kv_heads} key/value heads of size {head_dim}: "
                             "not a shape csi-web runs")
    context = int(get("context_length", 2048) or 2048)
    longrope = "rope_factors_short.weight" in table
    if longrope:
        context = min(context, int(get("rope.scaling.original_context_length")))
    theta = f32(float(get("rope.freq_base", 10000.0)))
    spec = ModelSpec(arch, layers, hidden, heads, kv_heads, head_dim, ff, vocab,
                     f32(float(get("attention.layer_norm_rms_epsilon", 1e-6))), context, table,
                     [Rope(_inv_freq(theta, head_dim), head_dim)] * layers, [None] * layers,
                     query_scale=f32(head_dim ** -0.5))
    if arch == "phi3":
        rotary = int(get("rope.dimension_count", head_dim) or head_dim)
        rope = Rope(_inv_freq(theta, rotary), rotary)
        if longrope:  # the short factors: what llama.cpp runs within the original context
            scale = f32(float(get("rope.scaling.attn_factor", 1.0) or 1.0))
            rope = Rope((), rotary, scale, "rope_factors_short.weight", _powers(theta, rotary))
        spec.rope = [rope] * layers
    elif arch == "gemma3":
        _gemma3(spec, get, theta)
    spec.config = _hf_config(spec, meta, get, theta)
    return spec


def _refuse(arch: str, get: Any, table: Mapping[str, TensorInfo]) -> None:
    scaling = get("rope.scaling.type", "none") or "none"
    if "rope_freqs.weight" in table:
        raise GGUFModelError(f"{arch} models with rope frequency factors (rope_freqs.weight) are not supported")
    factors = {n for n in table if n.startswith("rope_factors_")}
    if factors and not (arch == "phi3" and factors == {"rope_factors_long.weight", "rope_factors_short.weight"}
                        and get("rope.scaling.original_context_length")):
        named = ", ".join(sorted(factors))
        raise GGUFModelError(f"{arch} models with LongRoPE rope scaling ({named}) are not supported")
    if scaling in ("longrope", "su") and not factors:
        raise GGUFModelError(f"{arch} models with LongRoPE rope scaling but no factors are not supported")
    if scaling != "none" and not (arch == "gemma3" and scaling == "linear"):
        raise GGUFModelError(f"{arch} models with rope scaling are not supported (this file has {scaling!r})")
    if get("attn_logit_softcapping"):
        raise GGUFModelError(f"{arch} models with attention logit soft-capping are not supported")


def _gemma3(spec: ModelSpec, get: Any, theta: float) -> None:
    window = int(get("attention.sliding_window", 0) or 0)
    pattern = get("attention.sliding_window_pattern", GEMMA3_SWA_PATTERN)
    if window <= 0:
        sliding = [False] * spec.layers
    elif isinstance(pattern, list):
        sliding = [bool(p) for p in pattern][:spec.layers]
    else:  # llama.cpp's set_swa_pattern: layer i slides unless it is the last of each group of n
        n = int(pattern)
        sliding = [n == 0 or i % n < n - 1 for i in range(spec.layers)]
    linear = f32(float(get("rope.scaling.factor") or 1.0)) if get("rope.scaling.type") == "linear" else 1.0
    local = Rope(_inv_freq(f32(float(get("rope.freq_base_swa", GEMMA3_LOCAL_BASE))), spec.head_dim), spec.head_dim)
    full = Rope(_inv_freq(theta, spec.head_dim, linear=linear), spec.head_dim)
    spec.rope = [local if s else full for s in sliding]
    spec.sliding = [window if s else None for s in sliding]
    scalar = spec.hidden // spec.heads if spec.layers == 62 else spec.head_dim  # llama.cpp: the 27B
    spec.query_scale = f32(scalar ** -0.5)
    cap = get("final_logit_softcapping")
    spec.final_softcap = f32(float(cap)) if cap else None


def end_of_turn_ids(meta: Mapping[str, Any], arch: str) -> list[int]:
    """The ids generation ends on: the file's EOS (and EOT/EOM), and for the newer families the
    tokens their chat templates end turns with."""
    ends = [meta.get(f"tokenizer.ggml.{k}_token_id") for k in ("eos", "eot", "eom")]
    tokens = meta.get("tokenizer.ggml.tokens")
    if arch in ("qwen3", "gemma3", "phi3") and isinstance(tokens, list):
        wanted = set(END_OF_TURN)
        ends += [i for i, t in enumerate(tokens) if t in wanted]
    return sorted({int(e) for e in ends if isinstance(e, int) and not isinstance(e, bool)})


def _hf_config(spec: ModelSpec, meta: Mapping[str, Any], get: Any, theta: float) -> dict[str, Any]:
    """The Hugging Face ``config.json`` transformers.js reads for the model's shape and cache."""
    config: dict[str, Any] = {
        "architectures": [HF_ARCHITECTURES[spec.arch]],
        "model_type": HF_MODEL_TYPES.get(spec.arch, spec.arch),
        "vocab_size": spec.vocab, "hidden_size": spec.hidden, "intermediate_size": spec.ff,
        "num_hidden_layers": spec.layers, "num_attention_heads": spec.heads,
        "num_key_value_heads": spec.kv_heads, "head_dim": spec.head_dim, "rms_norm_eps": _short(spec.eps),
        "rope_theta": _short(theta), "max_position_embeddings": spec.context,
        "tie_word_embeddings": spec.tied, "torch_dtype": "float32",
    }
    for key in ("bos", "pad"):
        value = meta.get(f"tokenizer.ggml.{'padding' if key == 'pad' else key}_token_id")
        if isinstance(value, int):
            config[f"{key}_token_id"] = value
    ends = end_of_turn_ids(meta, spec.arch)
    if ends:
        config["eos_token_id"] = ends[0] if len(ends) == 1 else ends
    _family_config(spec, config, get, theta)
    return config


def _family_config(spec: ModelSpec, config: dict[str, Any], get: Any, theta: float) -> None:
    """The family's own keys, as transformers names them (so that transformers reads the folder as
    llama.cpp runs the file). LongRoPE's factor lists are the file's data, not its header: a loader
    that reads them adds ``short_factor`` and ``long_factor`` to ``rope_parameters``."""
    arch = spec.arch
    if arch in ("llama", "qwen2"):
        config["hidden_act"] = "silu"
        if arch == "llama":
            config.update(attention_bias=False, mlp_bias=False)
        return
    rope_theta = config.pop("rope_theta")
    for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
        config.setdefault(key, None)  # not the class defaults (Gemma's, Phi3's), which name other tokens
    if arch == "qwen3":
        config.update(hidden_act="silu", attention_bias="blk.0.attn_q.bias" in spec.tensors,
                      rope_parameters={"rope_type": "default", "rope_theta": rope_theta})
    elif arch == "phi3":
        rope = spec.rope[0]
        original = int(get("rope.scaling.original_context_length") or spec.context)
        params: dict[str, Any] = {"rope_type": "default", "rope_theta": rope_theta,
                                  "partial_rotary_factor": rope.dims / spec.head_dim}
        if rope.factors:
            params.update(rope_type="longrope", original_max_position_embeddings=original,
                          attention_factor=_short(rope.scale))
        config.update(hidden_act="silu", rope_parameters=params, original_max_position_embeddings=original,
                      sliding_window=None)  # llama.cpp ignores Phi-3's window (full attention)
    elif arch == "gemma3":
        full: dict[str, Any] = {"rope_type": "default", "rope_theta": rope_theta}
        if get("rope.scaling.type") == "linear":
            factor = _short(float(get("rope.scaling.factor")))
            full = {"rope_type": "linear", "rope_theta": rope_theta, "factor": factor}
        local = _short(float(get("rope.freq_base_swa", GEMMA3_LOCAL_BASE)))
        config.update(
            hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=round(spec.query_scale ** -2),
            sliding_window=int(get("attention.sliding_window", 0) or 0) or None,
            layer_types=["sliding_attention" if w else "full_attention" for w in spec.sliding],
            rope_parameters={"full_attention": full,
                             "sliding_attention": {"rope_type": "default", "rope_theta": local}},
            final_logit_softcapping=None if spec.final_softcap is None else _short(spec.final_softcap),
            attn_logit_softcapping=None)
