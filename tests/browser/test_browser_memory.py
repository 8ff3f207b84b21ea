"""Flat memory in Chromium: 30 generations of every kind, 3 unload/reload cycles and 2 switches to
the real model in one worker, with `engine.memoryStats({jsHeap: true})` after each step; every
figure stays within buildtools/bench/memory.py's bounds (a model never disposed makes
onnxruntime's wasm memory grow at each reload, and fails here)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from buildtools.bench.memory import BOUNDS, Plan, memory_run
from tests.support.browser import CHROMIUM, CHROMIUM_ARGS

pytestmark = pytest.mark.browser

PLAN = Plan(generations=30, every=10, cycles=3, switches=2)


@pytest.fixture(scope="module")
def run(playwright: Any, site_url: str) -> Iterator[dict[str, Any]]:
    # the JS heap measured at once, not at the browser's next garbage collection (up to ~20 s)
    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=[
        *CHROMIUM_ARGS, "--enable-blink-features=ForceEagerMeasureMemory"])
    page = browser.new_page()
    page.set_default_timeout(120_000)
    page.goto(site_url + "web/engine.js")
    yield memory_run(page, "wasm", PLAN)
    browser.close()


def test_memory_returns_to_its_baseline_over_generations_reloads_and_switches(run: dict[str, Any]) -> None:
    failed = {name: check for name, check in run["checks"].items() if not check["ok"]}
    assert run["ok"] and not failed, failed
    # each bound was checked, on each phase
    assert {"ort_wasm_bytes:generations", "ort_wasm_bytes:load_unload", "pyodide_wasm_bytes:load_unload",
            "js_heap_outside_wasm_bytes", "python_objects", "models_after_unload"} <= set(run["checks"])
    assert run["checks"]["js_heap_outside_wasm_bytes"]["bound"] == BOUNDS["js_heap_over_baseline"]


def test_the_figures_are_measured_and_every_kind_of_request_ran(run: dict[str, Any]) -> None:
    steps = run["steps"]
    assert len(steps) == 1 + PLAN.generations // PLAN.every + 2 * PLAN.cycles + PLAN.switches + 1
    for s in steps:
        assert s["pyodide_wasm_bytes"] > 16 << 20 and s["ort_wasm_bytes"] > 16 << 20, s
        assert s["js_heap"]["workers_bytes"] > s["pyodide_wasm_bytes"] + s["ort_wasm_bytes"], s
        assert s["python_objects"] > 10_000 and s["gpu_buffer_bytes"] in (None, 0)  # WASM: no GPU buffers
        assert s["models"] == (0 if s["model"] is None else 1)
    # the real model takes far more of onnxruntime's memory than tiny-chat: the switch is measured
    switched = {s["model"]: s["ort_wasm_bytes"] for s in steps if s["phase"] == "switched"}
    assert switched["smollm2-135m-instruct"] > 4 * steps[0]["ort_wasm_bytes"]
    kinds = {key.split(":")[0] for key in run["finish_reasons"]}
    assert kinds == {"greedy", "sampling_logprobs", "stop", "stream_abort", "json_schema"}
    assert run["finish_reasons"].get("stream_abort:abort", 0) >= PLAN.generations // 5
