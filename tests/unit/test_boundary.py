"""The worker's message boundary, case by case: what fuzzing found (tests/support/fuzz.py), kept as
regression tests. Each hostile message gets exactly one typed error carrying its id and a param."""

from __future__ import annotations

import asyncio
import json
import subprocess

import pytest

from csi.backends.local_host import LocalHost
from csi.core.request import SamplingParams
from csi.runtime import build_runtime
from csi.testing import EOS, ScriptedBackend
from csi.worker.app import WorkerApp
from csi.worker.message import MAX_DEPTH
from tests.support.aio import run_async
from tests.support.paths import ROOT

VOCAB = [b"<eos>", b"Hello", b" world", b"!"]
runtime = build_runtime(ScriptedBackend(VOCAB, [1, 2, 3, EOS]), LocalHost())
run_async(runtime.engine.load(["chat", "embed"]))
sent: list[str] = []
app = WorkerApp(runtime, sent.append)
USER = [{"role": "user", "content": "hi"}]
DOC = {"path": {"namespace": "n", "collection": "c", "name": "d"}, "contents": [{"text": "t"}]}


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
    (json.dumps({"id": "r1", "type": "load", "request": {"model_ids": ["x" * 300]}}), "model"),
    (json.dumps({"id": "r1", "type": "load", "request": {"model_ids": ["../../etc/passwd"]}}), "model"),
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


PAGE_ENCODE = """
  import { encodeMessage, MAX_DEPTH } from "%s";
  const depth = Number(process.argv[1]);
  let deep = []; for (let i = 1; i < depth; i++) deep = [deep];
  const out = {maxDepth: MAX_DEPTH};
  try { out.text = encodeMessage({id: "r1", type: "chat", request: {messages: [], stop: deep}}); }
  catch (e) { out.error = {name: e.name, param: e.param, message: e.message}; }
  console.log(JSON.stringify(out));"""


def page_encode(depth: int) -> dict:
    """web/message.js ``encodeMessage`` of a chat request whose ``stop`` is ``depth`` arrays deep."""
    script = PAGE_ENCODE % (ROOT / "web" / "message.js")
    out = subprocess.run(["node", "--input-type=module", "-e", script, str(depth)], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout)


def test_too_deep_is_param_message_on_the_page_in_the_worker_and_in_the_docs():
    # the message is 1 level, the request 2, `stop` 3: `stop` may be MAX_DEPTH - 2 deep
    readme_row = next(line for line in (ROOT / "docs" / "embedding.md").read_text().splitlines()
                      if line.startswith("| nesting |"))
    readme_param = readme_row.rstrip(" |").rsplit("|", 1)[1].strip().strip("`")
    ok, deep = page_encode(MAX_DEPTH - 2), page_encode(MAX_DEPTH - 1)
    assert ok["maxDepth"] == MAX_DEPTH and "error" not in ok
    assert reply(ok["text"])["error"]["param"] != "message"  # read by the worker, refused by the face
    err = deep["error"]
    assert err["name"] == "InvalidInputError" and err["param"] == readme_param == "message", err
    assert f"deeper than {MAX_DEPTH} levels" in err["message"] and "`stop[0][0][0]…`" in err["message"], err
    assert len(err["message"]) < 80, err  # not a ~300-character field path
    raw = ok["text"].replace('"stop":', '"stop":[', 1).replace("]}}", "]]}}", 1)
    assert reply(raw)["error"]["param"] == readme_param  # the worker's answer to the same depth


def test_a_tiny_temperature_is_greedy():
    assert SamplingParams(temperature=5e-324).temperature == 0.0
    assert SamplingParams(temperature=0.5).temperature == 0.5


def test_a_skill_raising_system_exit_is_one_skill_error():
    src = ("from pydantic import BaseModel\nfrom pharia_skill import skill\n\nclass I(BaseModel):\n    n: int\n\n"
           "class O(BaseModel):\n    n: int\n\n@skill\ndef quits(csi, input: I) -> O:\n    raise SystemExit(3)\n")
    registered = reply(json.dumps({"id": "r1", "type": "skills_register", "request": {"name": "quits", "source": src}}))
    assert registered["type"] == "result"
    r = reply(json.dumps({"id": "r1", "type": "skills_run", "request": {"name": "quits", "input": {"n": 1}}}))
    assert r["error"]["name"] == "SkillError" and "SystemExit" in r["error"]["message"]
    assert reply(chat({"messages": USER, "max_tokens": 2}))["type"] == "result"


async def _answers(*raws: str, ids: tuple[str, ...]) -> dict[str, dict]:
    """Hand the messages to the app as worker.js does (one after the other, no waiting) and
    collect the final reply of each id."""
    sent.clear()
    for raw in raws:
        app.handle(raw)
    for _ in range(10_000):
        finals = {m["id"]: m for m in map(json.loads, sent) if m["type"] in ("result", "error")}
        if all(i in finals for i in ids):
            return finals
        await asyncio.sleep(0)
    raise AssertionError(f"no final reply for {ids}: {sent[-3:]}")


def _batch(msg_id: str) -> str:
    items = [{"model": "chat", "prompt": "x", "params": {"max_tokens": 40}} for _ in range(12)]
    return json.dumps({"id": msg_id, "type": "csi_complete", "request": items})


def test_an_interrupt_right_after_a_request_reaches_it_and_every_item_of_a_batch():
    chat_msg = json.dumps({"id": "c1", "type": "chat", "request": {"messages": USER, "max_tokens": 40}})
    out = run_async(_answers(chat_msg, _batch("b1"), json.dumps({"id": "i1", "type": "interrupt"}),
                             ids=("c1", "b1")))
    assert out["c1"]["result"]["choices"][0]["finish_reason"] == "abort"
    assert out["c1"]["result"]["usage"]["completion_tokens"] == 0
    assert [len(r["text"]) for r in out["b1"]["result"]] == [0] * 12
    # a request after the interrupt runs whole
    after = run_async(_answers(chat_msg.replace("c1", "c2"), ids=("c2",)))
    assert after["c2"]["result"]["choices"][0]["finish_reason"] == "stop"
    assert after["c2"]["result"]["usage"]["completion_tokens"] == 3


def test_cancel_reaches_every_item_of_a_batch_and_is_forgotten_once_answered():
    cancel = json.dumps({"id": "x", "type": "cancel", "request": {"target": "b2"}})
    out = run_async(_answers(_batch("b2"), cancel, ids=("b2",)))
    assert [len(r["text"]) for r in out["b2"]["result"]] == [0] * 12
    again = run_async(_answers(_batch("b2"), ids=("b2",)))  # the same id later is not cancelled
    assert all(len(r["text"]) > 0 for r in again["b2"]["result"])


def test_an_unload_during_a_load_cancels_the_load():
    class SlowLoad(ScriptedBackend):
        async def load_model(self, model_id, device, progress, hub=None, gguf_budget=None):
            for _ in range(50):
                await asyncio.sleep(0)
            return await super().load_model(model_id, device, progress, hub)

    rt = build_runtime(SlowLoad(VOCAB, [1, EOS]), LocalHost())
    msgs: list[str] = []
    slow = WorkerApp(rt, msgs.append)

    async def scenario() -> dict[str, dict]:
        slow.handle(json.dumps({"id": "l", "type": "load", "request": {"model_ids": ["chat"]}}))
        await asyncio.sleep(0)
        slow.handle(json.dumps({"id": "u", "type": "unload"}))
        for _ in range(1000):
            finals = {m["id"]: m for m in map(json.loads, msgs) if m["type"] in ("result", "error")}
            if {"l", "u"} <= set(finals):
                return finals
            await asyncio.sleep(0)
        raise AssertionError(msgs)

    out = run_async(scenario())
    assert out["u"]["type"] == "result"
    assert out["l"]["type"] == "error" and out["l"]["error"]["name"] == "ModelLoadError"
    assert dict(rt.engine.models) == {}


@pytest.mark.parametrize(("raw", "param"), [
    (json.dumps({"id": "r1", "type": "csi_chunk", "request": [{"text": "a", "params": {"model": "embed",
                                                                                       "max_tokens": 2}}] * 2049}),
     "requests"),
    (json.dumps({"id": "r1", "type": "embeddings", "request": {"input": ["a"] * 2049, "model": "embed"}}), "input"),
    (json.dumps({"id": "r1", "type": "remote_generate", "request": {"prompts": ["a"] * 2049}}), "prompts"),
    (json.dumps({"id": "r1", "type": "skills_register",
                "request": {"name": "big", "source": "#" * (1024 * 1024 + 1)}}), "source"),
    ('{"id":"r1","type":"chat","request":{"stop":"' + "x" * (64 * 1024 * 1024) + '"}}', "message"),
    (json.dumps({"id": "r1", "type": "index_put", "request": [DOC, {**DOC, "contents": [
        {"text": "x" * (2 * 1024 * 1024)}, "image", {"text": "y" * (2 * 1024 * 1024 + 1)}]}]}),
     "documents[1].contents"),
    (json.dumps({"id": "r1", "type": "index_put", "request": [{**DOC, "metadata": {"m": "x" * (1024 * 1024)}}]}),
     "documents[0].metadata"),
    (json.dumps({"id": "r1", "type": "index_put", "request": [DOC] * 2049}), "documents"),
])
def test_limits_are_typed_errors_naming_what_is_too_big(raw, param):
    r = reply(raw)
    assert r["id"] == "r1" and r["error"]["name"] == "InvalidInputError" and r["error"]["param"] == param, r
