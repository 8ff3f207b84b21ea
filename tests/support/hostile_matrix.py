"""The hostile server's matrix, shared by CPython and Chromium: every misbehavior as a model of one
server, what each must end in, and the check of what came back."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

from csi.errors import CsiError
from tests.support.hostile_behaviors import BEHAVIORS

TIMEOUT_S = 2.5
"""The servers' wait for progress in the matrix."""
DEADLINE_S = 5.0
"""The servers' total deadline per request in the matrix."""
SLACK_S = 4.0
"""What a request may take past its deadline on a loaded machine (a finished answer's grace is 2 s)."""

ANSWER = "The capital of France is Paris."

TIMEOUTS = {"keepalive", "empty_events", "trickle", "stall_mid_event", "late", "slow_headers"}
"""Misbehaviors that must end in ``ServerTimeoutError``: nothing in them is progress."""
WHOLE = {"ok", "done_twice", "done_never_open", "done_never_no_usage", "done_never_close", "wrong_type",
         "negative_usage"}
"""Misbehaviors whose answer is whole: each must end in the polite answer."""
REFUSED = {"html", "almost_json", "huge_line", "huge_piece", "nan", "deep_nesting", "binary", "wrong_shapes",
           "status_500_html", "error_event", "no_finish_close", "redirect_loop"}
"""Misbehaviors that must end in a ``ServerError`` (or its kind: unavailable, timeout on a slow box)."""
SERVER_ERRORS = {"ServerError", "ServerUnavailableError", "ServerTimeoutError"}


def model_id(behavior: str) -> str:
    return f"hostile-{behavior.replace('_', '-')}"


def groups(size: int = 7) -> list[list[str]]:
    """The misbehaviors in groups that load together (an engine loads at most 8 models: 7 and a local one)."""
    names = list(BEHAVIORS)
    return [names[i:i + size] for i in range(0, len(names), size)]


def remotes(base_url: str) -> list[dict[str, Any]]:
    """The engine's servers: the hostile one, each misbehavior a model of it (snake_case, the worker's form)."""
    return [{"base_url": base_url, "timeout_s": TIMEOUT_S, "deadline_s": DEADLINE_S,
             "models": [{"id": model_id(b), "server_model": b} for b in BEHAVIORS]}]


@dataclass
class Outcome:
    behavior: str
    face: str
    kind: str
    """``result``, or the error's name."""
    message: str
    seconds: float
    text: str | None = None
    """The answer's text, for faces that have one."""


async def outcome(behavior: str, face: str, call: Awaitable[Any], hang_s: float = 30.0) -> Outcome:
    """How ``call`` (one request) ended: its result's text, its error by name, or a hang."""
    began = time.monotonic()
    try:
        text = await asyncio.wait_for(call, hang_s)
    except TimeoutError:
        return Outcome(behavior, face, "hang", "", time.monotonic() - began)
    except CsiError as exc:
        return Outcome(behavior, face, exc.name, exc.message, time.monotonic() - began)
    except Exception as exc:  # noqa: BLE001 - what the matrix looks for
        return Outcome(behavior, face, type(exc).__name__, repr(exc), time.monotonic() - began)
    return Outcome(behavior, face, "result", "", time.monotonic() - began, text if isinstance(text, str) else None)


def problems(outcomes: list[Outcome], base_url: str) -> list[str]:
    """What in ``outcomes`` breaks the promise: one result or one typed error naming the server,
    within the deadline; the kind each misbehavior must end in."""
    out = []
    for o in outcomes:
        cell = f"{o.behavior} × {o.face}: {o.kind} after {o.seconds:.1f} s ({o.message[:160]!r})"
        if o.seconds > DEADLINE_S + SLACK_S:
            out.append(f"too slow: {cell}")
        if o.kind == "hang":
            out.append(f"hung: {cell}")
        elif o.kind != "result":
            if o.kind in ("InternalError", "Error", "TypeError") or not o.kind.endswith("Error"):
                out.append(f"untyped: {cell}")
            elif base_url not in o.message:
                out.append(f"does not name the server: {cell}")
        if o.behavior in TIMEOUTS and o.kind != "ServerTimeoutError":
            out.append(f"not a timeout: {cell}")
        held_json = o.behavior.startswith("done_never") and "embeddings" in o.face  # JSON held open: no end
        if o.behavior in WHOLE and not held_json and (o.kind != "result" or (o.text is not None and o.text != ANSWER)):
            out.append(f"not the answer: {cell} text={o.text!r}")
        if o.behavior in REFUSED and o.kind not in SERVER_ERRORS:
            out.append(f"not refused: {cell}")
    return out


def counts(outcomes: list[Outcome]) -> dict[str, int]:
    """The matrix's figures: requests, results, typed errors, hangs."""
    return {"requests": len(outcomes), "results": sum(o.kind == "result" for o in outcomes),
            "typed_errors": sum(o.kind not in ("result", "hang") for o in outcomes),
            "hangs": sum(o.kind == "hang" for o in outcomes)}
