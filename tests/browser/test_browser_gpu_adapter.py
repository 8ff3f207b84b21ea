"""`bench --device webgpu`'s adapter probe in Chromium launched with its GPU flags: this machine has
no GPU, so the adapter Chromium offers is SwiftShader, and the bench refuses it, naming it."""

from __future__ import annotations

from typing import Any

import pytest

from buildtools.bench.gpu import GPU_FLAGS, probe, refusal
from tests.support.browser import CHROMIUM, CHROMIUM_ARGS

pytestmark = [pytest.mark.browser, pytest.mark.webgpu]


def test_swiftshader_is_found_and_refused_as_software(playwright: Any, site_url: str) -> None:
    flags = [*CHROMIUM_ARGS, *GPU_FLAGS]
    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=flags)
    try:
        page = browser.new_page()
        page.goto(site_url + "web/engine.js")
        adapter = probe(page)
    finally:
        browser.close()
    assert adapter.info is not None, "Chromium with the GPU flags offers no adapter at all"
    assert adapter.info["architecture"] == "swiftshader" and adapter.info["is_fallback_adapter"] is True
    # developer features are on: the adapter's type, backend and driver are reported
    assert adapter.info["type"] == "CPU" and adapter.info["backend"] == "vulkan"
    assert not adapter.hardware
    message = refusal(adapter, flags)
    assert "SwiftShader Device" in message and " ".join(GPU_FLAGS) in message
