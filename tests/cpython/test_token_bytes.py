"""Python-side detokenization (token -> bytes tables) against the HF tokenizers library's decode."""

from __future__ import annotations

import json
import random

import pytest
from tokenizers import Tokenizer, decoders, models, normalizers

from csi.backends.cpython.tokenizer_json import read_token_bytes
from csi.core.detokenize import ByteDecoder
from csi.core.token_bytes import build_token_bytes
from tests.support.paths import MODELS

TEXTS = ["Hello, world! naïve café — 東京 🙂 ok?", "def f(x):\n    return x ** 2\n", "  spaces   and\ttabs\n\n"]


def stream_text(table, ids: list[int]) -> str:
    dec = ByteDecoder(table)
    return "".join(dec.push(i) for i in ids) + dec.flush()


def test_tiny_chat_byte_level_table_decodes_like_hf():
    tok = Tokenizer.from_file(str(MODELS / "tiny-chat" / "tokenizer.json"))
    table = read_token_bytes(MODELS / "tiny-chat" / "tokenizer.json")
    assert table is not None
    rng = random.Random(5)
    for text in TEXTS:
        ids = tok.encode(text, add_special_tokens=False).ids
        assert stream_text(table, ids) == tok.decode(ids, skip_special_tokens=True) == text
    for _ in range(200):  # arbitrary id sequences, incomplete UTF-8 included
        ids = [rng.randrange(tok.get_vocab_size()) for _ in range(rng.randrange(1, 12))]
        assert stream_text(table, ids) == tok.decode(ids, skip_special_tokens=True)


@pytest.fixture(scope="module")
def sentencepiece_like() -> Tokenizer:
    """A Llama-2-style tokenizer: BPE with byte fallback, Metaspace, the matching decoder chain."""
    pieces = ["<unk>", "<s>", "</s>", *(f"<0x{b:02X}>" for b in range(256)), "▁",
              *"abcdefghijklmnopqrstuvwxyz", "he", "hel", "hell", "hello", "▁hello"]
    vocab = {p: i for i, p in enumerate(pieces)}
    merges = [("h", "e"), ("he", "l"), ("hel", "l"), ("hell", "o"), ("▁", "hello")]
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", byte_fallback=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    tok.add_special_tokens(["<s>", "</s>"])
    return tok


def test_sentencepiece_style_table_decodes_like_hf(sentencepiece_like):
    tok = sentencepiece_like
    spec = json.loads(tok.to_str())
    vocab: list[str | None] = [None] * tok.get_vocab_size()
    for token, i in spec["model"]["vocab"].items():
        vocab[i] = token
    added = [(t["id"], t["content"], t["special"]) for t in spec["added_tokens"]]
    table = build_token_bytes(spec["decoder"], vocab, added)
    assert table is not None and table.strip_leading_space
    for text in ["the quick fox", "hello 東京 café", "brown\ndog 🙂"]:
        ids = tok.encode(text).ids
        assert any(tok.id_to_token(i).startswith("<0x") for i in ids) or text == "the quick fox"
        assert stream_text(table, ids) == tok.decode(ids) == text


def test_unknown_decoder_falls_back_to_the_backend():
    assert build_token_bytes({"type": "WordPiece", "prefix": "##"}, ["a"], []) is None
