"""The built-in smollm2-135m-instruct on csi's CPython backend (onnxruntime) against HF
transformers' reading of the GGUF it was built from (torch float32): same prompt ids, same greedy
ids, same log-probabilities, and a right answer."""

from __future__ import annotations

import numpy as np
import pytest

from csi.backends.cpython import CPythonBackend
from csi.core.engine import Engine
from tests.support.faces import chat_completion
from tests.support.aio import run_async
from tests.support.paths import MODELS
from tests.support.smollm2_reference import MODEL, greedy_ids, hf_tokenizer, log_softmax_rows, prompt_ids

MAX_TOKENS = 32
QUESTIONS = ["What is the capital of France?", "Name three primary colors.", "What is 2+2?"]
# Both sides are float32 with the same weights; onnxruntime and torch sum in other orders through
# 30 layers. Measured: at most 3e-5 on these prompts; 1e-3 leaves room for other CPUs' kernels and
# is still far below what a wrong weight or a stale cache entry does to them (~1e-1 and more).
LOGPROB_TOLERANCE = 1e-3


@pytest.fixture(scope="module")
def engine() -> Engine:
    eng = Engine(CPythonBackend(MODELS))
    run_async(eng.load([MODEL]))
    return eng


def ask(engine: Engine, question: str, **extra: object) -> dict:
    request = {"model": MODEL, "messages": [{"role": "user", "content": question}], "temperature": 0,
               "max_tokens": MAX_TOKENS, "return_token_ids": True, **extra}
    return run_async(chat_completion(engine, request)).model_dump()


@pytest.fixture(scope="module")
def replies(engine: Engine) -> dict[str, dict]:
    return {q: ask(engine, q, logprobs=True, top_logprobs=5) for q in QUESTIONS}


@pytest.mark.parametrize("question", QUESTIONS)
def test_prompt_and_greedy_ids_equal_transformers_reading_of_the_gguf(replies: dict[str, dict], question: str) -> None:
    messages = [{"role": "user", "content": question}]
    reply = replies[question]
    assert reply["prompt_token_ids"] == prompt_ids(messages)
    assert reply["choices"][0]["token_ids"] == greedy_ids(messages, MAX_TOKENS)


@pytest.mark.parametrize("question", QUESTIONS)
def test_logprobs_equal_torch_log_softmax(replies: dict[str, dict], question: str) -> None:
    reply = replies[question]
    prompt, generated = reply["prompt_token_ids"], reply["choices"][0]["token_ids"]
    entries = reply["choices"][0]["logprobs"]["content"]
    assert len(entries) == len(generated) >= 5
    ref = log_softmax_rows(prompt + generated, len(prompt) - 1)
    for i, entry in enumerate(entries):
        assert abs(entry["logprob"] - ref[i, generated[i]]) < LOGPROB_TOLERANCE
        top = np.argsort(-ref[i], kind="stable")[:5]
        assert [t["logprob"] for t in entry["top_logprobs"]] == pytest.approx(ref[i, top].tolist(),
                                                                               abs=LOGPROB_TOLERANCE)
        assert entry["top_logprobs"][0]["token"] == hf_tokenizer().decode([generated[i]])


def test_the_capital_of_france_is_paris(replies: dict[str, dict]) -> None:
    choice = replies[QUESTIONS[0]]["choices"][0]
    assert "Paris" in choice["message"]["content"]
    assert choice["finish_reason"] == "stop"


def test_digits_are_split_one_by_one_as_smollm2s_tokenizer_does() -> None:
    """SmolLM2's tokenizer splits every digit (a step transformers' GGUF converter leaves out)."""
    tok = hf_tokenizer()
    pieces = [tok.decode([t]) for t in tok.encode("In 1969, 42 apples", add_special_tokens=False)]
    assert pieces == ["In", " ", "1", "9", "6", "9", ",", " ", "4", "2", " apples"]
