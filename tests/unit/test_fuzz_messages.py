"""Fuzzing the worker's message boundary on the scripted backend (fast: the envelope and every
face's validation): each hostile message ends in exactly one typed reply with its id."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings

from csi.backends.local_host import LocalHost
from csi.runtime import build_runtime
from csi.servers.asyncio_http import AsyncioHttp
from csi.testing import EOS, ScriptedBackend
from csi.worker.app import WorkerApp
from tests.support.aio import run_async
from tests.support.fuzz import FuzzLog, budget, fuzz_one, messages
from tests.support.paths import DIST

VOCAB = [b"<eos>", b"Hello", b" world", b"!"]
MODELS = ["chat", "embed"]
runtime = build_runtime(ScriptedBackend(VOCAB, [1, 2, 3, EOS]), LocalHost(DIST / "lang"), http=AsyncioHttp())
run_async(runtime.engine.load(MODELS))
sent: list[str] = []
app = WorkerApp(runtime, sent.append)
log = FuzzLog()


def _greedy() -> str:
    sent.clear()
    run_async(app.serve(json.dumps({"id": "g", "type": "chat", "request": {
        "messages": [{"role": "user", "content": "hi"}], "max_tokens": 5, "temperature": 0}})))
    return json.loads(sent[-1])["result"]["choices"][0]["message"]["content"]


BEFORE = _greedy()


@settings(max_examples=budget(2000), deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(messages("chat", "embed"))
def test_every_message_ends_in_one_typed_reply_with_its_id(raw):
    fuzz_one(app, sent, raw, log, MODELS)


def test_the_engine_answers_as_before_the_fuzzing():
    print(f"fuzzed {sum(log.outcomes.values())} messages: {dict(log.outcomes)}")
    assert sum(log.outcomes.values()) > 0, "runs after the fuzzer"
    assert _greedy() == BEFORE
