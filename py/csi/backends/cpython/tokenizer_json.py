"""What the CPython backend reads from a model's ``tokenizer.json`` besides the tokenizer itself:
token strings by id (for xgrammar) and the bytes of every token (for the decode loop)."""

from __future__ import annotations

from json import loads
from pathlib import Path
from typing import Any

from ...core.token_bytes import TokenBytes, build_token_bytes


def model_vocab(spec: dict[str, Any]) -> list[str | None]:
    """The tokenizer.json model's token strings by id (``None`` for holes), added tokens left out."""
    vocab_spec = spec["model"]["vocab"]
    if isinstance(vocab_spec, dict):
        vocab: list[str | None] = [None] * (max(vocab_spec.values(), default=-1) + 1)
        for token, i in vocab_spec.items():
            vocab[i] = token
        return vocab
    return [piece for piece, _score in vocab_spec]


def vocab_list(spec: dict[str, Any]) -> list[str]:
    """Every token string of a tokenizer.json by id, added tokens included ("" for holes)."""
    vocab = [t or "" for t in model_vocab(spec)]
    for t in spec.get("added_tokens", []):
        if t["id"] >= len(vocab):
            vocab += [""] * (t["id"] + 1 - len(vocab))
        vocab[t["id"]] = t["content"]
    return vocab


def read_token_bytes(path: Path) -> TokenBytes | None:
    """The bytes of every token of the tokenizer.json at ``path`` (``None``: not byte-exact)."""
    spec = loads(path.read_text())
    added = [(t["id"], t["content"], bool(t.get("special"))) for t in spec.get("added_tokens", [])]
    return build_token_bytes(spec.get("decoder"), model_vocab(spec), added)
