"""Tiny chat's tokenizer: deterministic byte-level BPE training, the tokenizer files transformers
loads, and the token ids plus loss mask of one conversation."""

from __future__ import annotations

import heapq
import json
from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors

from .tiny_chat_spec import (
    CHAT_TEMPLATE,
    CONTEXT_LENGTH,
    ENDOFTEXT,
    EOS_ID,
    IM_END,
    IM_START,
    IM_START_ID,
    SPECIAL_TOKENS,
    VOCAB_SIZE,
    Conversation,
    Message,
)


def _learn_bpe_merges(word_counts: dict[str, int], num_merges: int, min_frequency: int) -> list[tuple[str, str]]:
    """Classic BPE merge learning with a fully deterministic tie-break.

    The ``tokenizers`` trainer breaks count ties by internal ids that depend on
    hash-map order, so two runs on the same corpus can differ.  Here the most
    frequent pair wins and ties go to the lexicographically smallest pair.
    """
    words = [list(word) for word in sorted(word_counts)]
    freqs = [word_counts[word] for word in sorted(word_counts)]
    pair_counts: dict[tuple[str, str], int] = {}
    where: dict[tuple[str, str], set[int]] = {}
    for index, (symbols, freq) in enumerate(zip(words, freqs, strict=True)):
        for pair in pairwise(symbols):
            pair_counts[pair] = pair_counts.get(pair, 0) + freq
            where.setdefault(pair, set()).add(index)
    heap = [(-count, pair) for pair, count in pair_counts.items()]
    heapq.heapify(heap)
    merges: list[tuple[str, str]] = []
    while heap and len(merges) < num_merges:
        neg_count, pair = heapq.heappop(heap)
        if pair_counts.get(pair, 0) != -neg_count:
            continue  # stale entry; the current count was pushed separately
        if -neg_count < min_frequency:
            break
        merges.append(pair)
        merged = pair[0] + pair[1]
        touched: set[tuple[str, str]] = set()
        for index in sorted(where.pop(pair, ())):
            old = words[index]
            new: list[str] = []
            i = 0
            while i < len(old):
                if i + 1 < len(old) and old[i] == pair[0] and old[i + 1] == pair[1]:
                    new.append(merged)
                    i += 2
                else:
                    new.append(old[i])
                    i += 1
            if len(new) == len(old):
                continue
            freq = freqs[index]
            for p in pairwise(old):
                pair_counts[p] -= freq
                touched.add(p)
            for p in pairwise(new):
                pair_counts[p] = pair_counts.get(p, 0) + freq
                where.setdefault(p, set()).add(index)
                touched.add(p)
            words[index] = new
        for p in sorted(touched):
            count = pair_counts.get(p, 0)
            if count > 0:
                heapq.heappush(heap, (-count, p))
            else:
                pair_counts.pop(p, None)
    return merges


def train_tokenizer(conversations: Sequence[Conversation]) -> Tokenizer:
    """Train a byte-level BPE tokenizer (ids 0-2 are the special tokens), deterministically."""
    pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    word_counts: dict[str, int] = {}
    for conversation in conversations:
        for message in conversation:
            for text in (message["role"], "\n", message["content"]):
                for piece, _ in pre_tokenizer.pre_tokenize_str(text):
                    word_counts[piece] = word_counts.get(piece, 0) + 1
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {token: i for i, token in enumerate([*SPECIAL_TOKENS, *alphabet])}
    merges = _learn_bpe_merges(word_counts, VOCAB_SIZE - len(vocab), min_frequency=2)
    for left, right in merges:
        vocab[left + right] = len(vocab)

    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tokenizer.pre_tokenizer = pre_tokenizer
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS])
    for token_id, token in enumerate(SPECIAL_TOKENS):
        if tokenizer.token_to_id(token) != token_id:
            raise RuntimeError(f"special token {token!r} did not get id {token_id}")
    if tokenizer.get_vocab_size() != VOCAB_SIZE:
        raise RuntimeError(f"tokenizer vocab size {tokenizer.get_vocab_size()} != {VOCAB_SIZE}")
    return tokenizer


def write_tokenizer_files(tokenizer: Tokenizer, folder: Path) -> None:
    """Write ``tokenizer.json``, ``tokenizer_config.json`` and ``special_tokens_map.json``."""
    tokenizer.save(str(folder / "tokenizer.json"))
    added = {
        str(i): {
            "content": token,
            "lstrip": False,
            "normalized": False,
            "rstrip": False,
            "single_word": False,
            "special": True,
        }
        for i, token in enumerate(SPECIAL_TOKENS)
    }
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": None,
        "eos_token": IM_END,
        "pad_token": ENDOFTEXT,
        "unk_token": None,
        "add_bos_token": False,
        "add_eos_token": False,
        "model_max_length": CONTEXT_LENGTH,
        "clean_up_tokenization_spaces": False,
        "added_tokens_decoder": added,
        "chat_template": CHAT_TEMPLATE,
    }
    special_map = {
        "eos_token": IM_END,
        "pad_token": ENDOFTEXT,
        "additional_special_tokens": [IM_START, IM_END],
    }
    _write_json(folder / "tokenizer_config.json", config)
    _write_json(folder / "special_tokens_map.json", special_map)


def _write_json(path: Path, data: object) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def encode_conversation(tokenizer: Tokenizer, messages: Sequence[Message]) -> tuple[list[int], list[int]]:
    """Token ids of the rendered chat plus a 0/1 loss mask (assistant content + ``<|im_end|>``)."""
    newline = tokenizer.encode("\n").ids
    ids: list[int] = []
    mask: list[int] = []
    for message in messages:
        header = [IM_START_ID, *tokenizer.encode(message["role"]).ids, *newline]
        body = [*tokenizer.encode(message["content"]).ids, EOS_ID]
        learn = 1 if message["role"] == "assistant" else 0
        ids += header + body + newline
        mask += [0] * len(header) + [learn] * len(body) + [0] * len(newline)
    return ids, mask
