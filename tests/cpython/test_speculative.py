"""Speculative decoding (drafts from the context, checked in one forward pass: ``core.drafts`` and the
backends' ``verify``) on the real SmolLM2 in csi's CPython backend: the output of every request is the
one plain decoding gives, token for token, greedy or sampled (one choice per position with the same
generator, so a seed gives the same reply), with penalties, logit bias, log-probabilities and stop
sequences; greedy replies are transformers' own; the KV cache rolled back at every draft position
decodes on as a fresh one does."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from csi.backends.cpython import CPythonBackend
from csi.core.backend import SamplingParams
from csi.core.engine import Engine
from tests.support.aio import run_async
from tests.support.faces import chat_completion
from tests.support.paths import MODELS
from tests.support.smollm2_reference import MODEL, greedy_ids

PASSAGE = ("The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France. It is named "
           "after the engineer Gustave Eiffel, whose company designed and built the tower from 1887 to 1889. "
           "Locally nicknamed La dame de fer, it was constructed as the centerpiece of the 1889 World's Fair.")
CODE = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
EXTRACTIVE = [
    f"Passage: {PASSAGE}\n\nQuote the sentence of the passage that says who the tower is named after.",
    f"Rewrite this code with type hints:\n\n{CODE}",
    f"Summarize this text in two sentences:\n\n{PASSAGE}",
]
FREE = ["Tell me a short story about a cat.", "What is the capital of France?"]
SETTINGS: dict[str, dict[str, Any]] = {
    "greedy": {"temperature": 0},
    "sampled": {"temperature": 0.8, "top_p": 0.9, "seed": 7, "repetition_penalty": 1.05},
    "penalties": {"temperature": 0.7, "seed": 3, "repetition_penalty": 1.2, "frequency_penalty": 0.4,
                  "presence_penalty": 0.3},
    "bias, logprobs and stop": {"temperature": 0, "logit_bias": {"578": 3.0, "30": -2.0}, "logprobs": True,
                                "top_logprobs": 3, "stop": ["1889", "\n\n"]},
}
MAX_TOKENS = 40


@pytest.fixture(scope="module")
def engine() -> Engine:
    eng = Engine(CPythonBackend(MODELS))
    run_async(eng.load([MODEL]))
    return eng


def ask(engine: Engine, prompt: str, speculative: bool, **setting: Any) -> dict[str, Any]:
    request = {"model": MODEL, "messages": [{"role": "user", "content": prompt}], "max_tokens": MAX_TOKENS,
               "return_token_ids": True, "extra_body": {"speculative": speculative}, **setting}
    return run_async(chat_completion(engine, request)).model_dump()


@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_every_reply_is_plain_decodings(engine: Engine, setting: str) -> None:
    drafted = accepted = 0
    for prompt in EXTRACTIVE[:2] + FREE[:1]:
        plain, fast = (ask(engine, prompt, s, **SETTINGS[setting]) for s in (False, True))
        a, b = plain["choices"][0], fast["choices"][0]
        assert b["token_ids"] == a["token_ids"], prompt
        assert (b["message"]["content"], b["finish_reason"]) == (a["message"]["content"], a["finish_reason"])
        if a["logprobs"] is not None:  # the same logits, from one pass over more positions: ~1e-6
            for x, y in zip(a["logprobs"]["content"], b["logprobs"]["content"], strict=True):
                assert abs(x["logprob"] - y["logprob"]) < 1e-4
                assert [t["token"] for t in x["top_logprobs"]] == [t["token"] for t in y["top_logprobs"]]
        assert "draft_tokens" not in (plain["usage"]["extra"] or {})
        extra = fast["usage"]["extra"] or {}
        drafted += extra.get("draft_tokens", 0)
        accepted += extra.get("accepted_draft_tokens", 0)
    print(f"{setting}: {accepted} of {drafted} drafted tokens accepted")
    assert drafted > 0
    if setting != "penalties":  # penalties steer away from the context's tokens: drafts rarely agree
        assert accepted > 10


@pytest.mark.parametrize("prompt", EXTRACTIVE)
def test_greedy_replies_with_drafts_are_transformers(engine: Engine, prompt: str) -> None:
    messages = [{"role": "user", "content": prompt}]
    reply = ask(engine, prompt, True, temperature=0)
    assert reply["usage"]["extra"]["accepted_draft_tokens"] > 0
    assert reply["choices"][0]["token_ids"] == greedy_ids(messages, MAX_TOKENS)[:len(reply["choices"][0]["token_ids"])]


def test_under_a_grammar_the_reply_is_plain_decodings(engine: Engine) -> None:
    """The grammar's matcher accepts each choice as the check makes it, so it ends holding exactly
    the reply's tokens: JSON that names the passage's engineer, with drafts taken from the passage."""
    schema = {"type": "object", "properties": {"engineer": {"type": "string"}, "built": {"type": "string"}},
              "required": ["engineer", "built"]}
    setting = {"temperature": 0, "response_format": {"type": "json_schema",
                                                      "json_schema": {"name": "n", "schema": schema}}}
    prompt = EXTRACTIVE[0].replace("Quote the sentence of the passage that says who the tower is named after.",
                                   "Who is the tower named after, and when was it built? Answer in JSON.")
    plain, fast = (ask(engine, prompt, s, **setting) for s in (False, True))
    assert fast["choices"][0]["token_ids"] == plain["choices"][0]["token_ids"]
    assert fast["choices"][0]["message"]["content"] == plain["choices"][0]["message"]["content"]
    print(plain["choices"][0]["message"]["content"], fast["usage"]["extra"])
    assert fast["usage"]["extra"]["accepted_draft_tokens"] > 0


def test_the_cache_rolled_back_at_every_draft_position_decodes_on_as_a_fresh_one() -> None:
    """``verify`` with drafts that are the greedy continuation but for position ``i``: the first ``i``
    kept, position ``i``'s own choice returned, the cache cut after them; plain steps from there give
    the greedy continuation with the logits of an uncut run."""
    backend = CPythonBackend(MODELS)
    run_async(backend.load_model(MODEL, "cpu", None))
    prompt = backend.apply_chat_template(MODEL, [{"role": "user", "content": EXTRACTIVE[0]}])
    greedy = SamplingParams(temperature=0, logprobs=True, top_logprobs=5)

    def plain(n: int) -> list[Any]:
        backend.reuse_prefix(MODEL, [])
        backend.set_sampling(MODEL, greedy)
        feed, out = prompt, []
        for _ in range(n):
            out.append(run_async(backend.step(MODEL, feed)))
            feed = [out[-1].token]
        return out

    k = 6
    reference = plain(k + 4)
    tokens = [r.token for r in reference]
    for i in range(k + 1):
        drafts = tokens[:k]
        if i < k:
            drafts = drafts[:i] + [(drafts[i] + 1) % 49152] + drafts[i + 1:]
        backend.reuse_prefix(MODEL, [])
        backend.set_sampling(MODEL, greedy)
        got = run_async(backend.verify(MODEL, prompt, drafts))
        assert [r.token for r in got] == tokens[:i + 1]
        feed = [got[-1].token]
        for _ in range(i + 1, k + 4):
            got.append(run_async(backend.step(MODEL, feed)))
            feed = [got[-1].token]
        assert [r.token for r in got] == tokens
        for r, s in zip(got, reference, strict=True):
            assert r.logprob is not None and s.logprob is not None
            assert abs(r.logprob - s.logprob) < 1e-4
            assert np.allclose([lp for _, lp in r.top], [lp for _, lp in s.top], atol=1e-4)


def test_an_interrupt_between_two_checks_ends_the_reply_and_the_cache_serves_on(engine: Engine) -> None:
    """``interrupt()`` once the first drafts were checked: the reply ends with ``abort`` at once, its
    tokens plain decoding's; the next request, whose prompt the cache partly holds, is transformers'."""
    from csi.core.request import ChatMessage, GenerationParams, GenerationRequest

    prompt = EXTRACTIVE[0]

    async def interrupted() -> tuple[list[int], Any]:
        request = GenerationRequest(model=MODEL, messages=(ChatMessage("user", prompt),),
                                    params=GenerationParams(max_tokens=MAX_TOKENS,
                                                            sampling=SamplingParams(temperature=0)))
        ids: list[int] = []
        stats = None
        async for event in engine.generate(request):
            if event.delta is not None:
                ids += event.delta.token_ids
                if event.stats.drafted_tokens:
                    engine.interrupt()
            else:
                stats = event.stats
        return ids, stats

    ids, stats = run_async(interrupted())
    assert stats is not None and stats.finish_reason == "abort" and stats.drafted_tokens > 0
    messages = [{"role": "user", "content": prompt}]
    expected = greedy_ids(messages, MAX_TOKENS)
    assert 0 < len(ids) < len(expected) and ids == expected[:len(ids)]
    again = ask(engine, prompt, True, temperature=0)
    assert again["choices"][0]["token_ids"] == expected[:len(again["choices"][0]["token_ids"])]
    assert again["usage"]["prompt_tokens_details"]["cached_tokens"] > 0
