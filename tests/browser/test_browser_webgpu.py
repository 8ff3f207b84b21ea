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
