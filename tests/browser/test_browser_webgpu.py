"""The WebGPU backend (SwiftShader adapter in headless Chromium): same greedy ids as torch."""

from __future__ import annotations

import pytest

from tests.support.browser import CHROMIUM, CHROMIUM_ARGS, open_engine_page
from tests.support.prompts import PROMPTS
from tests.support.reference import hf_greedy_ids

pytestmark = [pytest.mark.browser, pytest.mark.webgpu]


@pytest.fixture(scope="module")
def webgpu_page(playwright, site_url):
    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, "--enable-unsafe-webgpu"])
    ep = open_engine_page(browser, site_url, ["tiny-chat"], "webgpu")
    yield ep
    browser.close()


def test_webgpu_greedy_ids_equal_hf_transformers(webgpu_page):
    assert webgpu_page.ok("return !!(navigator.gpu && await navigator.gpu.requestAdapter());")
    tokens = 12
    reply = webgpu_page.ok("return await engine.chat.completions.create(arg);",
                           {"messages": PROMPTS[0], "temperature": 0, "max_tokens": tokens, "return_token_ids": True},
                           timeout=600_000)
    assert reply["choices"][0]["token_ids"] == hf_greedy_ids(PROMPTS[0], tokens)
    assert webgpu_page.foreign_requests() == []


def test_webgpu_second_turn_reuses_the_gpu_cache_and_matches_torch(webgpu_page):
    """The KV cache lives on the GPU: a second turn cuts it there (to the common prefix) and runs
    only the new tokens, with the ids torch gives the whole conversation."""
    first = webgpu_page.ok("return await engine.chat.completions.create(arg);",
                           {"messages": PROMPTS[1], "temperature": 0, "max_tokens": 8}, timeout=600_000)
    second = [*PROMPTS[1], {"role": "assistant", "content": first["choices"][0]["message"]["content"]},
              {"role": "user", "content": "And then?"}]
    tokens = 10
    req = {"messages": second, "temperature": 0, "max_tokens": tokens, "return_token_ids": True}
    warm = webgpu_page.ok("return await engine.chat.completions.create(arg);", req, timeout=600_000)
    cached = warm["usage"]["prompt_tokens_details"]["cached_tokens"]
    assert 0 < cached < warm["usage"]["prompt_tokens"]
    # a cut in the middle of the cache, not only an extension of it: a different second turn
    other = [*second[:-1], {"role": "user", "content": "Why?"}]
    cut = webgpu_page.ok("return await engine.chat.completions.create(arg);", {**req, "messages": other},
                         timeout=600_000)
    assert 0 < cut["usage"]["prompt_tokens_details"]["cached_tokens"] < cut["usage"]["prompt_tokens"]
    assert cut["choices"][0]["token_ids"] == hf_greedy_ids(other, tokens)
    webgpu_page.ok("await engine.resetChat(); return true;")
    cold = webgpu_page.ok("return await engine.chat.completions.create(arg);", req, timeout=600_000)
    kept = cold["usage"]["extra"].get("prompt_cache_tokens", 0)  # from a cache kept beyond the page, if any
    assert cold["usage"]["prompt_tokens_details"]["cached_tokens"] == kept
    assert warm["choices"][0]["token_ids"] == cold["choices"][0]["token_ids"] == hf_greedy_ids(second, tokens)
