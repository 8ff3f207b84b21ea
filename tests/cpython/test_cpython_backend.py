"""The CPython backend (onnxruntime + tokenizers) and the engine on it, against torch references."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest
import torch
from transformers.generation.logits_process import (
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from csi.backends.cpython import CPythonBackend
from csi.backends.cpython.logits import candidates
from csi.backends.cpython.mulberry32 import Mulberry32
from csi.core.backend import SamplingParams
from csi.core.engine import Engine
from tests.support.aio import run_async
from tests.support.faces import chat_completion, embeddings
from tests.support.paths import MODELS, ROOT
from tests.support.prompts import PROMPTS
from tests.support.reference import hf_greedy_ids, hf_next_logits, hf_prompt_ids, sentence_transformer

GREEDY_TOKENS = 40


@pytest.fixture(scope="module")
def backend() -> CPythonBackend:
    return CPythonBackend(MODELS)


@pytest.fixture(scope="module")
def engine(backend: CPythonBackend) -> Engine:
    eng = Engine(backend)
    run_async(eng.load(["tiny-chat", "all-minilm-l6-v2"]))
    return eng


@pytest.mark.parametrize("messages", PROMPTS)
def test_greedy_ids_equal_hf_transformers(engine, messages):
    reply = run_async(chat_completion(
        engine, {"messages": messages, "temperature": 0, "max_tokens": GREEDY_TOKENS, "return_token_ids": True}))
    assert reply.prompt_token_ids == hf_prompt_ids(messages)
    assert reply.choices[0].token_ids == hf_greedy_ids(messages, GREEDY_TOKENS)


def test_one_token_decode_steps_match_torch(engine, backend):
    ids = hf_prompt_ids(PROMPTS[0])
    backend.reuse_prefix("tiny-chat", [])
    logits = backend.forward("tiny-chat", ids)
    for _ in range(12):
        ref = hf_next_logits(ids)
        assert np.abs(logits - ref).max() < 1e-3
        token = int(np.argmax(ref))
        ids.append(token)
        logits = backend.forward("tiny-chat", [token])  # a one-token step on the cache


@pytest.mark.parametrize(
    "params",
    [SamplingParams(0.7, 0, 1.0), SamplingParams(1.0, 20, 1.0), SamplingParams(1.0, 0, 0.8),
     SamplingParams(1.3, 50, 0.9), SamplingParams(0.5, 1, 0.5)],
)
def test_candidates_match_hf_logits_warpers(params):
    logits = hf_next_logits(hf_prompt_ids(PROMPTS[1]))
    scores = torch.tensor(logits, dtype=torch.float64)[None, :]
    scores = TemperatureLogitsWarper(params.temperature)(None, scores)
    if params.top_k:
        scores = TopKLogitsWarper(params.top_k)(None, scores)
    if params.top_p < 1:
        scores = TopPLogitsWarper(params.top_p)(None, scores)
    ref = torch.softmax(scores, dim=-1)[0].numpy()
    ids, probs = candidates(logits, params)
    assert set(ids.tolist()) == set(np.flatnonzero(ref > 0).tolist())
    np.testing.assert_allclose(probs, ref[ids], atol=1e-9)


def test_seeded_sampling_is_reproducible_and_seed_dependent(engine):
    req = {"messages": PROMPTS[0], "temperature": 1.0, "top_p": 0.95, "max_tokens": 24, "return_token_ids": True}
    a = run_async(chat_completion(engine, {**req, "seed": 7})).choices[0].token_ids
    b = run_async(chat_completion(engine, {**req, "seed": 7})).choices[0].token_ids
    c = run_async(chat_completion(engine, {**req, "seed": 8})).choices[0].token_ids
    assert a == b and a != c


def _node(script: str) -> object:
    out = subprocess.run(["node", "--input-type=module", "-e", script], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


@pytest.mark.parametrize("seed", [0, 1, 123456789, 2**40 + 17, -5])
def test_generator_is_the_one_in_worker_sampling_js(seed):
    js = _node(f"""import {{ makeRng }} from "{ROOT}/worker/sampling/index.js";
                   const r = makeRng({seed});
                   console.log(JSON.stringify(Array.from({{length: 50}}, () => r.next())));""")
    rng = Mulberry32(seed)
    assert [rng.next() for _ in range(50)] == js


@pytest.mark.parametrize(
    "params", [SamplingParams(0.8, 0, 0.9), SamplingParams(1.2, 40, 1.0), SamplingParams(1.0, 7, 0.6)]
)
def test_candidates_are_the_ones_in_worker_sampling_js(params):
    logits = hf_next_logits(hf_prompt_ids(PROMPTS[2]))
    js = _node(f"""import {{ candidates }} from "{ROOT}/worker/sampling/index.js";
                   const logits = Float32Array.from({json.dumps(logits.tolist())});
                   const c = candidates(logits, {json.dumps(params.to_dict())});
                   console.log(JSON.stringify({{ids: Array.from(c.ids), probs: Array.from(c.probs)}}));""")
    ids, probs = candidates(logits, params)
    assert ids.tolist() == js["ids"]
    np.testing.assert_allclose(probs, js["probs"], rtol=1e-12)


def test_embeddings_match_sentence_transformers(engine):
    texts = ["The cat sits on the mat.", "Ein Hund läuft im Park.", "quantum chromodynamics", "a"]
    out = run_async(embeddings(engine, {"input": texts, "model": "all-minilm-l6-v2"}))
    ours = np.array([d.embedding for d in out.data])
    ref = sentence_transformer().encode(texts, normalize_embeddings=True)
    cos = (ours * ref).sum(axis=1) / np.linalg.norm(ours, axis=1) / np.linalg.norm(ref, axis=1)
    assert cos.min() >= 0.999
    assert out.usage.prompt_tokens == sum(len(sentence_transformer().tokenizer(t)["input_ids"]) for t in texts)
