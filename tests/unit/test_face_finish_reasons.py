"""Each face says why a generation ended as the engine says it: ``abort`` (an interrupt cut it short)
reaches the caller as ``abort``, never as ``stop`` (a natural end), next to items of the same batch
that ended by ``length`` and ``stop``. CPython, on the scripted backend."""

from __future__ import annotations

import json

import pytest
from pharia_skill import FinishReason

from csi.backends.local_host import LocalHost
from csi.core.backend import StepResult
from csi.core.engine import Engine
from csi.errors import AbortError
from csi.runtime import build_runtime
from csi.skills.sdk_wire import chat_response_from_wire, completion_from_wire
from csi.testing import ScriptedBackend
from tests.support.aio import run_async
from tests.support.faces import completion, inference, remote_llm
from tests.support.faces import spin as spin_face

VOCAB = [b"<eos>", b"Hello", b" world", b"!"]
CUT_AT = 5
"""The step of a request at which the backend interrupts the engine: only a request that has not
ended by then (neither by ``max_tokens`` 2 nor at the ``!`` of step 3) is cut."""


class InterruptingBackend(ScriptedBackend):
    """Replays Hello world! world world…, and calls ``engine.interrupt()`` at step ``CUT_AT`` of a request,
    as the page's ``interruptGenerate()`` does while a token is being computed."""

    engine: Engine | None = None

    async def step(self, model_id: str, ids: list[int]) -> StepResult:
        result = await super().step(model_id, ids)
        if self._pos == CUT_AT and self.engine is not None:
            self.engine.interrupt()
        return result


backend = InterruptingBackend(VOCAB, [1, 2, 3, 2], context_length=4096)
runtime = build_runtime(backend, LocalHost())
backend.engine = runtime.engine
run_async(runtime.engine.load(["chat"]))
ENGINE = runtime.engine

LENGTH = {"max_tokens": 2, "stop": []}
STOP = {"max_tokens": 50, "stop": ["!"]}
CUT = {"max_tokens": 50, "stop": []}


def test_the_openai_face_says_abort_for_the_cut_generation():
    """The reference: the face whose wire format always had the word."""
    reasons = [run_async(completion(ENGINE, {"prompt": "x", "temperature": 0, **p})).choices[0].finish_reason
               for p in (LENGTH, STOP, CUT)]
    assert reasons == ["length", "stop", "abort"]


def test_csi_complete_and_chat_say_abort_for_the_cut_item_and_the_sdk_reads_it():
    params = [{"temperature": 0, **p} for p in (LENGTH, STOP, CUT)]
    done = run_async(inference.complete(ENGINE, [{"model": "chat", "prompt": "x", "params": p} for p in params]))
    assert [d["finish_reason"] for d in done] == ["length", "stop", "abort"]
    assert done[2]["text"] == "Hello world! world world" and done[2]["usage"]["completion"] == CUT_AT
    assert [completion_from_wire(d).finish_reason for d in done[:2]] == [FinishReason.LENGTH, FinishReason.STOP]
    with pytest.raises(AbortError):  # pharia-skill's FinishReason has no word for it
        completion_from_wire(done[2])
    chat_params = [{"temperature": 0, "max_tokens": p["max_tokens"]} for p in (LENGTH, CUT)]  # chat has no stop
    chats = run_async(inference.chat(ENGINE, [{"model": "chat", "messages": [{"role": "user", "content": "hi"}],
                                               "params": p} for p in chat_params]))
    assert [c["finish_reason"] for c in chats] == ["length", "abort"]
    with pytest.raises(AbortError):
        chat_response_from_wire(chats[1])


def test_spin_infer_says_abort_for_the_cut_generation():
    out = [run_async(spin_face.infer(ENGINE, {"model": "chat", "prompt": "x", "params": {
        "temperature": 0, "repeat_penalty": 1.0, **p}}))["finish_reason"] for p in (LENGTH, STOP, CUT)]
    assert out == ["length", "stop", "abort"]


def test_remote_llm_generation_info_says_abort_for_the_cut_prompt():
    reasons = []
    for stop in ([], ["!"]):
        out = run_async(remote_llm.generate(ENGINE, {"api_key": "", "prompts": ["x"], "stop": stop}))
        reasons.append(json.loads(out["generations"][0]["generations"][0]["generation_info"])["finish_reason"])
    assert reasons == ["abort", "stop"]  # no max_tokens: the first runs until cut
