"""The four API faces on one engine: the same greedy tokens for equivalent parameters, seed shapes."""

from __future__ import annotations

import json

import pytest

from csi.backends.cpython import CPythonBackend
from csi.core.engine import Engine
from csi.errors import InvalidInputError, ModelNotSupportedError
from tests.support.faces import remote_llm
from tests.support.faces import spin as spin_face
from tests.support.faces import chat_completion, completion
from tests.support.faces import inference
from tests.support.aio import run_async
from tests.support.paths import MODELS
from tests.support.prompts import PROMPTS
from tests.support.reference import hf_chat

PROMPT = "The json module"


@pytest.fixture(scope="module")
def engine() -> Engine:
    eng = Engine(CPythonBackend(MODELS))
    run_async(eng.load(["tiny-chat", "all-minilm-l6-v2"]))
    return eng


def test_four_faces_give_the_same_greedy_text(engine):
    openai = run_async(completion(engine, {"prompt": PROMPT, "temperature": 0, "max_tokens": 20,
                                           "return_token_ids": True, "ignore_eos": False}))
    text = openai.choices[0].text
    tok, model = hf_chat()
    import torch

    ids = tok(PROMPT, return_tensors="pt").input_ids
    with torch.no_grad():
        ref = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=20,
                             pad_token_id=0)[0, ids.shape[1]:].tolist()
    eos = set(model.generation_config.eos_token_id if isinstance(model.generation_config.eos_token_id, list)
              else [model.generation_config.eos_token_id])
    ref = ref[: next((i for i, t in enumerate(ref) if t in eos), len(ref))]
    assert openai.choices[0].token_ids == ref

    [csi] = run_async(inference.complete(engine, [{"model": "tiny-chat", "prompt": PROMPT,
                                                         "params": {"temperature": 0, "max_tokens": 20}}]))
    spin = run_async(spin_face.infer(engine, {"model": "tiny-chat", "prompt": PROMPT, "params": {
        "temperature": 0, "max_tokens": 20, "repeat_penalty": 1.0, "top_k": 0, "top_p": 1.0}}))
    remote = run_async(remote_llm.generate(engine, {"api_key": "k", "prompts": [PROMPT]}))
    remote_text = remote["generations"][0]["generations"][0]["text"]
    assert csi["text"] == spin["text"] == text
    assert remote_text.startswith(text)
    info = json.loads(remote["generations"][0]["generations"][0]["generation_info"])
    assert info["completion_tokens"] >= len(ref) and info["finish_reason"] in ("stop", "length")
    assert spin["usage"] == {"prompt_token_count": len(ids[0]), "generated_token_count": len(ref)}
    assert csi["usage"] == {"prompt": len(ids[0]), "completion": len(ref)}


def test_csi_chat_equals_openai_chat(engine):
    messages = PROMPTS[0]
    oa = run_async(chat_completion(engine, {"messages": messages, "temperature": 0, "max_tokens": 24}))
    [csi] = run_async(inference.chat(engine, [{"model": "tiny-chat", "messages": messages,
                                                     "params": {"temperature": 0, "max_tokens": 24}}]))
    assert csi["message"] == {"role": "assistant", "content": oa.choices[0].message.content}
    assert csi["finish_reason"] == oa.choices[0].finish_reason


def test_csi_logprobs_variants_and_batch_order(engine):
    reqs = [{"model": "tiny-chat", "prompt": p, "params": {"temperature": 0, "max_tokens": 5, "logprobs": lp}}
            for p, lp in [("Hello", "no"), ("The os module", "sampled"), ("Return the", {"top": 3})]]
    out = run_async(inference.complete(engine, reqs))
    assert out[0]["logprobs"] == []
    assert all(d["top"] == [] and isinstance(d["sampled"]["token"], list) for d in out[1]["logprobs"])
    assert all(len(d["top"]) == 3 and d["top"][0]["logprob"] >= d["top"][1]["logprob"] for d in out[2]["logprobs"])
    single = [run_async(inference.complete(engine, [r]))[0]["text"] for r in reqs]
    assert [o["text"] for o in out] == single


def test_csi_return_special_tokens_shows_the_end_token(engine):
    base = {"model": "tiny-chat", "messages": [{"role": "user", "content": "What does json.dumps do?"}],
            "params": {"temperature": 0, "max_tokens": 60}}
    [plain] = run_async(inference.chat(engine, [base]))
    if plain["finish_reason"] != "stop":
        pytest.fail("the greedy reply should end with <|im_end|> within 60 tokens")
    [raw] = run_async(inference.complete(engine, [{
        "model": "tiny-chat", "prompt": "<|im_start|>user\nWhat does json.dumps do?<|im_end|>\n<|im_start|>assistant\n",
        "params": {"temperature": 0, "max_tokens": 60, "return_special_tokens": True}}]))
    assert raw["text"] == plain["message"]["content"] + "<|im_end|>"


def test_spin_defaults_and_errors(engine):
    out = run_async(spin_face.infer(engine, {"model": "tiny-chat", "prompt": PROMPT}))
    assert out["usage"]["generated_token_count"] <= 100 and out["finish_reason"] in ("stop", "length")
    with pytest.raises(ModelNotSupportedError):
        run_async(spin_face.infer(engine, {"model": "llama2-chat", "prompt": "x"}))
    with pytest.raises(InvalidInputError) as err:
        run_async(spin_face.infer(engine, {"model": "tiny-chat", "prompt": "x", "params": {"top_p": 2}}))
    assert err.value.param == "params.top_p"
    emb = run_async(spin_face.generate_embeddings(engine, {"model": "all-minilm-l6-v2", "text": ["a b", "c"]}))
    assert len(emb["embeddings"]) == 2 and len(emb["embeddings"][0]) == 384 and emb["usage"]["prompt_token_count"] > 0


def test_remote_llm_type(engine):
    assert run_async(remote_llm.llm_type(engine, {"api_key": "x"})) == {"llm_type": "csi-web:tiny-chat"}
