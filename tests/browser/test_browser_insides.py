"""RemoteLLM GenerationalGuts in Chromium (worker, transformers.js/ORT-web), against torch."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.browser import EnginePage, open_engine_page
from tests.support.insides_reference import INSIDES_PROMPTS, check_insides, reference_insides

GUTS = "return await engine.remote.generationalGuts(arg);"


@pytest.fixture(scope="module")
def gpt2_page(browser: Any, site_url: str) -> Iterator[EnginePage]:
    ep = open_engine_page(browser, site_url, ["tiny-gpt2"], "wasm")
    yield ep
    assert ep.foreign_requests() == []
    ep.page.context.close()


@pytest.mark.parametrize("prompt", INSIDES_PROMPTS[:2])
def test_tiny_chat_guts_equal_torch(engine_page, prompt):
    reply = engine_page.ok(GUTS, {"prompt": prompt, "fft_embeddings": False, "embedding_trunkation": 0,
                                  "top_k_logits": 8})
    check_insides(reply, reference_insides("tiny-chat", prompt), fft=False, keep=0, top_k=8)


def test_tiny_chat_defaults_fft_and_truncation(engine_page):
    prompt = INSIDES_PROMPTS[2]
    reply = engine_page.ok(GUTS, {"prompt": prompt})
    check_insides(reply, reference_insides("tiny-chat", prompt), fft=True, keep=25, top_k=5)


@pytest.mark.parametrize(("fft", "keep"), [(False, 0), (True, 0), (True, 9)])
def test_gpt2_guts_equal_torch(gpt2_page, fft, keep):
    prompt = INSIDES_PROMPTS[1]
    reply = gpt2_page.ok(GUTS, {"prompt": prompt, "fft_embeddings": fft, "embedding_trunkation": keep,
                                "top_k_logits": 4})
    check_insides(reply, reference_insides("tiny-gpt2", prompt), fft=fft, keep=keep, top_k=4)


def test_bad_values_are_typed_errors_and_the_engine_goes_on(gpt2_page):
    out = gpt2_page.ok(
        """const bad = [{prompt: ''}, {prompt: 'x', embedding_trunkation: -1}, {prompt: 'x', top_k_logits: -1},
                        {prompt: 'x', top_k_logits: 99999}, {prompt: 'word '.repeat(2000)},
                        {prompt: 'x', fft_embeddings: 1}];
           const errors = [];
           for (const r of bad) {
             try { await engine.remote.generationalGuts(r); errors.push(null); }
             catch (e) { errors.push([e.name, e.param]); }
           }
           const after = await engine.remote.generationalGuts({prompt: 'def f(x):', top_k_logits: 3});
           const text = (await engine.completions.create({prompt: 'def f(x):', max_tokens: 4, temperature: 0}))
             .choices[0].text;
           return {errors, generations: after.generations.length, text};""")
    assert out["errors"] == [
        ["InvalidInputError", "prompt"], ["InvalidInputError", "embedding_trunkation"],
        ["InvalidInputError", "top_k_logits"], ["InvalidInputError", "top_k_logits"],
        ["ContextWindowExceededError", "prompt"], ["InvalidInputError", "fft_embeddings"]]
    assert out["generations"] == 3 and isinstance(out["text"], str)


def test_decoding_is_unchanged_by_insides(engine_page):
    out = engine_page.ok(
        """const run = async () => (await engine.completions.create({prompt: 'The json module', max_tokens: 10,
                                                                        temperature: 0})).choices[0].text;
           const before = await run();
           await engine.remote.generationalGuts({prompt: 'anything at all', top_k_logits: 1});
           return [before, await run()];""")
    assert out[0] == out[1]
