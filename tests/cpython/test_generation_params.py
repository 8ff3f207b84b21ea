"""Sampling parameters, logprobs, n, stops and the prefix cache on the real model, in CPython,
against references computed here (torch, and numpy written from the definitions)."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

from csi.backends.cpython import CPythonBackend
from csi.backends.cpython.logits import candidates, process_logits
from csi.core.backend import SamplingParams
from csi.core.engine import Engine
from tests.support.aio import run_async
from tests.support.faces import chat_completion, chat_completion_stream
from tests.support.paths import MODELS, ROOT
from tests.support.prompts import PROMPTS
from tests.support.reference import hf_next_logits, hf_prompt_ids
from tests.support.sampling_reference import log_softmax, reference_distribution

CASES = [
    {"temperature": 0.8, "top_p": 0.9},
    {"temperature": 1.0, "top_k": 20, "repetition_penalty": 1.3},
    {"temperature": 0.7, "frequency_penalty": 0.8, "presence_penalty": 0.5, "logit_bias": {"5": 3.0, "100": -100}},
    {"temperature": 1.2, "top_k": 50, "top_p": 0.8, "frequency_penalty": -0.5, "presence_penalty": 1.5},
]


@pytest.fixture(scope="module")
def engine() -> Engine:
    eng = Engine(CPythonBackend(MODELS))
    run_async(eng.load(["tiny-chat"]))
    return eng


def chat(engine: Engine, request: dict) -> dict:
    return run_async(chat_completion(engine, request)).model_dump()


def dense(ids: np.ndarray, probs: np.ndarray, size: int) -> np.ndarray:
    out = np.zeros(size)
    out[ids] = probs
    return out


def js_steps(steps: list[dict]) -> list[dict]:
    """processLogits + candidates of worker/sampling/ on each step, run by node."""
    script = f"""
      import {{ processLogits, candidates }} from "{ROOT}/worker/sampling/index.js";
      import {{ readFileSync }} from "node:fs";
      const steps = JSON.parse(readFileSync(0, "utf8"));
      console.log(JSON.stringify(steps.map((s) => {{
        const processed = processLogits(Float32Array.from(s.logits), s.params, s.sequence, new Map(s.counts));
        const c = candidates(processed, s.params);
        return {{processed: Array.from(processed), ids: Array.from(c.ids), probs: Array.from(c.probs)}};
      }})));"""
    out = subprocess.run(["node", "--input-type=module", "-e", script], input=json.dumps(steps),
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


@pytest.mark.parametrize("case", CASES)
def test_processed_distribution_equals_the_reference_step_by_step(engine, case):
    bias = {int(k): v for k, v in case.get("logit_bias", {}).items()}
    params = SamplingParams(
        temperature=case["temperature"], top_k=case.get("top_k", 0), top_p=case.get("top_p", 1.0), seed=3,
        repetition_penalty=case.get("repetition_penalty", 1.0),
        frequency_penalty=case.get("frequency_penalty", 0.0), presence_penalty=case.get("presence_penalty", 0.0),
        logit_bias=tuple(bias.items()))
    steps, refs = [], []
    for messages in PROMPTS[:2]:
        reply = chat(engine, {"messages": messages, "max_tokens": 6, "seed": 3, "return_token_ids": True,
                              "ignore_eos": True, **case})
        prompt, generated = reply["prompt_token_ids"], reply["choices"][0]["token_ids"]
        for i in range(len(generated)):
            sequence, so_far = prompt + generated[:i], generated[:i]
            logits = hf_next_logits(sequence)
            refs.append(reference_distribution(
                logits, temperature=params.temperature, top_k=params.top_k, top_p=params.top_p,
                repetition_penalty=params.repetition_penalty, frequency_penalty=params.frequency_penalty,
                presence_penalty=params.presence_penalty, logit_bias=bias, sequence=sequence, generated=so_far))
            counts = {t: so_far.count(t) for t in set(so_far)}
            steps.append({"logits": logits.tolist(), "params": params.to_dict(), "sequence": sequence,
                          "counts": list(counts.items()), "py": (logits, sequence, counts)})
    js = js_steps([{k: v for k, v in s.items() if k != "py"} for s in steps])
    for step, (ref_processed, ref_p), js_out in zip(steps, refs, js, strict=True):
        logits, sequence, counts = step["py"]
        processed = process_logits(logits, params, sequence, counts)
        np.testing.assert_allclose(processed, ref_processed, atol=1e-4)
        np.testing.assert_allclose(js_out["processed"], ref_processed, atol=1e-4)
        ids, probs = candidates(processed, params)
        np.testing.assert_allclose(dense(ids, probs, len(ref_p)), ref_p, atol=1e-6)
        np.testing.assert_allclose(dense(np.array(js_out["ids"]), np.array(js_out["probs"]), len(ref_p)), ref_p,
                                   atol=1e-6)


def test_greedy_logprobs_match_torch_log_softmax(engine):
    reply = chat(engine, {"messages": PROMPTS[0], "temperature": 0, "max_tokens": 16, "logprobs": True,
                          "top_logprobs": 5, "return_token_ids": True, "ignore_eos": True})
    prompt, generated = reply["prompt_token_ids"], reply["choices"][0]["token_ids"]
    content = reply["choices"][0]["logprobs"]["content"]
    assert len(content) == len(generated) == 16
    for i, entry in enumerate(content):
        ref = log_softmax(hf_next_logits(prompt + generated[:i]))
        assert abs(entry["logprob"] - ref[generated[i]]) < 1e-3
        top = np.argsort(-ref, kind="stable")[:5]
        assert [t["logprob"] for t in entry["top_logprobs"]] == pytest.approx(ref[top].tolist(), abs=1e-3)
        assert entry["top_logprobs"][0]["bytes"] == entry["bytes"]  # greedy: the chosen token is the best
        assert bytes(entry["bytes"]).decode("utf-8", "replace") == entry["token"]


def test_n_choices_are_indexed_seeded_and_distinct(engine):
    req = {"messages": PROMPTS[1], "n": 3, "temperature": 1.0, "max_tokens": 12, "seed": 11, "return_token_ids": True}
    a, b = chat(engine, req), chat(engine, req)
    assert [c["index"] for c in a["choices"]] == [0, 1, 2]
    assert [c["token_ids"] for c in a["choices"]] == [c["token_ids"] for c in b["choices"]]
    assert len({tuple(c["token_ids"]) for c in a["choices"]}) > 1
    assert a["usage"]["completion_tokens"] == sum(len(c["token_ids"]) for c in a["choices"])


def test_stop_sequence_spanning_tokens_is_cut_and_never_streamed(engine):
    base = {"messages": PROMPTS[2], "temperature": 0, "max_tokens": 40, "ignore_eos": True}
    text = chat(engine, base)["choices"][0]["message"]["content"]
    stop = text[len(text) // 2: len(text) // 2 + 4]
    cut = text.find(stop)
    assert 0 < cut and len(stop) == 4
    reply = chat(engine, {**base, "stop": ["zzzz-never", stop]})
    assert reply["choices"][0]["message"]["content"] == text[:cut]
    assert reply["choices"][0]["finish_reason"] == "stop"

    async def streamed() -> list[str]:
        stream = chat_completion_stream(engine, {**base, "stop": stop, "stream": True})
        return [c.choices[0].delta.content or "" async for c in stream if c.choices]

    pieces = run_async(streamed())
    assert "".join(pieces) == text[:cut]


def test_second_turn_reuses_the_cache_and_matches_a_cold_run(engine):
    first = [{"role": "user", "content": "What does json.dumps do?"}]
    r1 = chat(engine, {"messages": first, "temperature": 0, "max_tokens": 20})
    second = [*first, {"role": "assistant", "content": r1["choices"][0]["message"]["content"]},
              {"role": "user", "content": "And json.loads?"}]
    warm = chat(engine, {"messages": second, "temperature": 0, "max_tokens": 20, "return_token_ids": True})
    cached = warm["usage"]["prompt_tokens_details"]["cached_tokens"]
    assert 0 < cached < warm["usage"]["prompt_tokens"]
    run_async(engine.reset_chat())
    cold = chat(engine, {"messages": second, "temperature": 0, "max_tokens": 20, "return_token_ids": True})
    assert cold["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
    assert cold["choices"][0]["token_ids"] == warm["choices"][0]["token_ids"]
    assert cold["prompt_token_ids"] == hf_prompt_ids(second)
