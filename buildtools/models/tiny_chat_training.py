"""Train tiny chat from scratch: pack conversations into rows, the Llama architecture, the
learning-rate schedule and the training loop (seeded, so a rebuild gives the same weights)."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

import torch
from tokenizers import Tokenizer
from torch import nn
from transformers import LlamaConfig, LlamaForCausalLM

from .tiny_chat_spec import CONTEXT_LENGTH, EOS_ID, PAD_ID, SEED, VOCAB_SIZE, Conversation
from .tiny_chat_tokenizer import encode_conversation

SEQ_LEN = 512  # a tool-calling turn lists its tools in the system turn: a few hundred tokens
BATCH_SIZE = 4
TRAIN_STEPS = 700
WARMUP_STEPS = 30
PEAK_LR = 2e-3
MIN_LR_RATIO = 0.1
WEIGHT_DECAY = 0.1
GRAD_CLIP = 1.0
LOG_EVERY = 40


def pack_rows(
    tokenizer: Tokenizer, conversations: Sequence[Conversation], row_len: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Greedily pack whole conversations into rows of ``row_len`` tokens, padding the rest."""
    rows: list[list[int]] = []
    masks: list[list[int]] = []
    cur_ids: list[int] = []
    cur_mask: list[int] = []
    for conversation in conversations:
        ids, mask = encode_conversation(tokenizer, conversation)
        if len(ids) > row_len:
            continue
        if len(cur_ids) + len(ids) > row_len:
            rows.append(cur_ids + [PAD_ID] * (row_len - len(cur_ids)))
            masks.append(cur_mask + [0] * (row_len - len(cur_mask)))
            cur_ids, cur_mask = [], []
        cur_ids += ids
        cur_mask += mask
    if cur_ids:
        rows.append(cur_ids + [PAD_ID] * (row_len - len(cur_ids)))
        masks.append(cur_mask + [0] * (row_len - len(cur_mask)))
    return torch.tensor(rows, dtype=torch.long), torch.tensor(masks, dtype=torch.bool)


def model_config() -> LlamaConfig:
    """The fixed architecture of the tiny chat model."""
    return LlamaConfig(
        vocab_size=VOCAB_SIZE,
        hidden_size=256,
        intermediate_size=688,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=64,
        max_position_embeddings=CONTEXT_LENGTH,
        rope_theta=10000.0,
        tie_word_embeddings=False,
        bos_token_id=None,
        eos_token_id=EOS_ID,
        pad_token_id=PAD_ID,
    )


def _lr_at(step: int) -> float:
    if step < WARMUP_STEPS:
        return PEAK_LR * (step + 1) / WARMUP_STEPS
    progress = (step - WARMUP_STEPS) / max(1, TRAIN_STEPS - WARMUP_STEPS)
    cosine = 0.5 * (1.0 + math.cos(math.pi * progress))
    return PEAK_LR * (MIN_LR_RATIO + (1.0 - MIN_LR_RATIO) * cosine)


def train_model(rows: torch.Tensor, masks: torch.Tensor) -> tuple[LlamaForCausalLM, list[float]]:
    """Train from scratch for ``TRAIN_STEPS`` steps; returns the model and per-step losses."""
    torch.manual_seed(SEED)
    model = LlamaForCausalLM._from_config(model_config(), attn_implementation="sdpa")
    model.train()
    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": WEIGHT_DECAY}, {"params": no_decay, "weight_decay": 0.0}],
        lr=PEAK_LR,
        betas=(0.9, 0.95),
        eps=1e-8,
    )
    generator = torch.Generator().manual_seed(SEED)
    order = torch.randperm(len(rows), generator=generator)
    cursor = 0
    losses: list[float] = []
    start = time.monotonic()
    for step in range(TRAIN_STEPS):
        if cursor + BATCH_SIZE > len(order):
            order = torch.randperm(len(rows), generator=generator)
            cursor = 0
        batch = order[cursor : cursor + BATCH_SIZE]
        cursor += BATCH_SIZE
        ids, mask = rows[batch], masks[batch]
        inputs, targets = ids[:, :-1], ids[:, 1:].masked_fill(~mask[:, 1:], -100)
        for group in optimizer.param_groups:
            group["lr"] = _lr_at(step)
        logits = model(input_ids=inputs).logits
        loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB_SIZE), targets.reshape(-1), ignore_index=-100)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), GRAD_CLIP)
        optimizer.step()
        losses.append(loss.item())
        if (step + 1) % LOG_EVERY == 0 or step == 0 or step + 1 == TRAIN_STEPS:
            window = losses[-LOG_EVERY:]
            print(
                f"  step {step + 1:4d}/{TRAIN_STEPS}  loss {sum(window) / len(window):.3f}"
                f"  lr {_lr_at(step):.2e}  {time.monotonic() - start:6.1f}s",
                flush=True,
            )
    model.eval()
    return model, losses
