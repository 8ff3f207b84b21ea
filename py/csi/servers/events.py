"""A server's streamed events as the engine's: tokens named by text get ids of the generation's own
(``TokenTable``), log-probabilities become steps, streamed tool calls become ``CallPiece``s, and each
choice's usage and finish land in its ``GenerationStats``."""

from __future__ import annotations

import math
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from ..core.backend import StepResult
from ..core.decode import CallPiece, FinishReason, GenerationStats, TextDelta
from ..core.generation import ChoiceEvent
from ..errors import CsiError, ServerError
from .call import Aborted, ServerCall

FINISH: dict[str, FinishReason] = {"stop": "stop", "length": "length", "tool_calls": "stop",
                                   "function_call": "stop", "eos": "stop", "abort": "abort"}


class TokenTable:
    """Ids for the tokens a server names by text (and bytes): the same token, the same id."""

    def __init__(self) -> None:
        self._ids: dict[tuple[bytes, str], int] = {}
        self._tokens: list[tuple[bytes, str]] = []

    def id_of(self, raw: bytes, text: str | None = None) -> int:
        """The id of a token by its bytes and the text the server shows for it."""
        key = (raw, raw.decode("utf-8", "replace") if text is None else text)
        token = self._ids.get(key)
        if token is None:
            token = self._ids[key] = len(self._tokens)
            self._tokens.append(key)
        return token

    def bytes_of(self, token: int) -> bytes:
        return self._tokens[token][0] if 0 <= token < len(self._tokens) else b""

    def text_of(self, token: int) -> str:
        return self._tokens[token][1] if 0 <= token < len(self._tokens) else ""


def entry_bytes(entry: dict[str, Any]) -> bytes:
    """The bytes of a token in a server's logprobs entry: its ``bytes``, else its text as UTF-8
    (llama-cpp-python sends ``bytes: null``)."""
    raw = entry.get("bytes")
    if isinstance(raw, list) and all(isinstance(b, int) and 0 <= b < 256 for b in raw):
        return bytes(raw)
    return str(entry.get("token", "")).encode()


def _entry_id(table: TokenTable, entry: dict[str, Any]) -> int:
    return table.id_of(entry_bytes(entry), str(entry.get("token", "")))


def finite_number(value: Any, what: str) -> float:
    """A number a server sent (a log-probability, an embedding's value) as a float: ``ValueError``
    for anything else (text, ``true``, an integer past a float's range)."""
    if not isinstance(value, bool) and isinstance(value, int | float):
        try:
            out = float(value)
        except OverflowError:
            out = math.inf
        if math.isfinite(out):
            return out
    raise ValueError(f"{str(value)[:40]!r} as {what}")


def _logprob(value: Any) -> float:
    return finite_number(value, "a log-probability")


def choice_steps(choice: dict[str, Any], table: TokenTable, top_n: int) -> list[Any]:
    """The log-probabilities of one streamed choice, chat's shape or the legacy one."""
    lp = choice.get("logprobs")
    if not isinstance(lp, dict):
        return []
    steps = []
    if isinstance(lp.get("content"), list):
        for entry in lp["content"]:
            tops = entry.get("top_logprobs") or []
            steps.append(StepResult(_entry_id(table, entry), _logprob(entry.get("logprob", 0.0)),
                                    tuple((_entry_id(table, t), _logprob(t.get("logprob", 0.0)))
                                          for t in tops[:top_n])))
    elif isinstance(lp.get("tokens"), list):
        tops_all = lp.get("top_logprobs") or []
        for i, token in enumerate(lp["tokens"]):
            value = (lp.get("token_logprobs") or [None] * (i + 1))[i]
            tops = tops_all[i] if i < len(tops_all) and isinstance(tops_all[i], dict) else {}
            steps.append(StepResult(table.id_of(str(token).encode(), str(token)), _logprob(value or 0.0),
                                    tuple((table.id_of(k.encode(), k), _logprob(v))
                                          for k, v in list(tops.items())[:top_n])))
    return steps


class CallNames:
    """A choice's streamed tool-call pieces, the id and name once per call (llama.cpp repeats them in
    every piece; OpenAI sends them first only); the deprecated ``function_call`` as call 0."""

    def __init__(self) -> None:
        self._named: set[int] = set()

    def pieces(self, delta: dict[str, Any], where: str) -> tuple[CallPiece, ...]:
        out = []
        calls = delta.get("tool_calls") or []
        for c in calls if isinstance(calls, list) else []:
            if not isinstance(c, dict):
                continue
            f = c.get("function") or {}
            index = c.get("index", 0)
            if not isinstance(index, int) or not 0 <= index < MAX_CALL_INDEX or not isinstance(f, dict) \
                    or not all(isinstance(f.get(k), str | None) for k in ("name", "arguments")) \
                    or not isinstance(c.get("id"), str | None):
                raise ServerError(f"{where} streamed a tool call of another shape")
            first = index not in self._named and bool(f.get("name"))
            out.append(CallPiece(index, c.get("id") if first else None, f.get("name") if first else None,
                                 f.get("arguments")))
            if first:
                self._named.add(index)
        if not out and isinstance(delta.get("function_call"), dict):
            f = delta["function_call"]
            if not all(isinstance(f.get(k), str | None) for k in ("name", "arguments")):
                raise ServerError(f"{where} streamed a function call of another shape")
            first = 0 not in self._named and bool(f.get("name"))
            out.append(CallPiece(0, "call_" + str(f.get("name") or "") if first else None,
                                 f.get("name") if first else None, f.get("arguments")))
            if first:
                self._named.add(0)
        return tuple(out)


MAX_TOKEN_BYTES = 1024
"""The most text one token can stand for (the longest tokens of real vocabularies are runs of a few
hundred spaces or dashes): a request for ``n`` tokens can use ``n`` times that."""
MAX_CHOICE_BYTES = 8 << 20
"""The most text (content and tool-call arguments) one choice may stream without ``max_tokens``."""
MAX_CALL_INDEX = 1024
FINISH_GRACE_S = 2.0
"""How long a finished choice waits for the rest of its stream (its usage, ``[DONE]``)."""


def text_budget(max_tokens: int | None) -> int:
    """The bytes of text a choice asked for ``max_tokens`` can use."""
    return MAX_CHOICE_BYTES if max_tokens is None else min(max(max_tokens, 1) * MAX_TOKEN_BYTES, MAX_CHOICE_BYTES)


def usage_count(value: Any) -> int | None:
    """A usage count as a server sent it, when it is one (a non-negative integer a double holds)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**53 else None


def _text(value: Any, field: str, where: str) -> str:
    if value is None or isinstance(value, str):
        return value or ""
    raise ServerError(f"{where} streamed a `{field}` that is not text")


class _Choice:
    """What one choice's stream has brought so far."""

    def __init__(self, chat: bool, budget: int, where: str) -> None:
        self.chat, self.budget, self.where = chat, budget, where
        self.stats = GenerationStats(started=time.time())
        self.names = CallNames()
        self.size = 0

    def take(self, event: dict[str, Any], table: TokenTable, top_n: int) -> TextDelta | None:
        """The delta ``event`` brings (``None``: none), its usage and finish noted."""
        usage = event.get("usage")
        s = self.stats
        if isinstance(usage, dict):
            prompt, completion = usage_count(usage.get("prompt_tokens")), usage_count(usage.get("completion_tokens"))
            s.prompt_tokens = prompt if prompt is not None else s.prompt_tokens
            s.completion_tokens = completion if completion is not None else s.completion_tokens
        choices = event.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices else None
        if not isinstance(choice, dict):
            return None
        raw = choice.get("delta") if self.chat else None
        delta: dict[str, Any] = raw if isinstance(raw, dict) else {}
        text = _text(delta.get("content") if self.chat else choice.get("text"), "content", self.where)
        steps = choice_steps(choice, table, top_n)
        calls = self.names.pieces(delta, self.where) if self.chat else ()
        self.size += len(text.encode()) + sum(len((c.arguments or "").encode()) + len(c.name or "") for c in calls)
        if self.size > self.budget:
            raise ServerError(f"{self.where} streamed more text than the request can use "
                              f"({self.budget:,} bytes at most)")
        finish = choice.get("finish_reason")
        if finish is not None and not isinstance(finish, str):
            raise ServerError(f"{self.where} streamed a `finish_reason` that is not text")
        if finish:
            s.finish_reason = FINISH.get(finish, "stop")
        if not (text or steps or calls):
            return None
        s.first_token_at = s.first_token_at or time.time()
        s.completion_tokens += max(len(steps), 1)
        return TextDelta(text, [], steps, calls)


async def choice_events(call: ServerCall, path: str, bodies: list[dict[str, Any]], table: TokenTable,
                        top_n: int, cancelled: Callable[[], bool], budget: int = MAX_CHOICE_BYTES
                        ) -> AsyncIterator[ChoiceEvent]:
    """Stream each choice's request from the server as ``ChoiceEvent``s: its deltas, then its end
    (``abort`` when cancelled; the choices after a cancelled one end at once). A choice that has
    its finish ends once its usage comes, or ``FINISH_GRACE_S`` later."""
    chat = path.startswith("chat")
    for index, body in enumerate(bodies):
        c = _Choice(chat, budget, call.where)
        s = c.stats
        try:
            if cancelled():
                raise Aborted
            stream = call.events(path, body)
            try:
                async for event in stream:
                    was_done = s.finish_reason is not None
                    try:
                        delta = c.take(event, table, top_n)
                    except (TypeError, ValueError, AttributeError, KeyError, OverflowError) as exc:
                        raise ServerError(f"{call.where} streamed an event of another shape ({exc})") from None
                    if delta is not None:
                        yield ChoiceEvent(index, delta, s)
                    usage = isinstance(event.get("usage"), dict)
                    if s.finish_reason is None:
                        if delta is not None or usage:
                            call.progressed()
                    elif usage:
                        break
                    elif not was_done:
                        call.progressed(FINISH_GRACE_S)
            finally:
                await stream.aclose()  # the connection dropped however the reading ends
        except Aborted:
            s.finish_reason = s.finish_reason or "abort"
        except CsiError:
            if s.finish_reason is None or cancelled():
                raise
            # the answer is whole: what its epilogue lacked (usage, [DONE]) or broke is not its loss
        s.finished = time.time()
        s.first_token_at = s.first_token_at or s.finished
        s.finish_reason = s.finish_reason or ("abort" if cancelled() else "stop")
        yield ChoiceEvent(index, None, s)

