"""Sampling a request leaves out comes from the model's ``generation_config.json``, on every face,
checked against HF transformers generating with the same file (``model.generate`` reads it too).

The configs are deterministic under sampling (greedy, or top-k 1) and carry a repetition penalty,
so the reference is exact, and each face's own fallback (OpenAI's temperature 1, Spin's 0.8 with
top-k 40, the CSI's temperature 1) would give other tokens.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from csi.backends.cpython import CPythonBackend
from csi.core.engine import Engine
from csi.core.sampling_defaults import SamplingDefaults, from_generation_config
from tests.support.aio import run_async
from tests.support.faces import chat_completion, completion, inference
from tests.support.faces import spin as spin_face
from tests.support.paths import MODELS

CONFIGS = {
    "greedy with a penalty": {"do_sample": False, "repetition_penalty": 1.6},
    "top-k 1 with a penalty": {"do_sample": True, "top_k": 1, "temperature": 0.7, "repetition_penalty": 1.6},
}
QUESTION = [{"role": "user", "content": "What does json.dumps do?"}]
PROMPT = "Return the"  # a raw prompt tiny-chat continues for a while, differently with the penalty
TOKENS = 24


@pytest.fixture(scope="module", params=list(CONFIGS))
def config(request) -> dict:
    return CONFIGS[request.param]


@pytest.fixture(scope="module")
def folder(config: dict, tmp_path_factory) -> Path:
    """tiny-chat with another generation config."""
    out = tmp_path_factory.mktemp("models") / "tiny-chat"
    shutil.copytree(MODELS / "tiny-chat", out)
    config_file = json.loads((out / "generation_config.json").read_text())
    (out / "generation_config.json").write_text(json.dumps({**config_file, **config}))
    return out


@pytest.fixture(scope="module")
def engine(folder: Path) -> Engine:
    eng = Engine(CPythonBackend(folder.parent))
    run_async(eng.load(["tiny-chat"]))
    return eng


@pytest.fixture(scope="module")
def hf(folder: Path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    return AutoTokenizer.from_pretrained(folder), model


def hf_generate(hf, ids: list[int]) -> list[int]:
    """HF's continuation of ``ids`` with the folder's own generation config (EOS cut)."""
    import torch

    tok, model = hf
    torch.manual_seed(0)
    with torch.no_grad():
        out = model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                             max_new_tokens=TOKENS, pad_token_id=0)[0, len(ids):].tolist()
    eos = model.generation_config.eos_token_id
    eos = set(eos if isinstance(eos, list) else [eos])
    return out[: next((i for i, t in enumerate(out) if t in eos), len(out))]


def hf_greedy(hf, ids: list[int], penalty: float = 1.0) -> list[int]:
    """The greedy continuation past any EOS (``ignore_eos``), by torch's argmax over HF's logits
    after HF's repetition penalty over the whole sequence."""
    import torch
    from transformers import RepetitionPenaltyLogitsProcessor

    _, model = hf
    seq = torch.tensor([ids])
    with torch.no_grad():
        for _ in range(TOKENS):
            scores = model(seq).logits[:, -1, :]
            if penalty != 1.0:
                scores = RepetitionPenaltyLogitsProcessor(penalty)(seq, scores)
            seq = torch.cat([seq, scores.argmax(-1, keepdim=True)], dim=1)
    return seq[0, len(ids):].tolist()


def chat_ids(hf) -> list[int]:
    out = hf[0].apply_chat_template(QUESTION, add_generation_prompt=True, tokenize=True)
    return list(out["input_ids"] if isinstance(out, dict) or hasattr(out, "input_ids") else out)


def test_openai_chat_and_completions_leaving_sampling_out_get_the_models_defaults(engine, hf, config):
    chat = run_async(chat_completion(engine, {"messages": QUESTION, "max_tokens": TOKENS, "seed": 5,
                                              "return_token_ids": True})).model_dump()
    assert chat["choices"][0]["token_ids"] == hf_generate(hf, chat_ids(hf))
    ids = hf[0](PROMPT).input_ids
    text = run_async(completion(engine, {"prompt": PROMPT, "max_tokens": TOKENS, "seed": 5, "return_token_ids": True}))
    assert text.choices[0].token_ids == hf_generate(hf, ids)
    # the request's own value still wins over the model's: past EOS, so the reply is long enough
    # for the penalty to matter whatever the trained tiny-chat says first
    plain = run_async(completion(engine, {"prompt": PROMPT, "max_tokens": TOKENS, "temperature": 0,
                                          "repetition_penalty": 1.0, "ignore_eos": True,
                                          "return_token_ids": True}))
    assert plain.choices[0].token_ids == hf_greedy(hf, ids)
    penalized = run_async(completion(engine, {"prompt": PROMPT, "max_tokens": TOKENS, "seed": 5,
                                              "ignore_eos": True, "return_token_ids": True}))
    assert penalized.choices[0].token_ids == hf_greedy(hf, ids, penalty=config["repetition_penalty"])
    assert plain.choices[0].token_ids != penalized.choices[0].token_ids


def test_csi_and_spin_leaving_sampling_out_get_the_models_defaults(engine, hf):
    reference = hf[0].decode(hf_generate(hf, hf[0](PROMPT).input_ids))
    [csi] = run_async(inference.complete(engine, [{"model": "tiny-chat", "prompt": PROMPT,
                                                   "params": {"max_tokens": TOKENS}}]))
    spin = run_async(spin_face.infer(engine, {"model": "tiny-chat", "prompt": PROMPT,
                                              "params": {"max_tokens": TOKENS}}))
    assert csi["text"] == spin["text"] == reference
    [chat] = run_async(inference.chat(engine, [{"model": "tiny-chat", "messages": QUESTION,
                                                "params": {"max_tokens": TOKENS}}]))
    assert chat["message"]["content"] == hf[0].decode(hf_generate(hf, chat_ids(hf)), skip_special_tokens=True)


def test_generation_config_reading_follows_transformers() -> None:
    """transformers' rules: greedy unless ``do_sample``; sampling without a top-k is top-k 50;
    values out of range are not taken."""
    assert from_generation_config({"do_sample": False, "temperature": 0.6}) == SamplingDefaults(temperature=0.0)
    assert from_generation_config({"do_sample": True}) == SamplingDefaults(temperature=1.0, top_k=50)
    assert from_generation_config({"do_sample": True, "temperature": 0.6, "top_p": 0.9, "top_k": 20}) == \
        SamplingDefaults(temperature=0.6, top_k=20, top_p=0.9)
    assert from_generation_config({"eos_token_id": 2}) == SamplingDefaults()
    assert from_generation_config({"temperature": "hot", "top_p": 7, "repetition_penalty": -1}) == SamplingDefaults()
    assert from_generation_config(["not", "a", "config"]) == SamplingDefaults()


def test_a_ggufs_sampling_keys_become_generation_config_entries() -> None:
    from gguf.constants import Keys

    from csi.gguf.sampling import generation_config_of_gguf

    meta = {Keys.General.SAMPLING_TEMP: 0.6, Keys.General.SAMPLING_TOP_K: 20, Keys.General.SAMPLING_TOP_P: 0.95,
            Keys.General.SAMPLING_PENALTY_REPEAT: 1.05, Keys.General.SAMPLING_MIN_P: 0.0, "general.name": "x"}
    config = generation_config_of_gguf(meta)
    assert config == {"do_sample": True, "temperature": 0.6, "top_k": 20, "top_p": 0.95, "repetition_penalty": 1.05}
    assert from_generation_config(config) == SamplingDefaults(temperature=0.6, top_k=20, top_p=0.95,
                                                              repetition_penalty=1.05)
    assert generation_config_of_gguf({Keys.General.SAMPLING_TEMP: 0.0}) == {"do_sample": False, "temperature": 0.0}
    assert generation_config_of_gguf({}) == {}
