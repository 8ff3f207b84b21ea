"""Token id -> bytes tables from a tokenizer's JSON, so text is assembled in Python.

Supports the two decoders nearly every chat model uses: byte-level BPE (GPT-2, Llama 3, Qwen,
tiny-chat) and SentencePiece-style (``▁`` for spaces, ``<0xNN>`` byte fallback, one leading
space stripped). Anything else returns ``None`` and the engine decodes through the backend.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TokenBytes:
    """``table[id]`` is the bytes token ``id`` stands for (``b""`` for special tokens)."""

    table: list[bytes]
    strip_leading_space: bool = False
    specials: dict[int, bytes] | None = None
    """The text of special tokens (left out of ``table``), for callers that want them shown."""


def _byte_level_alphabet() -> dict[str, int]:
    """GPT-2's printable stand-ins for the 256 byte values, inverted."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    chars = {b: b for b in printable}
    extra = 0
    for b in range(256):
        if b not in chars:
            chars[b] = 256 + extra
            extra += 1
    return {chr(c): b for b, c in chars.items()}


def _decoder_kinds(decoder: dict[str, Any] | None) -> list[dict[str, Any]]:
    if not decoder:
        return []
    if decoder.get("type") == "Sequence":
        return [d for sub in decoder.get("decoders", []) for d in _decoder_kinds(sub)]
    return [decoder]


def build_token_bytes(decoder: dict[str, Any] | None, vocab: list[str | None],
                      added: list[tuple[int, str, bool]]) -> TokenBytes | None:
    """Build the table from the tokenizer's ``decoder`` config, its id->token list and added tokens."""
    kinds = [d.get("type") for d in _decoder_kinds(decoder)]
    byte_level = kinds == ["ByteLevel"]
    sentencepiece = "ByteFallback" in kinds or (
        "Replace" in kinds and set(kinds) <= {"Replace", "ByteFallback", "Fuse", "Strip"})
    if not (byte_level or sentencepiece):
        return None
    strip = any(d.get("type") == "Strip" and d.get("start", 0) >= 1 for d in _decoder_kinds(decoder))
    alphabet = _byte_level_alphabet() if byte_level else {}
    size = max([len(vocab)] + [i + 1 for i, _, _ in added])
    table: list[bytes] = [b""] * size
    for i, token in enumerate(vocab):
        if token is None:
            continue
        if byte_level:
            try:
                table[i] = bytes(alphabet[c] for c in token)
            except KeyError:
                table[i] = token.encode()
        elif len(token) == 6 and token.startswith("<0x") and token.endswith(">"):
            table[i] = bytes([int(token[3:5], 16)])
        else:
            table[i] = token.replace("\u2581", " ").encode()
    specials = {}
    for i, content, special in added:
        table[i] = b"" if special else content.encode()
        if special:
            specials[i] = content.encode()
    return TokenBytes(table, strip_leading_space=strip, specials=specials)
