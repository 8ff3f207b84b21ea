"""The built-in smollm2-135m-instruct in Chromium (worker, transformers.js, onnxruntime-web WASM)
against HF transformers' reading of the GGUF it was built from, and in the playground as a person
meets it (no model named in the URL)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from tests.support.browser import LOCAL_PREFIXES, EnginePage, open_engine_page, tracked_context
from tests.support.paths import ROOT
from tests.support.smollm2_reference import MODEL, greedy_ids, hf_tokenizer, log_softmax_rows, prompt_ids

pytestmark = pytest.mark.browser

MAX_TOKENS = 24
# float32 on both sides, summed in other orders (WASM SIMD kernels vs torch) through 30 layers;
# measured at most ~5e-5 here, and a wrong weight or cache entry moves log-probabilities by ~1e-1.
LOGPROB_TOLERANCE = 1e-3


QUESTIONS = ["What is the capital of France?", "What is 2+2?", "Name three primary colors."]


@dataclass
class Expected:
    prompt: list[int]
    ids: list[int]  # torch's greedy reply
    logprobs: np.ndarray  # torch's log-softmax before each of its tokens


@pytest.fixture(scope="module")
def expected() -> dict[str, Expected]:
    """torch's answers, computed before Chromium starts working (the two share 2 cores)."""
    out = {}
    for question in QUESTIONS:
        prompt, ids = prompt_ids(user(question)), greedy_ids(user(question), MAX_TOKENS)
        out[question] = Expected(prompt, ids, log_softmax_rows(prompt + ids, len(prompt) - 1))
    return out


@pytest.fixture(scope="module")
def smollm2_page(expected: dict[str, Expected], browser: Any, site_url: str) -> Iterator[EnginePage]:
    ep = open_engine_page(browser, site_url, [MODEL], "wasm")
    yield ep
    ep.page.context.close()


def user(question: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": question}]


@pytest.mark.parametrize("question", QUESTIONS[:2])
def test_greedy_ids_and_logprobs_equal_torch(smollm2_page: EnginePage, expected: dict[str, Expected],
                                            question: str) -> None:
    reply = smollm2_page.ok("return await engine.chat.completions.create(arg);", {
        "messages": user(question), "temperature": 0, "max_tokens": MAX_TOKENS, "return_token_ids": True,
        "logprobs": True, "top_logprobs": 3})
    ref = expected[question]
    assert reply["prompt_token_ids"] == ref.prompt
    assert reply["choices"][0]["token_ids"] == ref.ids
    entries = reply["choices"][0]["logprobs"]["content"]
    assert len(entries) == len(ref.ids) >= 5
    for i, entry in enumerate(entries):
        assert abs(entry["logprob"] - ref.logprobs[i, ref.ids[i]]) < LOGPROB_TOLERANCE
        top = np.argsort(-ref.logprobs[i], kind="stable")[:3]
        assert [t["logprob"] for t in entry["top_logprobs"]] == pytest.approx(ref.logprobs[i, top].tolist(),
                                                                               abs=LOGPROB_TOLERANCE)
    if "France" in question:
        assert "Paris" in reply["choices"][0]["message"]["content"]


def test_streamed_reply_is_torchs_greedy_reply_token_by_token(smollm2_page: EnginePage,
                                                             expected: dict[str, Expected]) -> None:
    messages = user(QUESTIONS[2])
    chunks = smollm2_page.ok(
        """const chunks = [];
           for await (const c of await engine.chat.completions.create({...arg, stream: true})) chunks.push(c);
           return chunks;""",
        {"messages": messages, "temperature": 0, "max_tokens": MAX_TOKENS, "return_token_ids": True})
    ref = expected[QUESTIONS[2]].ids
    ids = [t for c in chunks for ch in c["choices"] for t in ch.get("token_ids") or []]
    text = "".join(ch["delta"].get("content") or "" for c in chunks for ch in c["choices"])
    assert ids == ref
    assert text == hf_tokenizer().decode(ref, skip_special_tokens=True)
    assert len([c for c in chunks if c["choices"] and c["choices"][0]["delta"].get("content")]) > 5
    assert chunks[-1]["choices"][0]["finish_reason"] == ("stop" if len(ref) < MAX_TOKENS else "length")
    assert smollm2_page.foreign_requests() == []


def test_the_playground_answers_with_the_real_model_by_default(browser: Any, site_url: str) -> None:
    context, requests = tracked_context(browser)
    try:
        page = context.new_page()
        page.set_default_timeout(180_000)
        page.goto(site_url + "index.html?temperature=0&max_tokens=24")  # no model named: the default one
        page.wait_for_selector("body[data-ready='true']")
        assert page.input_value("#model-id") == MODEL
        page.fill("#prompt", "What is the capital of France?")
        page.click("#send")
        done = page.wait_for_selector(".message.assistant[data-done='true']")
        (ROOT / "test-results").mkdir(exist_ok=True)
        page.screenshot(path=str(ROOT / "test-results" / "playground-real-model.png"), full_page=True)
        assert "Paris" in done.query_selector(".body").inner_text()
        assert requests and [u for u in requests if not u.startswith(LOCAL_PREFIXES)] == []
    finally:
        context.close()
