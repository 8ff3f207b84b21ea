"""Incremental detokenization: turn a growing list of token ids into text deltas."""

from __future__ import annotations

import codecs
from collections.abc import Callable

from .token_bytes import TokenBytes

_REPLACEMENT = "\ufffd"


class ByteDecoder:
    """Emit text for new tokens from a token -> bytes table; no tokenizer call per token.

    Bytes of a character split across tokens are held until the character is complete.
    """

    def __init__(self, token_bytes: TokenBytes, keep_special: bool = False) -> None:
        self._table = token_bytes.table
        if keep_special and token_bytes.specials:
            self._table = list(self._table)
            for i, raw in token_bytes.specials.items():
                self._table[i] = raw
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._strip = token_bytes.strip_leading_space
        self._started = False

    def push(self, token_id: int) -> str:
        text = self._utf8.decode(self._table[token_id] if token_id < len(self._table) else b"")
        if not self._started and text:
            self._started = True
            if self._strip and text.startswith(" "):
                text = text[1:]
        return text

    def flush(self) -> str:
        return self._utf8.decode(b"", final=True)


class IncrementalDecoder:
    """Emit text for new tokens once it is complete, decoding through the tokenizer.

    Decoding a window that starts a few tokens back keeps tokenizer-specific joins (spaces,
    byte-level merges) right, and text ending in U+FFFD is held back until the bytes that
    complete the character arrive.
    """

    def __init__(self, decode: Callable[[list[int]], str]) -> None:
        self._decode = decode
        self._ids: list[int] = []
        self._prefix = 0
        self._read = 0

    def push(self, token_id: int) -> str:
        """Add one token; return the text it completes (possibly empty)."""
        self._ids.append(token_id)
        prefix_text = self._decode(self._ids[self._prefix : self._read]) if self._read > self._prefix else ""
        new_text = self._decode(self._ids[self._prefix :])
        if len(new_text) > len(prefix_text) and not new_text.endswith(_REPLACEMENT):
            self._prefix, self._read = self._read, len(self._ids)
            return new_text[len(prefix_text) :]
        return ""

    def flush(self) -> str:
        """Text still held back (an incomplete character at the very end), as decoded."""
        if self._read == len(self._ids):
            return ""
        prefix_text = self._decode(self._ids[self._prefix : self._read]) if self._read > self._prefix else ""
        new_text = self._decode(self._ids[self._prefix :])
        self._prefix = self._read = len(self._ids)
        return new_text[len(prefix_text) :]
