"""GenerationalGuts computed by HF transformers (torch) and numpy, and the comparison both the
CPython and the browser tests make against it."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from tests.support.paths import MODELS
from tests.support.reference import hf_chat  # noqa: F401 - sets HF offline before transformers loads

INSIDES_MODELS = ("tiny-chat", "tiny-gpt2")
INSIDES_PROMPTS = (
    "Hello world",
    "The json module: dumps(obj, indent=2) -> str. Ünïcödé, 日本語 and 🙂 too.",
    "def add(a, b):\n    return a + b\n\n" * 6,
)
EMBEDDING_TOL = 1e-4
LOGIT_TOL = 1e-3


@functools.cache
def hf_model(model_id: str) -> tuple[Any, Any]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(2)
    folder = MODELS / model_id
    return AutoTokenizer.from_pretrained(folder), AutoModelForCausalLM.from_pretrained(
        folder, dtype=torch.float32, attn_implementation="eager").eval()


def reference_insides(model_id: str, prompt: str) -> dict[str, Any]:
    """ids, token texts, token/positional embeddings, last hidden state (after the final norm) and
    last-position logits, full width, from torch."""
    import torch

    tok, model = hf_model(model_id)
    ids = tok(prompt, return_tensors="pt").input_ids
    n = ids.shape[1]
    with torch.no_grad():
        token = model.get_input_embeddings()(ids)[0].numpy()
        hidden = model.base_model(input_ids=ids).last_hidden_state[0].numpy()
        logits = model(input_ids=ids).logits[0, -1].numpy().astype(np.float64)
        if model.config.model_type == "gpt2":
            positional = model.transformer.wpe.weight[:n].numpy()
        else:  # rotary: the cos and sin halves of HF's rotary embedding at each position
            cos, sin = model.model.rotary_emb(torch.zeros(1, n, 1), torch.arange(n)[None])
            half = cos.shape[-1] // 2
            positional = torch.cat([cos[0, :, :half], sin[0, :, :half]], dim=-1).numpy()
    z = logits - logits.max()
    return {"model_id": model_id, "ids": ids[0].tolist(), "texts": [tok.decode([i]) for i in ids[0].tolist()],
            "token": token, "positional": positional, "hidden": hidden, "logits": logits,
            "probs": np.exp(z) / np.exp(z).sum()}


def shaped(rows: np.ndarray, fft: bool, keep: int) -> np.ndarray:
    """What GenerationalGuts should return for these vectors: numpy's FFT real part, then truncation."""
    out = np.fft.fft(rows.astype(np.float64), axis=1).real if fft else rows.astype(np.float64)
    return out[:, :keep] if keep else out


def check_insides(reply: dict[str, Any], ref: dict[str, Any], fft: bool, keep: int, top_k: int) -> None:
    """Assert that a GenerationalGuts reply equals the torch reference within tolerance."""
    tokens = reply["tokens"]
    assert [t["token_id"] for t in tokens] == ref["ids"]
    assert [t["token"] for t in tokens] == ref["texts"]
    for field, key in (("token_embedding", "token"), ("positional_embedding", "positional"),
                       ("hidden_state", "hidden")):
        got = np.asarray([t[field] for t in tokens], dtype=np.float64)
        want = shaped(ref[key], fft, keep)
        assert got.shape == want.shape, field
        # FFT sums of hidden-width vectors: compare relative to their scale
        scale = max(1.0, float(np.abs(want).max())) if fft else 1.0
        assert np.abs(got - want).max() <= EMBEDDING_TOL * scale, field
    logits = ref["logits"]
    order = sorted(range(len(logits)), key=lambda i: (-logits[i], i))[:top_k]
    gens = reply["generations"]
    assert [g["id"] for g in gens] == order
    for g in gens:
        assert abs(g["logit"] - logits[g["id"]]) <= LOGIT_TOL
        assert abs(g["probability"] - ref["probs"][g["id"]]) <= 1e-5
        assert g["token"] == hf_model(ref["model_id"])[0].decode([g["id"]])
