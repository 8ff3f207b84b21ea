"""The message fuzzer: hostile page messages of every type (valid templates, mutated), sent through
``WorkerApp``, each required to end in exactly one typed reply carrying its id.

``CSI_FUZZ_EXAMPLES`` sets the budget (``build.py fuzz`` raises it).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections import Counter
from typing import Any

from hypothesis import strategies as st

from csi.worker.app import WorkerApp
from csi.worker.routes import ROUTES
from tests.support.aio import run_async

TYPED = {"InvalidInputError", "ModelNotSupportedError", "ContextWindowExceededError", "ModelLoadError", "SkillError",
         "NotFoundError", "ServerUnavailableError"}
SLOW_S = 30.0
"""A message not answered this long is interrupted, as the page would (``interruptGenerate()``)..."""
STOPPED_WITHIN_S = 5.0
"""... and must then end at once (an index write over huge documents included), in a typed reply."""
STOP_ID = "fuzz-stop"


def budget(default: int) -> int:
    return int(os.environ.get("CSI_FUZZ_EXAMPLES", default))


def templates(chat: str, embed: str) -> dict[str, dict[str, Any]]:
    """One valid message body per type (the fuzzer mutates them)."""
    user = [{"role": "user", "content": "hi"}]
    path = {"namespace": "fuzz", "collection": "c", "name": "d"}
    index = {"namespace": "fuzz", "collection": "c", "index": "i"}
    out: dict[str, dict[str, Any]] = {
        "load": {"request": {"model_ids": [chat, embed]}},
        "chat": {"request": {"messages": user, "max_tokens": 3, "temperature": 0}},
        "completion": {"request": {"prompt": "The", "max_tokens": 3, "stream": True}},
        "embeddings": {"request": {"input": ["a", "b"], "model": embed}},
        "chat_tokens": {"request": {"messages": user, "prefix": "Hel"}},
        "responses_create": {"request": {"model": chat, "input": [{"role": "user", "content": "hi"}],
                                         "max_output_tokens": 3, "stream": True, "text": {"format": {"type": "text"}},
                                         "tools": [{"type": "function", "name": "f", "parameters": {
                                             "type": "object"}}], "tool_choice": "none"}},
        "responses_retrieve": {"request": {"response_id": "resp_fuzzed"}},
        "responses_delete": {"request": {"response_id": "resp_fuzzed"}},
        "responses_input_items": {"request": {"response_id": "resp_fuzzed", "limit": 2, "order": "asc"}},
        "csi_complete": {"request": [{"model": chat, "prompt": "x", "params": {"max_tokens": 3}}]},
        "csi_chat": {"request": [{"model": chat, "messages": user, "params": {"max_tokens": 3}}]},
        "csi_chunk": {"request": [{"text": "a b c", "params": {"model": embed, "max_tokens": 4}}]},
        "csi_chunk_with_offsets": {"request": [{"text": "a b", "params": {"model": embed, "max_tokens": 4},
                                                "character_offsets": True}]},
        "csi_select_language": {"request": [{"text": "hello there", "languages": ["eng", "deu"]}]},
        "csi_search": {"request": [{"index_path": index, "query": "q", "max_results": 2}]},
        "csi_documents": {"request": [path]},
        "csi_document_metadata": {"request": [path]},
        "index_create": {"request": {**index, "model": embed, "max_tokens": 16}},
        "index_put": {"request": [{"path": path, "contents": [{"text": "t"}], "metadata": {"k": 1}}]},
        "index_delete": {"request": [path]},
        "index_list": {"request": {"namespace": "fuzz"}},
        "index_drop": {"request": {"namespace": "fuzz", "collection": "c"}},
        "llm_infer": {"request": {"model": chat, "prompt": "x", "params": {"max_tokens": 3}}},
        "llm_embeddings": {"request": {"model": embed, "text": ["a"]}},
        "remote_generate": {"request": {"api_key": "", "prompts": ["x"], "stop": ["."]}},
        "remote_llm_type": {"request": {"api_key": ""}},
        "remote_guts": {"request": {"prompt": "x", "top_k_logits": 2}},
        "skills_register": {"request": {"name": "fuzzed", "source": "x = 1"}},
        "skills_list": {},
        "skills_metadata": {"request": {"name": "summarize"}},
        "skills_run": {"request": {"name": "summarize", "input": {"text": "a"}}},
        "skills_stream": {"request": {"name": "summarize", "input": {"text": "a"}}},
        "skills_remove": {"request": {"name": "fuzzed"}},
        "set_model_aliases": {"request": {"aliases": {"llama-3.1-8b-instruct": "tiny-chat"}}},
        # a server nobody runs: a fuzzed remote model's requests end in ServerUnavailableError at once
        "set_remotes": {"request": {"remotes": [{
            "base_url": "http://127.0.0.1:9/v1", "timeout_s": 5,
            "models": ["fuzz-remote", {"id": "fuzz-2", "policy": "prefer-local"}]}]}},
        "tools_register": {"request": {"name": "fuzzed", "description": "d", "input_schema": {
            "type": "object", "properties": {"city": {"type": "string", "maxLength": 9}}, "required": ["city"]}}},
        "tools_list": {},
        "tools_remove": {"request": {"name": "fuzzed"}},
        "tools_connect": {"request": {"namespace": "fuzz", "url": "http://127.0.0.1:9/mcp", "timeout_s": 2,
                                      "headers": {"Authorization": "Bearer x"}}},
        "tools_disconnect": {"request": {"namespace": "fuzz"}},
        "tools_servers": {},
        "prompt_caches_list": {},
        "prompt_caches_delete": {"request": {"ids": ["fuzzed"]}},
        "prompt_caches_configure": {"request": {"min_tokens": 64}},
        "reset_chat": {},
        "unload": {},
        "cancel": {"request": {"target": "r1"}},
        "interrupt": {},
        "boot_timings": {},
        "memory_stats": {},
    }
    assert set(out) == set(ROUTES), "every message type has a template"
    return out


_SCALARS = (st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
            | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=20)
            | st.sampled_from(["", "\ud800", "\x00", "-1", "²", "--5", "NaN", "<b>x</b>", "a" * 300]))
JSON_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=10), inner, max_size=4), max_leaves=10)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


def _mutate(body: Any, path: tuple[Any, ...], how: str, value: Any) -> Any:
    if not path:
        return value if how != "delete" else None
    head, rest = path[0], path[1:]
    if isinstance(body, dict):
        body = dict(body)
        if not rest and how == "delete":
            body.pop(head, None)
        elif not rest and how == "add":
            body[f"{head}_extra"] = value
        else:
            body[head] = _mutate(body[head], rest, how, value)
    elif isinstance(body, list):
        body = list(body)
        if not rest and how == "delete":
            del body[head]
        else:
            body[head] = _mutate(body[head], rest, how, value)
    return body


@st.composite
def messages(draw: st.DrawFn, chat: str, embed: str) -> str:
    """One page message as the worker receives it: JSON text, usually a mutated valid template,
    sometimes raw garbage or deep nesting."""
    kind = draw(st.sampled_from(["mutated"] * 8 + ["twice", "raw", "deep", "whole"]))
    msg_id = draw(st.sampled_from(["f1", "f2", 7]))
    if kind == "raw":
        return draw(st.text(max_size=60) | st.sampled_from(['{"id":"f1","type":"chat","request":{"x":NaN}}',
                                                           '{"id":"f1","type":"chat","request":' + "9" * 5000 + "}",
                                                           '{"id":"f1","type":"chat",\x01}', "[]", "null", "1e999"]))
    if kind == "deep":
        depth = draw(st.integers(min_value=90, max_value=3000))
        return '{"id":"f1","type":"chat","request":{"stop":' + "[" * depth + "]" * depth + "}}"
    mtype = draw(st.sampled_from(sorted(ROUTES)))
    body: Any = templates(chat, embed)[mtype]
    for _ in range(1 if kind != "twice" else 2):
        if kind == "whole":
            body = draw(JSON_VALUES)
            break
        path = draw(st.sampled_from(_paths(body)))
        how = draw(st.sampled_from(["replace", "delete", "add"]))
        body = _mutate(body, path, how, draw(JSON_VALUES))
    message = {"id": msg_id, "type": mtype, **body} if isinstance(body, dict) else {"id": msg_id, "type": mtype,
                                                                                    "request": body}
    return json.dumps(message)


class FuzzLog:
    """What the fuzzer saw: replies by kind, and every violation with its message."""

    def __init__(self) -> None:
        self.outcomes: Counter[str] = Counter()
        self.violations: list[str] = []

    def bad(self, raw: str, why: str) -> None:
        self.violations.append(f"{why}: {raw[:300]}")


async def send_one(app: WorkerApp, sent: list[str], raw: str, log: FuzzLog) -> None:
    """Serve one message and check its replies: valid JSON, exactly one final reply, the id echoed
    when it was one, a typed error with a ``param`` for invalid input."""
    sent.clear()
    task = asyncio.ensure_future(app.serve(raw))
    done, _ = await asyncio.wait({task}, timeout=SLOW_S)
    interrupted = not done
    if interrupted:
        app.handle(json.dumps({"id": STOP_ID, "type": "interrupt"}))
        done, _ = await asyncio.wait({task}, timeout=STOPPED_WITHIN_S)
        if not done:
            task.cancel()
            log.bad(raw, f"no reply in {SLOW_S:g} s, nor within {STOPPED_WITHIN_S:g} s of an interrupt")
            return
    task.result()
    replies = []
    for text in sent:
        if text.startswith('{"id":' + json.dumps(STOP_ID) + ","):
            continue  # the interrupt's own reply
        try:
            replies.append(json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c))))
        except ValueError as exc:
            log.bad(raw, f"a reply is not valid JSON ({exc}): {text[:200]}")
            return
    final = [r for r in replies if r.get("type") in ("result", "error")]
    if len(final) != 1 or replies[-1] is not final[0]:
        log.bad(raw, f"{len(final)} final replies")
        return
    reply = final[0]
    try:
        sent_id = json.loads(raw).get("id") if raw.lstrip().startswith("{") else None
    except (ValueError, RecursionError, AttributeError):
        sent_id = reply["id"]  # unreadable: the leading id is best effort
    if isinstance(sent_id, str | int) and not isinstance(sent_id, bool) and reply["id"] != sent_id:
        log.bad(raw, f"reply id {reply['id']!r} for request id {sent_id!r}")
    if reply["type"] == "result":
        log.outcomes["result"] += 1
        return
    err = reply["error"]
    log.outcomes[err["name"]] += 1
    if interrupted and err["name"] == "AbortError":
        return  # what a stopped message ends with
    if err["name"] not in TYPED:
        log.bad(raw, f"untyped error {err['name']}: {err['message'][:300]}")
    elif err["name"] == "InvalidInputError" and err.get("param") is None:
        log.bad(raw, f"InvalidInputError without param: {err['message'][:200]}")


def fuzz_one(app: WorkerApp, sent: list[str], raw: str, log: FuzzLog, loaded: list[str]) -> None:
    """Send one fuzzed message, count its outcome in ``log``, put the models back if a fuzzed
    load/unload changed them, and fail on the first violation."""
    one = FuzzLog()
    run_async(send_one(app, sent, raw, one))
    log.outcomes.update(one.outcomes)
    if sorted(app.runtime.engine.models) != loaded:
        run_async(app.runtime.engine.load(loaded))
    assert not one.violations, one.violations[0]
