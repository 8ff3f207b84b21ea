"""A GGUF opened in the page on WebGPU (SwiftShader adapter in headless Chromium): the real SmolLM2
file's float32 graph gives the greedy ids transformers' reading of the same file gives."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.test_browser_gguf import SMOLLM2, gguf_site  # noqa: F401 - gguf_site is a fixture
from tests.support.browser import CHROMIUM, CHROMIUM_ARGS, EnginePage, boot_engine, tracked_context
from tests.support.smollm2_reference import greedy_ids

pytestmark = [pytest.mark.browser, pytest.mark.webgpu]


@pytest.fixture(scope="module")
def webgpu_gguf_page(playwright: Any, gguf_site: tuple[str, Path]) -> Iterator[EnginePage]:  # noqa: F811
    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, "--enable-unsafe-webgpu"])
    context, requests = tracked_context(browser)
    page = context.new_page()
    page.set_default_timeout(600_000)
    boot_engine(page, gguf_site[0], ["tiny-chat"], "webgpu")
    yield EnginePage(page, requests)
    browser.close()


def test_a_gguf_runs_on_webgpu_with_the_ids_of_transformers(webgpu_gguf_page: EnginePage) -> None:
    ep = webgpu_gguf_page
    assert ep.ok("return !!(navigator.gpu && await navigator.gpu.requestAdapter());")
    ep.ok("await engine.reload(arg);", SMOLLM2, timeout=600_000)
    messages = [{"role": "user", "content": "What is the capital of France?"}]
    tokens = 4
    reply = ep.ok("return await engine.chat.completions.create(arg);",
                  {"model": SMOLLM2, "messages": messages, "temperature": 0, "max_tokens": tokens,
                   "return_token_ids": True}, timeout=600_000)
    assert reply["choices"][0]["token_ids"] == greedy_ids(messages, tokens)
    assert ep.foreign_requests() == []
