"""The Models panel (index.html#models) as a person drives it: the picker of the site's models with
their sizes on disk, a Hub id's download size from a mirror, the models stored in the browser's
Cache API with their bytes and a Delete button, the storage estimate, the device with the WebGPU
adapter, and Cancel during a load of the real model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from buildtools.models.hub_mirror import Mirror
from tests.support.browser import LOCAL_PREFIXES
from tests.support.paths import MODELS, ROOT

pytestmark = pytest.mark.browser

SHOTS = ROOT / "test-results"
PageAndRequests = tuple[Any, list[str]]
BUILT_IN_CHAT = ["smollm2-135m-instruct", "tiny-chat", "tiny-gpt2"]
HUB_REPO = "csi-test/tiny-qwen2"
# what transformers.js reads of that repo on WASM (its config names fp32 weights), as
# tests/browser/test_browser_hub.py sees in the worker's download plan
HUB_FILES = ["config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json", "onnx/model.onnx"]


def folder_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


@pytest.fixture()
def page_and_requests(browser: Any) -> Iterator[tuple[Any, list[str]]]:
    """A page in a context of its own (an empty Cache API), and every URL it requests."""
    context = browser.new_context()
    requests: list[str] = []
    context.on("request", lambda r: requests.append(r.url))
    page = context.new_page()
    page.set_default_timeout(240_000)
    yield page, requests
    context.close()


def open_models(page: Any, site_url: str, query: str = "model=tiny-chat") -> None:
    page.goto(site_url + f"index.html?{query}#models")
    page.wait_for_selector("body[data-ready='true']")
    page.wait_for_selector("#models-site li")
    assert page.locator("#panel-models").is_visible()


def screenshots(page: Any, name: str) -> None:
    SHOTS.mkdir(exist_ok=True)
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(500)  # the phone layout's sidebar slides away
        page.screenshot(path=str(SHOTS / f"{name}-{width}.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 900})


def cached_files(page: Any, model: str) -> dict[str, int]:
    """The model's files in the Cache API, read by the browser: path under /models/<id>/ -> bytes."""
    return page.evaluate(
        """async (model) => {
             const cache = await caches.open('transformers-cache');
             const out = {};
             for (const request of await cache.keys()) {
               const path = decodeURIComponent(new URL(request.url).pathname);
               const at = path.indexOf(`/models/${model}/`);
               if (at < 0) continue;
               out[path.slice(at + `/models/${model}/`.length)] = (await (await cache.match(request)).blob()).size;
             }
             return out;
           }""",
        model,
    )


def test_the_picker_lists_the_site_models_real_one_first_with_their_sizes_on_disk_and_the_device(
        page_and_requests: tuple[Any, list[str]], site_url: str) -> None:
    page, requests = page_and_requests
    open_models(page, site_url)
    items = page.locator("#models-site li")
    listed = [items.nth(i).get_attribute("data-model") for i in range(items.count())]
    assert listed[0] == "smollm2-135m-instruct"
    assert set(BUILT_IN_CHAT) <= set(listed) and "all-minilm-l6-v2" not in listed  # an embedding model
    for i, model in enumerate(listed):
        size = items.nth(i).locator(".size")
        on_disk = folder_bytes(MODELS / model)
        assert int(size.get_attribute("data-bytes")) == on_disk, model
        assert size.inner_text() == f"{on_disk / 1e6:.1f} MB", model
    sources = {listed[i]: items.nth(i).locator(".source").inner_text() for i in range(len(listed))}
    assert all(sources[m] == "built-in" for m in BUILT_IN_CHAT)
    # the top bar's quick picker: the same models, the real one first
    options = page.locator("#model-list option")
    assert options.nth(0).get_attribute("value") == "smollm2-135m-instruct"

    # before a download: the real model is chosen; its size and the storage it fits in
    page.wait_for_function("() => document.querySelector('#models-plan').dataset.bytes !== undefined")
    plan = page.locator("#models-plan")
    real = folder_bytes(MODELS / "smollm2-135m-instruct")
    assert int(plan.get_attribute("data-bytes")) == real
    assert f"{real / 1e6:.1f} MB to download" in plan.inner_text() and "free of" in plan.inner_text()

    # the storage estimate, as the browser gives it
    page.wait_for_function("() => document.querySelector('#models-storage').dataset.quota !== undefined")
    estimate = page.evaluate("navigator.storage.estimate()")
    shown = page.locator("#models-storage")
    # Chromium's quota follows the disk's free space, which other processes change: close, not equal
    assert int(shown.get_attribute("data-quota")) == pytest.approx(estimate["quota"], rel=0.01)
    text = shown.inner_text()
    assert text.startswith("Storage: ") and " used of " in text and text.endswith(" GB.")
    assert float(text.split(" used of ")[1].removesuffix(" GB.")) == pytest.approx(estimate["quota"] / 1e9, rel=0.01)

    # the device: WebGPU's adapter, or that there is none (this Chromium runs without the flag)
    page.wait_for_function("() => document.querySelector('#models-adapter').dataset.webgpu !== undefined")
    has_gpu = page.evaluate("async () => !!(navigator.gpu && await navigator.gpu.requestAdapter())")
    adapter = page.locator("#models-adapter").inner_text()
    assert adapter.startswith("WebGPU adapter:") if has_gpu else "WebGPU not available" in adapter
    assert page.locator("input[name=models-device][value=wasm]").is_checked()
    page.check("input[name=models-device][value=auto]")
    assert page.locator("#device").input_value() == "auto"  # the top bar's picker follows
    screenshots(page, "models")
    assert [u for u in requests if not u.startswith(LOCAL_PREFIXES)] == []


def test_a_loaded_model_is_listed_with_its_cached_bytes_and_delete_removes_it(
        page_and_requests: PageAndRequests, site_url: str) -> None:
    page, requests = page_and_requests
    open_models(page, site_url)
    row = page.locator("#models-cached tr[data-model='tiny-chat']")
    row.wait_for()
    files = cached_files(page, "tiny-chat")
    assert {"config.json", "onnx/model.onnx", "tokenizer.json"} <= set(files)
    for name, size in files.items():  # what the cache holds is the file the site serves
        assert size == (MODELS / "tiny-chat" / name).stat().st_size, name
    assert int(row.locator(".size").get_attribute("data-bytes")) == sum(files.values())
    assert row.locator(".files").inner_text() == f"{len(files)} files"
    assert "(loaded)" in row.locator(".model").inner_text()

    row.get_by_role("button", name="Delete tiny-chat from this browser").click()
    row.wait_for(state="detached")
    assert cached_files(page, "tiny-chat") == {}
    status = page.locator("#models-cache-status")
    assert "Deleted tiny-chat" in status.inner_text() and "still loaded" in status.inner_text()
    assert status.get_attribute("class") == "warning"
    assert page.locator("#models-cached tr[data-model]").count() == 0
    assert [u for u in requests if not u.startswith(LOCAL_PREFIXES)] == []


def test_cancel_during_a_load_of_the_real_model_stops_it_and_tiny_chat_loads_after(
        page_and_requests: PageAndRequests, site_url: str) -> None:
    page, requests = page_and_requests
    open_models(page, site_url)
    page.check("#models-site li[data-model='smollm2-135m-instruct'] input")
    page.click("#models-load")
    page.wait_for_selector("#models-state[data-state='loading']")
    # bytes of the real model are coming
    page.wait_for_function("() => Number(document.querySelector('#models-progress').dataset.bytesLoaded) > 0")
    state = page.locator("#models-state").inner_text()
    assert state.startswith("smollm2-135m-instruct: loading ") and "% of " in state
    assert page.locator("#models-cancel").is_enabled()
    page.click("#models-cancel")
    page.wait_for_selector("#models-state[data-state='cancelled']")
    assert page.locator("#models-state").inner_text() == "Cancelled loading smollm2-135m-instruct: no model is loaded."
    assert page.locator("#models-progress").is_hidden() and page.locator("#models-cancel").is_disabled()
    assert page.locator("#models-cached .models-loaded").count() == 0
    # the engine has no model: a question fails instead of being answered
    page.click("#tab-chat")
    page.fill("#prompt", "Hello?")
    page.click("#send")
    failed = page.wait_for_selector(".message.assistant[data-done='true']")
    assert "error" in (failed.get_attribute("class") or "")

    page.click("#tab-models")
    page.check("#models-site li[data-model='tiny-chat'] input")
    page.click("#models-load")
    page.wait_for_selector("#models-state[data-state='ready']")
    assert page.locator("#models-state").inner_text() == "tiny-chat is ready in this browser (wasm)."
    page.click("#tab-chat")
    page.fill("#prompt", "Hello?")
    page.click("#send")
    # the question asked again replaces the failed turn (the chat keeps that one as a branch)
    reply = page.locator(".message.assistant[data-done='true']:not(.error)")
    reply.wait_for()
    assert page.locator(".message.assistant").count() == 1
    assert reply.locator(".body").inner_text().strip()
    assert [u for u in requests if not u.startswith(LOCAL_PREFIXES)] == []


def test_a_hub_id_shows_its_download_size_from_the_mirror_before_it_loads(
        page_and_requests: PageAndRequests, site_url: str) -> None:
    from buildtools.models.cache import build_hub_models

    folder = build_hub_models()[HUB_REPO]
    mirror = Mirror({HUB_REPO: folder}).start()
    page, requests = page_and_requests
    try:
        open_models(page, site_url, f"model=tiny-chat&hub={mirror.url}")
        page.fill("#models-hub-id", HUB_REPO)
        assert page.locator("#models-hub-choice").is_checked()
        expected = sum((folder / f).stat().st_size for f in HUB_FILES)
        page.wait_for_function("(n) => document.querySelector('#models-plan').dataset.bytes === String(n)",
                               arg=expected)
        assert f"{expected / 1e6:.1f} MB to download" in page.locator("#models-plan").inner_text()
        page.fill("#models-hub-id", "csi-test/absent")
        page.wait_for_function("() => document.querySelector('#models-plan').textContent.includes('size unknown')")
        page.fill("#models-hub-id", HUB_REPO)
        page.click("#models-load")
        page.wait_for_selector("#models-state[data-state='ready']")
        assert page.locator("#models-state").inner_text() == f"{HUB_REPO} is ready in this browser (wasm)."
        page.locator(f"#models-cached tr[data-model='{HUB_REPO}']").wait_for()
    finally:
        mirror.stop()
    served = {s.path for s in mirror.log if s.status == 200}
    assert f"/{HUB_REPO}/resolve/main/onnx/model.onnx" in served
    assert [u for u in requests if not u.startswith(LOCAL_PREFIXES)] == []
