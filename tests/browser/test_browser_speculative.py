"""Speculative decoding in the worker (ChatModel.verify: drafts checked in one forward pass, the KV
cache cut back on the CPU or the GPU): on the real SmolLM2 on WASM, replies that copy from their prompt
are torch's greedy ones with drafts accepted, and sampled ones are plain decoding's for the same
seed; on WebGPU (SwiftShader), where the cache is cut by GPU copies, the same ids with and without."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.cpython.test_speculative import CODE, EXTRACTIVE
from tests.support.browser import CHROMIUM, CHROMIUM_ARGS, LOCAL_PREFIXES, EnginePage, open_engine_page, tracked_context
from tests.support.smollm2_reference import MODEL, greedy_ids

pytestmark = pytest.mark.browser
MAX_TOKENS = 40


@pytest.fixture(scope="module")
def expected() -> dict[str, list[int]]:
    """torch's greedy replies, computed before Chromium starts working (the two share 2 cores)."""
    return {p: greedy_ids([{"role": "user", "content": p}], MAX_TOKENS) for p in EXTRACTIVE[:1]}


@pytest.fixture(scope="module")
def page(expected: dict[str, list[int]], browser: Any, site_url: str) -> Iterator[EnginePage]:
    ep = open_engine_page(browser, site_url, [MODEL], "wasm")
    yield ep
    ep.page.context.close()


def ask(ep: EnginePage, prompt: str, speculative: bool, **setting: Any) -> dict[str, Any]:
    return ep.ok("return await engine.chat.completions.create(arg);",
                 {"messages": [{"role": "user", "content": prompt}], "max_tokens": MAX_TOKENS, "return_token_ids": True,
                  "extra_body": {"speculative": speculative}, **setting}, timeout=300_000)


@pytest.mark.parametrize("prompt", EXTRACTIVE[:1])
def test_greedy_replies_with_drafts_are_torchs(page: EnginePage, expected: dict[str, list[int]], prompt: str) -> None:
    reply = ask(page, prompt, True, temperature=0)
    ids = reply["choices"][0]["token_ids"]
    assert ids == expected[prompt][:len(ids)] and len(ids) >= 20
    assert reply["usage"]["extra"]["accepted_draft_tokens"] > 5


def test_sampled_replies_with_drafts_are_plain_decodings_for_the_seed(page: EnginePage) -> None:
    setting = {"temperature": 0.8, "top_p": 0.9, "seed": 11, "repetition_penalty": 1.05, "logprobs": True}
    plain, fast = (ask(page, EXTRACTIVE[1], s, **setting) for s in (False, True))
    assert fast["choices"][0]["token_ids"] == plain["choices"][0]["token_ids"]
    assert fast["usage"]["extra"]["draft_tokens"] > 0
    for a, b in zip(plain["choices"][0]["logprobs"]["content"], fast["choices"][0]["logprobs"]["content"],
                    strict=True):
        assert abs(a["logprob"] - b["logprob"]) < 1e-3


@pytest.mark.webgpu
def test_on_webgpu_the_cache_cut_on_the_gpu_gives_the_same_ids(playwright: Any, site_url: str) -> None:
    gpu = playwright.chromium.launch(executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, "--enable-unsafe-webgpu"])
    ep = open_engine_page(gpu, site_url, ["tiny-chat"], "webgpu")
    try:
        prompt = f"Repeat this code exactly:\n\n{CODE}\n{CODE}"
        plain, fast = (ep.ok("return await engine.chat.completions.create(arg);",
                             {"messages": [{"role": "user", "content": prompt}], "max_tokens": 48, "temperature": 0,
                              "return_token_ids": True, "ignore_eos": True, "extra_body": {"speculative": s}},
                             timeout=300_000) for s in (False, True))
        assert fast["choices"][0]["token_ids"] == plain["choices"][0]["token_ids"]
        extra = fast["usage"]["extra"]
        assert extra["draft_tokens"] > extra["accepted_draft_tokens"] > 0, extra  # kept some, cut some
    finally:
        gpu.close()


def test_the_playground_shows_the_drafts_accepted(browser: Any, site_url: str) -> None:
    """A person asking the real model to quote a passage sees, under the reply, how many drafted
    tokens were kept."""
    context, requests = tracked_context(browser)
    page = context.new_page()
    page.set_default_timeout(300_000)
    try:
        page.goto(site_url + f"index.html?model={MODEL}&max_tokens={MAX_TOKENS}&temperature=0")
        page.wait_for_selector("body[data-ready='true']")
        page.fill("#prompt", EXTRACTIVE[0])
        page.click("#send")
        reply = page.wait_for_selector(".message.assistant[data-done='true']")
        meta = reply.query_selector(".meta").inner_text()
        kept, drafted = (int(x) for x in re.search(r"drafts (\d+)/(\d+) accepted", meta).groups())  # type: ignore[union-attr]
        assert 0 < kept <= drafted, meta
        assert requests and [u for u in requests if not u.startswith(LOCAL_PREFIXES)] == []
    finally:
        context.close()
