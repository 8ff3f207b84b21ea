"""The servers' fuzzer: answers bent at random by the hostile server (tests/support/hostile_fuzz.py)
through the faces that reach a server, many at once. Every request ends in one result or one typed
error naming the server within its deadline; no connection or task is left behind.
``CSI_SERVER_FUZZ_REQUESTS`` sets the count (the suite's is short; ``build.py fuzz`` runs 1,000)."""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest

from csi.backends.cpython import CPythonBackend
from csi.core.engine import Engine
from csi.servers import ServerPlacement
from csi.servers.asyncio_http import AsyncioHttp
from csi.worker.remotes import set_remotes
from csi.worker.requests import RemotesRequest
from tests.support.aio import run_async
from tests.support.faces import chat_completion, chat_completion_stream, completion_stream, embeddings, inference
from tests.support.hostile_behaviors import FUZZ
from tests.support.hostile_matrix import DEADLINE_S, TIMEOUT_S, Outcome, counts, outcome, problems
from tests.support.hostile_server import HostileProcess, running_hostile_server
from tests.support.paths import MODELS

REQUESTS = int(os.environ.get("CSI_SERVER_FUZZ_REQUESTS", "60"))
AT_ONCE = 16
MODEL = "hostile-fuzz"


def _ask(seed: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"fuzz {seed}: what is the capital of France?"}]


async def _joined(chunks: Any, text: Callable[[Any], str | None]) -> str:
    stream = await chunks if asyncio.iscoroutine(chunks) else chunks
    return "".join(text(c) or "" for c in [c async for c in stream])


FACES: dict[str, Callable[[Engine, int], Awaitable[Any]]] = {
    "chat": lambda e, s: chat_completion(e, {"model": MODEL, "messages": _ask(s), "max_tokens": 8, "seed": s}),
    "chat_stream": lambda e, s: _joined(chat_completion_stream(
        e, {"model": MODEL, "messages": _ask(s), "max_tokens": 8, "seed": s, "stream": True}),
        lambda c: c.choices[0].delta.content if c.choices else None),
    "completions_stream": lambda e, s: _joined(completion_stream(
        e, {"model": MODEL, "prompt": f"fuzz {s}", "max_tokens": 8, "seed": s, "stream": True}),
        lambda c: c.choices[0].text if c.choices else None),
    "embeddings": lambda e, s: embeddings(e, {"model": MODEL, "input": [f"fuzz {s}", "Rome"]}),
    "csi_complete": lambda e, s: inference.complete(e, [{"model": MODEL, "prompt": f"fuzz {s}",
                                                         "params": {"max_tokens": 8}}]),
    "csi_chat": lambda e, s: inference.chat(e, [{"model": MODEL, "messages": _ask(s), "params": {"max_tokens": 8}}]),
}


@pytest.fixture(scope="module")
def hostile() -> Iterator[HostileProcess]:
    with running_hostile_server() as server:
        yield server


def _case(engine: Engine, seed: int, face: str) -> Awaitable[Outcome]:
    return outcome(f"fuzz {seed}", face, FACES[face](engine, seed))


def test_fuzzed_answers_end_in_one_result_or_one_typed_error(hostile):
    rng = random.Random(int(os.environ.get("CSI_SERVER_FUZZ_SEED", "0")))
    cases = [(rng.randrange(1 << 30), rng.choice(list(FACES))) for _ in range(REQUESTS)]

    async def run() -> tuple[list[Outcome], list[str]]:
        engine = Engine(CPythonBackend(MODELS), ServerPlacement(AsyncioHttp()))
        await set_remotes(engine, RemotesRequest.model_validate({"remotes": [{
            "base_url": hostile.base(), "timeout_s": TIMEOUT_S, "deadline_s": DEADLINE_S,
            "models": [{"id": MODEL, "server_model": FUZZ}]}]}))
        await engine.load([MODEL])
        outcomes: list[Outcome] = []
        for i in range(0, len(cases), AT_ONCE):
            outcomes += await asyncio.gather(*(_case(engine, s, f) for s, f in cases[i:i + AT_ONCE]))
        await asyncio.sleep(0.5)
        return outcomes, [repr(t) for t in asyncio.all_tasks() if t is not asyncio.current_task()]

    outcomes, tasks = run_async(run())
    kinds = {k: sum(o.kind == k for o in outcomes) for k in {o.kind for o in outcomes}}
    print("servers fuzz:", counts(outcomes), kinds)
    print("\n".join(problems(outcomes, hostile.base())))
    assert problems(outcomes, hostile.base()) == []
    assert hostile.settled() == 0, "a connection to the server was left open"
    assert tasks == []
