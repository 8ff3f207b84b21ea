"""Log-probabilities are always finite numbers: repetition penalties that could make float32 logits
infinite are refused on every face that takes one, and worker/sampling/ and the CPython backend
floor what is left (no chance at all, logits that are not finite) at MIN_LOGPROB, never sending
-Infinity or NaN (JSON ``null``)."""

from __future__ import annotations

import json
import math
import subprocess

import numpy as np
import pytest

from csi.backends.cpython import CPythonBackend
from csi.backends.cpython.logits import process_logits, token_logprobs
from csi.core.backend import SamplingParams
from csi.core.engine import Engine
from csi.core.request import MIN_LOGPROB
from csi.errors import InvalidInputError
from csi.wire import MAX_REPETITION_PENALTY, MIN_REPETITION_PENALTY
from tests.support.aio import run_async
from tests.support.faces import chat_completion, completion
from tests.support.faces import spin as spin_face
from tests.support.paths import MODELS, ROOT
from tests.support.prompts import PROMPTS
from tests.support.reference import hf_next_logits
from tests.support.sampling_reference import log_softmax, reference_distribution

F32_MAX = float(np.finfo(np.float32).max)


@pytest.fixture(scope="module")
def engine() -> Engine:
    eng = Engine(CPythonBackend(MODELS))
    run_async(eng.load(["tiny-chat"]))
    return eng


def chat(engine: Engine, request: dict) -> dict:
    return run_async(chat_completion(engine, request)).model_dump()


BAD = [1e-320, 5e-324, 0.0, -1.0, 0.0099, 100.01, 1e30, 1.7e308]


@pytest.mark.parametrize("penalty", BAD)
def test_a_repetition_penalty_outside_the_range_is_refused_on_every_face(engine, penalty):
    with pytest.raises(InvalidInputError) as err:
        chat(engine, {"messages": PROMPTS[0], "max_tokens": 2, "logprobs": True, "repetition_penalty": penalty})
    assert err.value.param == "repetition_penalty"
    with pytest.raises(InvalidInputError) as err:
        run_async(completion(engine, {"prompt": "x", "max_tokens": 2, "repetition_penalty": penalty}))
    assert err.value.param == "repetition_penalty"
    with pytest.raises(InvalidInputError) as err:
        run_async(spin_face.infer(engine, {"model": "tiny-chat", "prompt": "x",
                                           "params": {"max_tokens": 2, "repeat_penalty": penalty}}))
    assert err.value.param == "params.repeat_penalty"


@pytest.mark.parametrize("penalty", [MIN_REPETITION_PENALTY, MAX_REPETITION_PENALTY])
def test_the_bounds_are_accepted_and_give_the_reference_logprobs(engine, penalty):
    reply = chat(engine, {"messages": PROMPTS[1], "temperature": 0, "max_tokens": 6, "logprobs": True,
                          "top_logprobs": 3, "return_token_ids": True, "ignore_eos": True,
                          "repetition_penalty": penalty})
    json.dumps(reply, allow_nan=False)  # no NaN / Infinity anywhere
    prompt, generated = reply["prompt_token_ids"], reply["choices"][0]["token_ids"]
    content = reply["choices"][0]["logprobs"]["content"]
    assert len(content) == len(generated) == 6
    for i, entry in enumerate(content):
        sequence = prompt + generated[:i]
        processed, _ = reference_distribution(hf_next_logits(sequence), repetition_penalty=penalty,
                                              sequence=sequence)
        ref = np.maximum(log_softmax(processed), MIN_LOGPROB)
        assert generated[i] == int(np.argmax(processed))
        assert abs(entry["logprob"] - ref[generated[i]]) < 1e-3
        top = np.argsort(-ref, kind="stable")[:3]
        assert [t["logprob"] for t in entry["top_logprobs"]] == pytest.approx(ref[top].tolist(), abs=1e-3)
    spin = run_async(spin_face.infer(engine, {"model": "tiny-chat", "prompt": "The json module",
                                              "params": {"max_tokens": 4, "repeat_penalty": penalty}}))
    assert spin["usage"]["generated_token_count"] >= 1


NEG_INF = float("-inf")
# Logits that make non-finite numbers on the way: (name, logits, params, sequence, counts, token, top k)
CRAFTED = [
    # a grammar masked all but two tokens; one masked token is also biased -100
    ("grammar and ban", [NEG_INF, 2.0, NEG_INF, 0.5, NEG_INF], {"logit_bias": [[0, -100]]}, [], [], 1, 5),
    # a token banned by logit_bias -100 among the alternatives: a finite, very low logprob
    ("banned alternative", [3.0, 2.0, 1.0], {"logit_bias": [[0, -100]]}, [], [], 1, 3),
    # every token ruled out: no chance at all
    ("nothing allowed", [NEG_INF, NEG_INF, NEG_INF], {}, [], [], 0, 2),
    # the smallest penalty on logits near the float32 limit saturates instead of overflowing
    ("saturated", [3.0e38, -3.0e38, 1.0, 0.0], {"repetition_penalty": 0.01}, [0, 1, 2], [], 0, 4),
    # the largest penalty on a negative logit near the limit
    ("saturated negative", [-3.0e37, 5.0, 1.0], {"repetition_penalty": 100.0}, [0], [], 1, 3),
    # a spread wider than the floor: the unlikely token's logprob is floored
    ("beyond the floor", [20000.0, 0.0, -1.0], {}, [], [], 1, 3),
    # frequency and presence penalties at their bounds, many repeats
    ("penalties at bounds", [1.0, 2.0, 3.0], {"frequency_penalty": 2.0, "presence_penalty": 2.0}, [],
     [[2, 100000]], 2, 3),
    ("negative penalties at bounds", [1.0, 2.0, 3.0], {"frequency_penalty": -2.0, "presence_penalty": -2.0}, [],
     [[0, 100000]], 0, 3),
]

NODE = f"""
  import {{ processLogits, logprobs }} from "{ROOT}/worker/sampling/index.js";
  import {{ readFileSync }} from "node:fs";
  const cases = JSON.parse(readFileSync(0, "utf8"));
  console.log(JSON.stringify(cases.map((c) => {{
    const logits = Float32Array.from(c.logits.map((v) => (v === null ? -Infinity : v)));
    const processed = processLogits(logits, c.params, c.sequence, new Map(c.counts));
    const r = logprobs(processed, c.token, c.k);
    return {{processed: Array.from(processed).map(String), logprob: r.logprob, top: r.top}};
  }})));"""


def js_logprobs(cases: list[dict]) -> list[dict]:
    out = subprocess.run(["node", "--input-type=module", "-e", NODE], input=json.dumps(cases),
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)  # NaN would have been sent as null


def expected(logits: list[float], params: dict, sequence: list[int], counts: list[list[int]], token: int,
             k: int) -> tuple[float, list[tuple[int, float]]]:
    """From the definitions: saturated penalty and bias in float64, log-softmax, floored, the top k of
    the tokens that are not -inf."""
    with np.errstate(invalid="ignore"):
        processed, _ = reference_distribution(
            np.array(logits), repetition_penalty=params.get("repetition_penalty", 1.0),
            frequency_penalty=params.get("frequency_penalty", 0.0),
            presence_penalty=params.get("presence_penalty", 0.0), logit_bias=dict(params.get("logit_bias", [])),
            sequence=sequence, generated=[t for t, n in counts for _ in range(n)])
        processed = np.where(np.isfinite(processed), np.clip(processed, -F32_MAX, F32_MAX), processed)
        lp = log_softmax(processed)
    lp = np.where(np.isfinite(lp), np.maximum(lp, MIN_LOGPROB), MIN_LOGPROB)
    order = [int(i) for i in np.argsort(-processed, kind="stable") if processed[i] > NEG_INF][:k]
    return float(lp[token]), [(i, float(lp[i])) for i in order]


def test_crafted_logits_give_finite_logprobs_in_js_and_python_alike():
    cases = [{"logits": [None if v == NEG_INF else v for v in logits], "params": params, "sequence": seq,
              "counts": counts, "token": token, "k": k} for _, logits, params, seq, counts, token, k in CRAFTED]
    js = js_logprobs(cases)
    for (name, logits, params, seq, counts, token, k), out in zip(CRAFTED, js, strict=True):
        want_lp, want_top = expected(logits, params, seq, counts, token, k)
        assert isinstance(out["logprob"], float | int) and math.isfinite(out["logprob"]), (name, out)
        assert out["logprob"] == pytest.approx(want_lp, rel=1e-6, abs=1e-4), name
        assert [t[0] for t in out["top"]] == [t[0] for t in want_top], name
        assert [t[1] for t in out["top"]] == pytest.approx([t[1] for t in want_top], rel=1e-6, abs=1e-4), name
        assert all(MIN_LOGPROB <= v <= 0 for _, v in out["top"]), name
        # the penalties saturate: only what was -inf already is -inf, nothing is +inf
        assert all(v != "Infinity" and (v != "-Infinity" or logits[i] == NEG_INF)
                   for i, v in enumerate(out["processed"])), name
        sp = SamplingParams(repetition_penalty=params.get("repetition_penalty", 1.0),
                            frequency_penalty=params.get("frequency_penalty", 0.0),
                            presence_penalty=params.get("presence_penalty", 0.0),
                            logit_bias=tuple((int(a), float(b)) for a, b in params.get("logit_bias", [])))
        processed = process_logits(np.array(logits, dtype=np.float32), sp, seq, dict(counts))
        py_lp, py_top = token_logprobs(processed, token, k)
        assert py_lp == pytest.approx(out["logprob"], rel=1e-6, abs=1e-4), name
        assert [t[0] for t in py_top] == [t[0] for t in out["top"]], name
        assert [t[1] for t in py_top] == pytest.approx([t[1] for t in out["top"]], rel=1e-6, abs=1e-4), name
