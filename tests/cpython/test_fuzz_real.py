"""The message fuzzer on the real CPython backend (tiny-chat, all-minilm-l6-v2, language data):
tokenizers, ONNX sessions and the document index meet the hostile input too."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings

from csi.backends.cpython import CPythonBackend
from csi.backends.local_host import LocalHost
from csi.runtime import build_runtime
from csi.servers.asyncio_http import AsyncioHttp
from csi.worker.app import WorkerApp
from tests.support.aio import run_async
from tests.support.fuzz import FuzzLog, budget, fuzz_one, messages
from tests.support.paths import DIST, MODELS

LOADED = ["all-minilm-l6-v2", "tiny-chat"]
runtime = build_runtime(CPythonBackend(MODELS), LocalHost(DIST / "lang"), http=AsyncioHttp())
run_async(runtime.engine.load(LOADED))
sent: list[str] = []
app = WorkerApp(runtime, sent.append)
log = FuzzLog()


def _greedy() -> list[int]:
    sent.clear()
    run_async(app.serve(json.dumps({"id": "g", "type": "completion", "request": {
        "prompt": "The json module", "max_tokens": 12, "temperature": 0, "return_token_ids": True}})))
    return json.loads(sent[-1])["result"]["choices"][0]["token_ids"]


BEFORE = _greedy()


@settings(max_examples=max(budget(2000) // 7, 50), deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(messages("tiny-chat", "all-minilm-l6-v2"))
def test_every_message_ends_in_one_typed_reply_on_the_real_backend(raw):
    fuzz_one(app, sent, raw, log, LOADED)


def test_the_engine_decodes_as_before_the_fuzzing():
    print(f"fuzzed {sum(log.outcomes.values())} messages: {dict(log.outcomes)}")
    assert sum(log.outcomes.values()) > 0
    assert _greedy() == BEFORE
