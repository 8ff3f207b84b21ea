"""GGUF metadata as plain Python values (what ``csi.gguf.tokenizer`` is given), and small GGUF files
holding only a tokenizer: the reference importer (``buildtools.models.gguf_import``) reads them as it
reads a model's."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np


def plain_metadata(path: Path) -> dict[str, Any]:
    """Every metadata field of the GGUF at ``path`` as str, int, float, bool or a list of them."""
    from gguf import GGUFReader

    return {key: field.contents() for key, field in GGUFReader(str(path)).fields.items()
            if not key.startswith("GGUF.")}  # the header's own fields (version, counts)


# keys whose integers are not uint32 in llama.cpp's files
_INT_TYPES = {"tokenizer.ggml.token_type": "INT32"}


def write_gguf(path: Path, meta: Mapping[str, Any]) -> Path:
    """A GGUF of ``meta`` (``general.architecture`` included) and one small tensor: enough for the
    reference importer and transformers' GGUF tokenizer to read."""
    from gguf import GGUFValueType, GGUFWriter

    def kind(key: str, value: Any) -> GGUFValueType:
        if isinstance(value, bool):
            return GGUFValueType.BOOL
        if isinstance(value, int):
            return GGUFValueType[_INT_TYPES.get(key, "UINT32")]
        if isinstance(value, float):
            return GGUFValueType.FLOAT32
        return GGUFValueType.STRING

    arch = str(meta["general.architecture"])
    writer = GGUFWriter(str(path), arch)
    for key, value in meta.items():
        if key == "general.architecture":
            continue
        if isinstance(value, list):
            writer.add_key_value(key, value, GGUFValueType.ARRAY, kind(key, value[0]))
        else:
            writer.add_key_value(key, value, kind(key, value))
    writer.add_tensor("token_embd.weight", np.zeros((4, 8), np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def model_keys(arch: str, context: int = 2048) -> dict[str, Any]:
    """The architecture keys transformers' GGUF config reader wants (a tiny shape; no tensors needed)."""
    return {"general.architecture": arch, f"{arch}.context_length": context, f"{arch}.embedding_length": 8,
            f"{arch}.block_count": 1, f"{arch}.feed_forward_length": 16, f"{arch}.attention.head_count": 2,
            f"{arch}.attention.head_count_kv": 2, f"{arch}.attention.layer_norm_rms_epsilon": 1e-6,
            f"{arch}.rope.freq_base": 10000.0}


def _byte_decoder() -> dict[str, int]:
    """GPT-2's byte alphabet, character -> byte."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    out = {chr(b): b for b in printable}
    for b in range(256):
        if b not in printable:
            out[chr(256 + len(out) - len(printable))] = b
    return out


def sentencepiece_meta(byte_level: Mapping[str, Any], arch: str, head: list[str],
                       extra: list[tuple[str, int]], pieces: int) -> dict[str, Any]:
    """A sentencepiece-style (``tokenizer.ggml.model = "llama"``) tokenizer made from a byte-level
    one's first ``pieces`` normal tokens (their text, spaces as ``▁``; scores falling with the
    rank, no merges): ``head`` control tokens first (an ``<unk>`` among them is type 2), the 256
    ``<0xNN>`` byte tokens, the pieces, then ``extra`` (token, type) pairs."""
    decode = _byte_decoder()
    tokens = [*head, *(f"<0x{b:02X}>" for b in range(256))]
    types = [2 if t == "<unk>" else 3 for t in head] + [6] * 256
    seen = set(tokens)
    for token, kind in zip(byte_level["tokenizer.ggml.tokens"], byte_level["tokenizer.ggml.token_type"], strict=True):
        if kind != 1 or len(tokens) >= len(head) + 256 + pieces:
            continue
        try:
            text = bytes(decode[c] for c in token).decode("utf-8").replace(" ", "\u2581")
        except (KeyError, UnicodeDecodeError):
            continue
        if text not in seen:
            seen.add(text)
            tokens.append(text)
            types.append(1)
    for token, kind in extra:
        tokens.append(token)
        types.append(kind)
    scores = [-float(i) if kind == 1 else 0.0 for i, kind in enumerate(types)]
    return {**model_keys(arch), "tokenizer.ggml.model": "llama", "tokenizer.ggml.tokens": tokens,
            "tokenizer.ggml.token_type": types, "tokenizer.ggml.scores": scores}


def synthetic_byte_level(size: int, seed: int = 0) -> dict[str, Any]:
    """A byte-level BPE tokenizer of ``size`` tokens: the 256 byte characters, tokens that merge
    two earlier ones (each with its merge), and 256 reserved control tokens at the end."""
    import random

    rng = random.Random(seed)
    tokens = sorted(_byte_decoder(), key=_byte_decoder().__getitem__)
    seen = set(tokens)
    short = list(tokens)  # the ones new tokens are made of: about the lengths of a real vocabulary's
    merges: list[str] = []
    while len(tokens) < size - 256:
        left, right = rng.choice(short), rng.choice(short)
        if left + right not in seen:
            seen.add(left + right)
            tokens.append(left + right)
            merges.append(f"{left} {right}")
            if len(left + right) <= 6:
                short.append(left + right)
    tokens += [f"<|reserved_{i}|>" for i in range(256)]
    types = [1] * (size - 256) + [3] * 256
    return {**model_keys("llama"), "tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "llama-bpe",
            "tokenizer.ggml.tokens": tokens, "tokenizer.ggml.token_type": types, "tokenizer.ggml.merges": merges,
            "tokenizer.ggml.bos_token_id": size - 256, "tokenizer.ggml.eos_token_id": size - 255,
            "tokenizer.ggml.add_bos_token": True}
