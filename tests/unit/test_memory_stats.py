"""`memory_stats` is a control message answered with the worker's figures and Python's; the flat
memory bench judges a run against its bounds, and a leak in any figure fails it."""

from __future__ import annotations

import copy
import json
from typing import Any

from buildtools.bench.memory import BOUNDS, MIB, judge
from csi.backends.local_host import LocalHost
from csi.runtime import build_runtime
from csi.testing import EOS, ScriptedBackend
from csi.worker.app import WorkerApp
from tests.support.aio import run_async

WORKER = {"pyodide_wasm_bytes": 37 * MIB, "ort_wasm_bytes": 75 * MIB, "other_wasm_bytes": 0,
          "gpu_buffer_bytes": None, "gpu_buffers": None, "models": 1}


def _ask(app: WorkerApp, sent: list[dict[str, Any]]) -> dict[str, Any]:
    sent.clear()
    run_async(app.serve(json.dumps({"id": "m", "type": "memory_stats"})))
    assert [m["type"] for m in sent] == ["result"]  # answered at once, never queued
    return sent[0]["result"]


def test_memory_stats_answers_at_once_with_the_workers_figures_and_pythons_objects():
    runtime = build_runtime(ScriptedBackend([b"<eos>", b"a"], [1, EOS]), LocalHost())
    sent: list[dict[str, Any]] = []
    app = WorkerApp(runtime, lambda s: sent.append(json.loads(s)), memory=lambda: dict(WORKER))
    first = _ask(app, sent)
    assert {k: first[k] for k in WORKER} == WORKER and first["python_objects"] > 1000
    held = [[i] for i in range(20_000)]  # 20,000 more containers for the collector to track
    assert _ask(app, sent)["python_objects"] >= first["python_objects"] + 15_000
    del held
    # without the worker's JS (CPython), Python's figure alone
    assert set(_ask(WorkerApp(runtime, lambda s: sent.append(json.loads(s))), sent)) == {"python_objects"}


def _step(phase: str, step: int, model: str | None, **over: Any) -> dict[str, Any]:
    s: dict[str, Any] = {"phase": phase, "step": step, "model": model, **WORKER, "models": 0 if model is None else 1,
                         "python_objects": 46_700, "gpu_buffer_bytes": 0, "gpu_buffers": 0,
                         "js_heap": {"page_bytes": MIB // 2, "workers_bytes": 172 * MIB, "total_bytes": 173 * MIB}}
    for k, v in over.items():
        s[k] = v
    return s


def _flat_run() -> list[dict[str, Any]]:
    steps = [_step("baseline", 0, "tiny-chat")]
    steps += [_step("generations", i, "tiny-chat") for i in range(20, 201, 20)]
    for c in range(1, 21):
        steps += [_step("unloaded", c, None), _step("reloaded", c, "tiny-chat")]
    for s in range(1, 11):
        model = "smollm2" if s % 2 else "tiny-chat"
        steps.append(_step("switched", s, model, ort_wasm_bytes=930 * MIB,
                           js_heap={"page_bytes": MIB // 2, "workers_bytes": (1060 if s % 2 else 1030) * MIB,
                                    "total_bytes": 0}))
    return [*steps, _step("end_unloaded", 0, None, ort_wasm_bytes=930 * MIB)]


def test_a_flat_run_is_within_every_bound():
    verdict = judge(_flat_run())
    assert verdict["ok"], {k: c for k, c in verdict["checks"].items() if not c["ok"]}
    assert verdict["figures"]["ort_wasm_bytes"] == {"baseline": 75 * MIB, "max": 930 * MIB, "end_on_model": 930 * MIB,
                                                    "end_unloaded": 930 * MIB}
    # the JS heap outside the wasm memories: workers' and page's heap less Pyodide's and ORT's memories
    assert verdict["checks"]["js_heap_outside_wasm_bytes"]["baseline"] == 172 * MIB + MIB // 2 - 112 * MIB


def _leak(steps: list[dict[str, Any]], phase: str, key: str, per_step: int) -> list[dict[str, Any]]:
    steps = copy.deepcopy(steps)
    n = 0
    for s in steps:
        if s["phase"] == phase:
            n += 1
            s[key] += n * per_step
    return steps


def test_a_model_never_disposed_fails_the_load_unload_plateau():
    # each reload takes the weights again: onnxruntime's memory grows by a few pages each time
    verdict = judge(_leak(_flat_run(), "reloaded", "ort_wasm_bytes", 64 << 10))
    failed = [k for k, c in verdict["checks"].items() if not c["ok"]]
    assert not verdict["ok"] and failed == ["ort_wasm_bytes:load_unload"]


def test_growth_during_generations_fails_even_when_tiny():
    verdict = judge(_leak(_flat_run(), "generations", "pyodide_wasm_bytes", 64 << 10))
    assert [k for k, c in verdict["checks"].items() if not c["ok"]] == ["pyodide_wasm_bytes:generations"]


def test_js_heap_python_objects_gpu_buffers_and_models_left_behind_fail():
    steps = _flat_run()
    steps[-4]["js_heap"] = {**steps[-4]["js_heap"], "workers_bytes": 1030 * MIB + BOUNDS["js_heap_over_baseline"] + MIB}
    steps[3]["python_objects"] += BOUNDS["python_objects_over_baseline"] + 1
    unloaded = [s for s in steps if s["model"] is None]
    unloaded[4]["gpu_buffer_bytes"] = 256
    unloaded[5]["models"] = 1
    verdict = judge(steps)
    assert sorted(k for k, c in verdict["checks"].items() if not c["ok"]) == [
        "gpu_buffer_bytes_after_unload", "js_heap_outside_wasm_bytes", "models_after_unload", "python_objects"]
