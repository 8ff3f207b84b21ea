"""The worker's message boundary, case by case: what fuzzing found (tests/support/fuzz.py), kept as
regression tests. Each hostile message gets exactly one typed error carrying its id and a param."""

from __future__ import annotations

import json

import pytest

from csi.backends.local_host import LocalHost
from csi.core.request import SamplingParams
from csi.runtime import build_runtime
from csi.testing import EOS, ScriptedBackend
from csi.worker.app import WorkerApp
from csi.worker.message import MAX_DEPTH
from tests.support.aio import run_async

VOCAB = [b"<eos>", b"Hello", b" world", b"!"]
runtime = build_runtime(ScriptedBackend(VOCAB, [1, 2, 3, EOS]), LocalHost())
run_async(runtime.engine.load(["chat", "embed"]))
sent: list[str] = []
app = WorkerApp(runtime, sent.append)
USER = [{"role": "user", "content": "hi"}]


def reply(raw: str) -> dict:
    sent.clear()
    run_async(app.serve(raw))
    final = [json.loads(s, parse_constant=lambda c: pytest.fail(f"{c} in a reply")) for s in sent]
    assert [m["type"] for m in final][-1:] in (["result"], ["error"])
    assert sum(m["type"] in ("result", "error") for m in final) == 1
    return final[-1]


def chat(request: dict) -> str:
    return json.dumps({"id": "r1", "type": "chat", "request": request})


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize(("raw", "param"), [
    ('{"id":"r1","type":"chat","request":{"messages":"\x01\x02"}}', "message"),  # control characters
    ('{"id":"r1","type":"chat","request":{"stop":' + nested(1500) + "}}", "message"),
    ('{"id":"r1","type":"chat","request":{"stop":' + nested(MAX_DEPTH) + "}}", "message"),
    ('{"id":"r1","type":"chat","request":{"max_tokens":' + "9" * 5000 + "}}", "max_tokens"),
    ('{"id":"r1","type":"chat","request":{"temperature":NaN}}', "message"),
    ('{"id":"r1","type":"chat","request":{"temperature":1e999}}', "temperature"),
    ('{"id":"r1","type":"chat","request":{"seed":9007199254740993}}', "seed"),
    ('{"id":"r1","type":"chat","request":5}', "request"),
    ('{"id":"r1","type":"chat","request":{"messages":[{"role":"user","content":"\\ud800"}]}}',
     "messages[0].content"),
    ('{"id":"r1","type":"chat","request":{"\\udfff":1}}', "request"),  # the key's owner
    ('{"id":"r1","type":"teleport"}', "type"),
    ('{"id":"r1","type":"chat","request":{"messages":[]},"extra":1}', "extra"),
    (chat({"messages": USER, "logit_bias": {"²": 1}}), "logit_bias"),
    (chat({"messages": USER, "logit_bias": {"--5": 1}}), "logit_bias"),
    (chat({"messages": USER, "user": 5}), "user"),
    (json.dumps({"id": "r1", "type": "load", "model_ids": ["x" * 300]}), "model"),
    (json.dumps({"id": "r1", "type": "load", "model_ids": ["../../etc/passwd"]}), "model"),
])
def test_hostile_messages_get_one_typed_error_with_the_id_and_a_param(raw, param):
    r = reply(raw)
    assert r["id"] == "r1" and r["type"] == "error"
    assert r["error"]["name"] == "InvalidInputError", r["error"]
    assert r["error"]["param"] == param, r["error"]
    assert sorted(runtime.engine.models) == ["chat", "embed"]  # a refused load unloads nothing


@pytest.mark.parametrize(("raw", "reply_id"), [
    ('{"id":NaN,"type":"chat"}', None),
    ('{"id":{"a":1},"type":"chat"}', None),
    ('{"id":true,"type":"chat"}', None),
    ("not json at all", None),
    ('{"id":7,"type":"chat","request":{"x":NaN}}', 7),
])
def test_unusable_ids_are_answered_with_null_and_usable_ones_always_echoed(raw, reply_id):
    r = reply(raw)
    assert r["type"] == "error" and r["id"] == reply_id and r["error"]["name"] == "InvalidInputError"


def test_nesting_within_the_limit_reaches_the_face():
    inner = "[" * (MAX_DEPTH - 3) + "]" * (MAX_DEPTH - 3)
    r = reply('{"id":"r1","type":"chat","request":{"messages":[],"stop":' + inner + "}}")
    assert r["error"]["param"] != "message"  # read, then refused by the chat face for what it says
    assert reply(chat({"messages": USER, "max_tokens": 2}))["type"] == "result"


def test_a_tiny_temperature_is_greedy():
    assert SamplingParams(temperature=5e-324).temperature == 0.0
    assert SamplingParams(temperature=0.5).temperature == 0.5


def test_a_skill_raising_system_exit_is_one_skill_error():
    src = ("from pydantic import BaseModel\nfrom csi.sdk import skill\n\nclass I(BaseModel):\n    n: int\n\n"
           "class O(BaseModel):\n    n: int\n\n@skill\ndef quits(csi, input: I) -> O:\n    raise SystemExit(3)\n")
    registered = reply(json.dumps({"id": "r1", "type": "skills_register", "name": "quits", "source": src}))
    assert registered["type"] == "result"
    r = reply(json.dumps({"id": "r1", "type": "skills_run", "name": "quits", "input": {"n": 1}}))
    assert r["error"]["name"] == "SkillError" and "SystemExit" in r["error"]["message"]
    assert reply(chat({"messages": USER, "max_tokens": 2}))["type"] == "result"
