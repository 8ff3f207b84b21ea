"""GGUF files written by the tests from tiny-chat's float weights, as llama.cpp's converter writes
them (``convert_hf_to_gguf.py``: Llama's q/k rows permuted, 2-D weights block-quantized by
``gguf.quants``) or as llama.cpp's own quantizer rewrites such a file (K-quants, which ``gguf.quants``
cannot make), with the float weights a reader should recover computed here independently."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from tests.support.paths import MODELS

if TYPE_CHECKING:
    from gguf import GGUFWriter

TINY_CHAT = MODELS / "tiny-chat"
BLOCK = 32

# Hugging Face parameter (without "model.layers.N." / ".weight") -> llama.cpp tensor
_LAYER_NAMES = {
    "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
    "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}
_TOP_NAMES = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
              "lm_head.weight": "output.weight"}


def gguf_name(hf: str) -> str:
    if hf in _TOP_NAMES:
        return _TOP_NAMES[hf]
    _, _, layer, rest = hf.split(".", 3)
    return f"blk.{layer}.{_LAYER_NAMES[rest.removesuffix('.weight')]}.weight"


def tiny_chat_float() -> tuple[dict, dict[str, np.ndarray]]:
    """tiny-chat's ``config.json`` and its float32 weights, by Hugging Face name."""
    from safetensors.numpy import load_file

    config = json.loads((TINY_CHAT / "config.json").read_text())
    return config, {k: np.asarray(v, np.float32) for k, v in load_file(str(TINY_CHAT / "model.safetensors")).items()}


def llama_cpp_permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """``LlamaModel.permute`` of llama.cpp's ``convert_hf_to_gguf.py`` (rotary halves -> interleaved pairs)."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def unpermute(w: np.ndarray, n_head: int) -> np.ndarray:
    """The inverse of ``llama_cpp_permute``, found by permuting row numbers (not by a formula)."""
    rows = llama_cpp_permute(np.arange(w.shape[0])[:, None], n_head)[:, 0]
    out = np.empty_like(w)
    out[rows] = w
    return out


@dataclass
class WrittenGGUF:
    path: Path
    types: dict[str, str]  # GGUF tensor -> type name
    dequantized: dict[str, np.ndarray]  # Hugging Face name -> float32 weights as the GGUF holds them
    tensor_bytes: int  # bytes of tensor data in the file


def write_tiny_chat_gguf(path: Path, qtype: str) -> WrittenGGUF:
    """tiny-chat as a GGUF whose 2-D weights are ``qtype`` (``"F32"`` or a type ``gguf.quants`` can
    quantize: ``"Q8_0"``, ``"Q4_0"``, ``"Q4_1"``, ``"Q5_0"``, ``"Q5_1"``);
    weights whose rows do not split into 32-value blocks (``ffn_down``: 688 columns) are F16, as
    llama.cpp falls back. Tokenizer (byte-level BPE, ``tokenizer.ggml.model = "gpt2"``) and chat
    template from tiny-chat's folder."""
    from gguf import GGMLQuantizationType, GGUFWriter
    from gguf.quants import dequantize, quantize

    config, weights = tiny_chat_float()
    heads, kv_heads = config["num_attention_heads"], config["num_key_value_heads"]
    writer = GGUFWriter(str(path), "llama")
    writer.add_name("tiny-chat")
    writer.add_context_length(config["max_position_embeddings"])
    writer.add_embedding_length(config["hidden_size"])
    writer.add_block_count(config["num_hidden_layers"])
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_rope_dimension_count(config.get("head_dim") or config["hidden_size"] // heads)
    writer.add_rope_freq_base(config.get("rope_theta") or config["rope_parameters"]["rope_theta"])
    writer.add_layer_norm_rms_eps(config["rms_norm_eps"])
    writer.add_vocab_size(config["vocab_size"])
    _add_tokenizer(writer)

    types: dict[str, str] = {}
    dequantized: dict[str, np.ndarray] = {}
    tensor_bytes = 0
    for hf, w in weights.items():
        name = gguf_name(hf)
        n_head = heads if ".q_proj." in hf else kv_heads if ".k_proj." in hf else 0
        stored = llama_cpp_permute(w, n_head) if n_head else w
        if w.ndim == 1:
            kind = GGMLQuantizationType.F32
        elif w.shape[1] % BLOCK:
            kind = GGMLQuantizationType.F16
        else:
            kind = GGMLQuantizationType[qtype]
        data = quantize(stored, kind)
        back = dequantize(data, kind).astype(np.float32).reshape(w.shape)
        dequantized[hf] = unpermute(back, n_head) if n_head else back
        writer.add_tensor(name, data, raw_dtype=kind if kind not in (GGMLQuantizationType.F32,
                                                                     GGMLQuantizationType.F16) else None)
        types[name] = kind.name
        tensor_bytes += data.nbytes
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return WrittenGGUF(path, types, dequantized, tensor_bytes)


_QUANTIZE = """
import sys, llama_cpp
params = llama_cpp.llama_model_quantize_default_params()
params.ftype = getattr(llama_cpp, "LLAMA_FTYPE_MOSTLY_" + sys.argv[3])
params.nthread = 1
sys.exit(llama_cpp.llama_model_quantize(sys.argv[1].encode(), sys.argv[2].encode(), params))
"""


def quantize_tiny_chat_gguf(path: Path, ftype: str) -> WrittenGGUF:
    """tiny-chat as llama.cpp's quantizer (llama-cpp-python's ``llama_model_quantize``) makes it
    from the F32 GGUF ``write_tiny_chat_gguf`` writes, for the file type ``ftype`` (``"Q4_K_M"``,
    ``"Q6_K"``, ...: llama.cpp picks each tensor's type, some rows fall back to other types), with
    the weights ``gguf.quants.dequantize`` reads back from it."""
    from buildtools.deps.llama_server import ensure_server

    python, _ = ensure_server()  # llama-cpp-python in a venv of its own (compiled once)
    source = path.with_name(path.stem + "-f32.gguf")
    write_tiny_chat_gguf(source, "F32")
    out = subprocess.run([str(python), "-c", _QUANTIZE, str(source), str(path), ftype], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    source.unlink()
    return read_written_gguf(path)


def read_written_gguf(path: Path) -> WrittenGGUF:
    """A GGUF of tiny-chat's tensors as ``gguf``'s reader and reference dequantizer give them back
    (q/k rows un-permuted by this module's own inverse)."""
    from gguf import GGMLQuantizationType, GGUFReader
    from gguf.quants import dequantize

    config, weights = tiny_chat_float()
    heads, kv_heads = config["num_attention_heads"], config["num_key_value_heads"]
    by_gguf = {gguf_name(hf): hf for hf in weights}
    types: dict[str, str] = {}
    dequantized: dict[str, np.ndarray] = {}
    tensor_bytes = 0
    for t in GGUFReader(str(path)).tensors:
        hf = by_gguf[t.name]
        n_head = heads if ".q_proj." in hf else kv_heads if ".k_proj." in hf else 0
        back = dequantize(np.asarray(t.data), GGMLQuantizationType[t.tensor_type.name]).astype(np.float32)
        back = back.reshape(weights[hf].shape)
        dequantized[hf] = unpermute(back, n_head) if n_head else back
        types[t.name] = t.tensor_type.name
        tensor_bytes += int(t.n_bytes)
    assert set(dequantized) == set(weights)
    return WrittenGGUF(path, types, dequantized, tensor_bytes)


def matrix_types(written: WrittenGGUF) -> Counter[str]:
    """How many 2-D tensors of each type the file holds."""
    return Counter(written.types[gguf_name(hf)] for hf, w in written.dequantized.items() if w.ndim == 2)


def _add_tokenizer(writer: GGUFWriter) -> None:
    from gguf import TokenType

    spec = json.loads((TINY_CHAT / "tokenizer.json").read_text())
    tok_config = json.loads((TINY_CHAT / "tokenizer_config.json").read_text())
    vocab: dict[str, int] = spec["model"]["vocab"]
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    assert len(tokens) == max(vocab.values()) + 1
    special = {a["id"] for a in spec["added_tokens"] if a["special"]}
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list(tokens)
    writer.add_token_types([TokenType.CONTROL if i in special else TokenType.NORMAL for i in range(len(tokens))])
    writer.add_token_merges([" ".join(m) if isinstance(m, list) else m for m in spec["model"]["merges"]])
    writer.add_eos_token_id(vocab[tok_config["eos_token"]])
    writer.add_pad_token_id(vocab[tok_config["pad_token"]])
    writer.add_add_bos_token(False)
    writer.add_chat_template(tok_config["chat_template"])


def write_foreign_gguf(path: Path, arch: str) -> None:
    """A small, well-formed GGUF of another architecture (a few metadata keys and one tensor)."""
    from gguf import GGUFWriter

    writer = GGUFWriter(str(path), arch)
    writer.add_block_count(1)
    writer.add_embedding_length(32)
    writer.add_head_count(2)
    writer.add_context_length(64)
    writer.add_tensor("token_embd.weight", np.zeros((16, 32), np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
