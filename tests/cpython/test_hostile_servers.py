"""Servers that misbehave (tests/support/hostile_behaviors.py: trickles, keep-alives without end,
50 MB lines, JSON that is almost JSON, HTML, resets, redirect loops, ...) through every face, streamed
and not, all at once: each request ends in one result or one typed error naming the server, within
its deadline, no connection is left open, no task is left running, and the local model answers
throughout."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest

from csi.backends.cpython import CPythonBackend
from csi.core.engine import Engine
from csi.core.scope import Scope
from csi.errors import CsiError
from csi.faces.openai.responses_api.protocol import ResponseCreateRequest
from csi.faces.openai.responses_api.serving import create_response
from csi.faces.openai.responses_api.store import MemoryResponseStore
from csi.servers import ServerPlacement
from csi.servers.asyncio_http import AsyncioHttp
from csi.worker.remotes import set_remotes
from csi.worker.requests import RemotesRequest
from tests.support.aio import run_async
from tests.support.faces import (
    chat_completion,
    chat_completion_stream,
    completion,
    completion_stream,
    embeddings,
    inference,
    spin,
)
from tests.support.hostile_behaviors import BEHAVIORS
from tests.support.hostile_matrix import Outcome, counts, groups, model_id, outcome, problems, remotes
from tests.support.hostile_server import HostileProcess, running_hostile_server
from tests.support.paths import MODELS

ASK = [{"role": "user", "content": "What is the capital of France?"}]
TOOL = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}


@pytest.fixture(scope="module")
def hostile() -> Iterator[HostileProcess]:
    with running_hostile_server() as server:
        yield server


async def _joined(chunks: Any, text: Callable[[Any], str | None]) -> str:
    return "".join(text(c) or "" for c in [c async for c in chunks])


def _chat_text(c: Any) -> str | None:
    return c.choices[0].delta.content if c.choices else None


async def _responses(engine: Engine, m: str, stream: bool) -> str | None:
    req = ResponseCreateRequest.model_validate({"model": m, "input": "What is the capital of France?",
                                                "max_output_tokens": 8, "stream": stream, "store": False})
    out = await create_response(engine, MemoryResponseStore(), req)
    if not stream:
        return out.output_text  # type: ignore[union-attr]
    text = ""
    async for event in out:  # type: ignore[union-attr]
        if event.type == "response.output_text.delta":
            text += event.delta
        if event.type == "response.failed":
            raise CsiError(json.dumps(event.response.error.model_dump() if event.response.error else {}))
    return text


Face = Callable[[Engine, str], Awaitable[str | None]]
FACES: dict[str, Face] = {
    "chat": lambda e, m: _first(chat_completion(e, {"model": m, "messages": ASK, "max_tokens": 8}),
                                lambda r: r.choices[0].message.content),
    "chat_stream": lambda e, m: _stream(chat_completion_stream(e, {"model": m, "messages": ASK, "max_tokens": 8,
                                                                   "stream": True}), _chat_text),
    "chat_tools_stream": lambda e, m: _stream(chat_completion_stream(e, {"model": m, "messages": ASK, "stream": True,
                                                                         "max_tokens": 64, "tools": [TOOL]}),
                                              _chat_text),
    "completions": lambda e, m: _first(completion(e, {"model": m, "prompt": "Paris is", "max_tokens": 8}),
                                       lambda r: r.choices[0].text),
    "completions_stream": lambda e, m: _stream(completion_stream(e, {"model": m, "prompt": "Paris is", "max_tokens": 8,
                                                                     "stream": True}),
                                               lambda c: c.choices[0].text if c.choices else None),
    "embeddings": lambda e, m: _first(embeddings(e, {"model": m, "input": ["Paris", "Rome"]}), lambda r: None),
    "csi_complete": lambda e, m: _first(inference.complete(e, [{"model": m, "prompt": "Paris is",
                                                                "params": {"max_tokens": 8}}]), lambda r: r[0]["text"]),
    "csi_chat": lambda e, m: _first(inference.chat(e, [{"model": m, "messages": ASK, "params": {"max_tokens": 8}}]),
                                    lambda r: r[0]["message"]["content"]),
    "spin_infer": lambda e, m: _first(spin.infer(e, {"model": m, "prompt": "Paris is", "params": {"max_tokens": 8}}),
                                      lambda r: r["text"]),
    "spin_embeddings": lambda e, m: _first(spin.generate_embeddings(e, {"model": m, "text": ["Paris"]}),
                                           lambda r: None),
    "responses": lambda e, m: _responses(e, m, False),
    "responses_stream": lambda e, m: _responses(e, m, True),
}


async def _first(call: Awaitable[Any], text: Callable[[Any], str | None]) -> str | None:
    return text(await call)


async def _stream(call: Any, text: Callable[[Any], str | None]) -> str:
    chunks = await call if asyncio.iscoroutine(call) else call
    return await _joined(chunks, text)


def _cell(engine: Engine, behavior: str, face: str) -> Awaitable[Outcome]:
    return outcome(behavior, face, FACES[face](engine, model_id(behavior)))


async def _local(engine: Engine) -> str | None:
    """The local model's answer while the misbehaving servers are asked."""
    await asyncio.sleep(0.2)
    reply = await chat_completion(engine, {"model": "tiny-chat", "messages": ASK, "max_tokens": 4})
    return reply.choices[0].finish_reason


def test_every_misbehavior_through_every_face_ends_in_one_result_or_one_typed_error(hostile):
    async def run() -> tuple[list[Outcome], list[str | None], list[str]]:
        engine = Engine(CPythonBackend(MODELS), ServerPlacement(AsyncioHttp()))
        await set_remotes(engine, RemotesRequest.model_validate({"remotes": remotes(hostile.base())}))
        outcomes: list[Outcome] = []
        local = []
        for group in groups():
            await engine.load([model_id(b) for b in group] + ["tiny-chat"])
            answered = asyncio.ensure_future(_local(engine))
            outcomes += await asyncio.gather(*(_cell(engine, b, f) for b in group for f in FACES))
            local.append(await answered)
        await asyncio.sleep(0.5)  # closed connections' callbacks run
        left = [repr(t) for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        return outcomes, local, left

    outcomes, local, tasks = run_async(run())
    figures = counts(outcomes)
    print("hostile matrix (CPython):", figures, "leaked connections:", hostile.settled())
    assert problems(outcomes, hostile.base()) == []
    assert figures["hangs"] == 0 and figures["requests"] == len(BEHAVIORS) * len(FACES)
    assert hostile.settled() == 0, "a connection to the server was left open"
    assert tasks == []
    assert local == ["length"] * len(groups())
    assert set(hostile.served) >= set(BEHAVIORS)


def test_skills_calling_misbehaving_servers_get_one_answer_or_one_typed_error(hostile):
    from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415

    from pharia_skill import ChatParams, CompletionParams, Message  # noqa: PLC0415

    from csi.local import local_csi  # noqa: PLC0415
    from csi.servers import Endpoint, ServerModel  # noqa: PLC0415
    from tests.support.hostile_matrix import DEADLINE_S, TIMEOUT_S  # noqa: PLC0415
    from tests.support.paths import DIST  # noqa: PLC0415

    endpoint = Endpoint(hostile.base(), None, TIMEOUT_S, DEADLINE_S)
    models = [ServerModel(model_id(b), endpoint, b) for b in BEHAVIORS]
    ways: dict[str, Callable[[Any, str], str | None]] = {
        "skill_chat": lambda csi, m: csi.chat(m, [Message.user("Capital of France?")],
                                              ChatParams(max_tokens=8)).message.content,
        "skill_chat_stream": lambda csi, m: _streamed(csi, m),
        "skill_complete": lambda csi, m: csi.complete(m, "Paris is", CompletionParams(max_tokens=8)).text,
    }

    def cell(csi: Any, behavior: str, way: str) -> Outcome:
        began = time.monotonic()
        try:  # each cell a skill's run of its own (a skill's CSI serves one thread)
            text = ways[way](csi.scoped(Scope(request_id=f"{behavior}-{way}")), model_id(behavior))
        except CsiError as exc:
            return Outcome(behavior, way, exc.name, exc.message, time.monotonic() - began)
        except Exception as exc:  # noqa: BLE001 - what the matrix looks for
            return Outcome(behavior, way, type(exc).__name__, str(exc), time.monotonic() - began)
        return Outcome(behavior, way, "result", "", time.monotonic() - began, text)

    outcomes: list[Outcome] = []
    for group in groups(8):
        served = [m for m in models if m.server_model in group]
        with local_csi(DIST, [m.model_id for m in served], remotes=served) as csi, ThreadPoolExecutor(24) as pool:
            futures = [pool.submit(cell, csi, b, w) for b in group for w in ways]
            outcomes += [f.result(timeout=60) for f in futures]
    print("hostile matrix (skills):", counts(outcomes))
    assert problems(outcomes, hostile.base()) == []
    assert hostile.settled() == 0, "a connection to the server was left open"


def _streamed(csi: Any, model: str) -> str:
    from pharia_skill import ChatParams, Message  # noqa: PLC0415

    with csi.chat_stream(model, [Message.user("Capital of France?")], ChatParams(max_tokens=8)) as response:
        text = "".join(a.content for a in response.stream())
        response.finish_reason()
    return text
