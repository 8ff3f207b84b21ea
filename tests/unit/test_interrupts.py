"""Interrupts with an address, in CPython: the signal handler raises only in the frames of a skill
run that is due; a waiting skill stops at its time limit; a generation waiting for the model says
whom it waits for and can be cancelled while it waits; a load is all or nothing."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from csi.backends.cpython import CPythonBackend
from csi.backends.local_host import LocalHost
from csi.core.backend import ModelInfo, ProgressFn, StepResult
from csi.core.engine import Engine
from csi.errors import ModelLoadError, SkillInterrupt
from csi.runtime import build_runtime
from csi.skills.interrupts import SkillRun, checkpoint, on_signal, run_marked
from csi.testing import ScriptedBackend
from csi.worker.app import WorkerApp
from tests.support.aio import run_async

VOCAB = [b"<eos>", b"Hello", b" world", b"!"]


class SlowBackend(ScriptedBackend):
    """Each step takes a few milliseconds and lets the event loop run, like a real forward pass."""

    async def step(self, model_id: str, ids: list[int]) -> StepResult:
        await asyncio.sleep(0.004)
        return await super().step(model_id, ids)


def due_run(engine: Engine, **kw: Any) -> SkillRun:
    return SkillRun("r1", "s", engine, engine.interrupt_epoch, **kw)


def test_the_handler_raises_only_inside_the_frames_of_a_run_that_is_due():
    engine = Engine(ScriptedBackend(VOCAB, [1]))
    late = due_run(engine, deadline=time.monotonic() - 1, limit_s=0.5)
    on_signal(signal.SIGINT, sys._getframe())  # no skill below this frame: nothing happens

    def body() -> None:
        on_signal(signal.SIGINT, sys._getframe())

    with pytest.raises(SkillInterrupt, match="time limit of 0.5 s"):
        run_marked(late, body)
    calm = due_run(engine, deadline=time.monotonic() + 60, limit_s=60)
    run_marked(calm, body)  # not due: the interrupt was for someone else
    run_marked(calm, checkpoint)
    engine.interrupt()
    with pytest.raises(SkillInterrupt, match=r"interruptGenerate\(\) was called"):
        run_marked(calm, checkpoint)
    other = due_run(engine)
    engine.abort("r1")
    with pytest.raises(SkillInterrupt, match="cancelled"):
        run_marked(other, body)


def test_a_real_sigint_lands_in_the_skill_and_nowhere_else():
    engine = Engine(ScriptedBackend(VOCAB, [1]))
    late = due_run(engine, deadline=time.monotonic() - 1, limit_s=1)
    previous = signal.signal(signal.SIGINT, on_signal)
    try:
        signal.raise_signal(signal.SIGINT)  # outside any skill: swallowed
        with pytest.raises(SkillInterrupt):
            run_marked(late, lambda: signal.raise_signal(signal.SIGINT))
    finally:
        signal.signal(signal.SIGINT, previous)


WAITER = """from pydantic import BaseModel
from pharia_skill import skill, CompletionParams

class I(BaseModel):
    n: int

class O(BaseModel):
    n: int

@skill
def waiter(csi, input: I) -> O:
    for i in range(input.n):
        csi.complete('chat', f'Module {i}', CompletionParams(max_tokens=40))
    return O(n=input.n)
"""


def serve(app: WorkerApp, sent: list[str], raw: str) -> dict:
    sent.clear()
    run_async(app.serve(raw))
    return json.loads(sent[-1])


def test_a_skill_waiting_on_csi_calls_stops_at_its_limit_and_the_engine_goes_on():
    runtime = build_runtime(SlowBackend(VOCAB, [1], context_length=4096), LocalHost())
    run_async(runtime.engine.load(["chat"]))
    sent: list[str] = []
    app = WorkerApp(runtime, sent.append)
    assert serve(app, sent, json.dumps({"id": "r1", "type": "skills_register",
                                        "request": {"name": "waiter", "source": WAITER}}))["type"] == "result"
    started = time.monotonic()
    out = serve(app, sent, json.dumps({"id": "r2", "type": "skills_run",
                                       "request": {"name": "waiter", "input": {"n": 100}, "time_limit_ms": 300}}))
    took = time.monotonic() - started
    assert out["error"]["name"] == "SkillError", out
    assert "time limit of 0.3 s" in out["error"]["message"]
    assert 0.3 <= took < 2.0  # 100 calls of 40 tokens would take 16 s
    bad = serve(app, sent, json.dumps({"id": "r3", "type": "skills_run",
                                       "request": {"name": "waiter", "input": {"n": 1}, "time_limit_ms": -5}}))
    assert bad["error"]["name"] == "InvalidInputError" and bad["error"]["param"] == "time_limit_ms"
    chat = serve(app, sent, json.dumps({"id": "r4", "type": "completion", "request": {"prompt": "x",
                                                                                       "max_tokens": 3}}))
    assert chat["result"]["choices"][0]["finish_reason"] == "length"


def test_a_generation_waiting_for_the_model_is_told_whom_and_can_be_cancelled_while_it_waits():
    runtime = build_runtime(SlowBackend(VOCAB, [1], context_length=4096), LocalHost())
    run_async(runtime.engine.load(["chat"]))
    sent: list[dict] = []
    app = WorkerApp(runtime, lambda s: sent.append({**json.loads(s), "at": time.monotonic()}))

    def completion(rid: str, n: int) -> str:
        return json.dumps({"id": rid, "type": "completion", "request": {"prompt": "x", "max_tokens": n}})

    async def scene() -> None:
        app.handle(completion("long", 150))  # about 0.6 s
        await asyncio.sleep(0.05)
        app.handle(completion("short", 3))
        await asyncio.sleep(0.05)
        app.handle(json.dumps({"id": "c", "type": "cancel", "request": {"target": "short"}}))
        while sum(m["type"] in ("result", "error") for m in sent if m["id"] in ("long", "short")) < 2:
            await asyncio.sleep(0.01)

    run_async(scene())
    short = [m for m in sent if m["id"] == "short"]
    assert [m["type"] for m in short] == ["accepted", "progress", "result"], short
    assert short[1]["progress"]["stage"] == "queued" and short[1]["progress"]["waiting_for"] == "long"
    choice = short[2]["result"]["choices"][0]
    assert choice["finish_reason"] == "abort" and short[2]["result"]["usage"]["completion_tokens"] == 0
    long_end = next(m for m in sent if m["id"] == "long" and m["type"] == "result")
    assert short[2]["at"] < long_end["at"] - 0.2  # cancelled while it waited, not after the long one
    assert long_end["result"]["choices"][0]["finish_reason"] == "length"


class FailingBackend(ScriptedBackend):
    async def load_model(self, model_id: str, device: str, progress: ProgressFn | None,
                         hub: str | None = None, gguf_budget: int | None = None) -> ModelInfo:
        if model_id == "broken":
            raise ModelLoadError("could not load model 'broken'", "model")
        return await super().load_model(model_id, device, progress, hub)


def test_a_load_is_all_or_nothing():
    engine = Engine(FailingBackend(VOCAB, [1]))
    run_async(engine.load(["chat"]))
    with pytest.raises(ModelLoadError):
        run_async(engine.load(["chat", "embed", "broken"]))
    assert dict(engine.models) == {}
    assert [m.model_id for m in run_async(engine.load(["chat", "embed"]))] == ["chat", "embed"]


def test_a_failed_cpython_load_names_no_server_path(tmp_path: Path):
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "config.json").write_text("{}")
    backend = CPythonBackend(tmp_path)
    for model_id in ("half", "absent"):
        with pytest.raises(ModelLoadError) as err:
            run_async(backend.load_model(model_id, "wasm", None))
        assert str(tmp_path) not in err.value.message and repr(model_id) in err.value.message, err.value.message
