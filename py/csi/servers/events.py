"""A server's streamed events as the engine's: tokens named by text get ids of the generation's own
(``TokenTable``), log-probabilities become steps, streamed tool calls become ``CallPiece``s, and each
choice's usage and finish land in its ``GenerationStats``."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from ..core.backend import StepResult
from ..core.decode import CallPiece, FinishReason, GenerationStats, TextDelta
from ..core.generation import ChoiceEvent
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


def choice_steps(choice: dict[str, Any], table: TokenTable, top_n: int) -> list[Any]:
    """The log-probabilities of one streamed choice, chat's shape or the legacy one."""
    lp = choice.get("logprobs")
    if not isinstance(lp, dict):
        return []
    steps = []
    if isinstance(lp.get("content"), list):
        for entry in lp["content"]:
            tops = entry.get("top_logprobs") or []
            steps.append(StepResult(_entry_id(table, entry), float(entry.get("logprob", 0.0)),
                                    tuple((_entry_id(table, t), float(t.get("logprob", 0.0))) for t in tops[:top_n])))
    elif isinstance(lp.get("tokens"), list):
        tops_all = lp.get("top_logprobs") or []
        for i, token in enumerate(lp["tokens"]):
            value = (lp.get("token_logprobs") or [None] * (i + 1))[i]
            tops = tops_all[i] if i < len(tops_all) and isinstance(tops_all[i], dict) else {}
            steps.append(StepResult(table.id_of(str(token).encode(), str(token)), float(value or 0.0),
                                    tuple((table.id_of(k.encode(), k), float(v))
                                          for k, v in list(tops.items())[:top_n])))
    return steps


class CallNames:
    """A choice's streamed tool-call pieces, the id and name once per call (llama.cpp repeats them in
    every piece; OpenAI sends them first only); the deprecated ``function_call`` as call 0."""

    def __init__(self) -> None:
        self._named: set[int] = set()

    def pieces(self, delta: dict[str, Any]) -> tuple[CallPiece, ...]:
        out = []
        for c in delta.get("tool_calls") or []:
            if not isinstance(c, dict):
                continue
            f = c.get("function") or {}
            index = int(c.get("index", 0))
            first = index not in self._named and bool(f.get("name"))
            out.append(CallPiece(index, c.get("id") if first else None, f.get("name") if first else None,
                                 f.get("arguments")))
            if first:
                self._named.add(index)
        if not out and isinstance(delta.get("function_call"), dict):
            f = delta["function_call"]
            first = 0 not in self._named and bool(f.get("name"))
            out.append(CallPiece(0, "call_" + str(f.get("name") or "") if first else None,
                                 f.get("name") if first else None, f.get("arguments")))
            if first:
                self._named.add(0)
        return tuple(out)


async def choice_events(call: ServerCall, path: str, bodies: list[dict[str, Any]], table: TokenTable,
                        top_n: int, cancelled: Callable[[], bool]) -> AsyncIterator[ChoiceEvent]:
    """Stream each choice's request from the server as ``ChoiceEvent``s: its deltas, then its end
    (``abort`` when cancelled; the choices after a cancelled one end at once)."""
    chat = path.startswith("chat")
    for index, body in enumerate(bodies):
        s = GenerationStats(started=time.time())
        names = CallNames()
        try:
            if cancelled():
                raise Aborted
            async for event in call.events(path, body):
                usage = event.get("usage")
                if isinstance(usage, dict):
                    s.prompt_tokens = int(usage.get("prompt_tokens") or 0)
                    if usage.get("completion_tokens") is not None:
                        s.completion_tokens = int(usage["completion_tokens"])
                for choice in (event.get("choices") or [])[:1]:
                    if not isinstance(choice, dict):
                        continue
                    delta = (choice.get("delta") or {}) if chat else {}
                    text = delta.get("content") if chat else choice.get("text")
                    steps = choice_steps(choice, table, top_n)
                    calls = names.pieces(delta) if chat else ()
                    if text or steps or calls:
                        s.first_token_at = s.first_token_at or time.time()
                        s.completion_tokens += max(len(steps), 1)
                        yield ChoiceEvent(index, TextDelta(text or "", [], steps, calls), s)
                    if choice.get("finish_reason"):
                        s.finish_reason = FINISH.get(choice["finish_reason"], "stop")
        except Aborted:
            s.finish_reason = s.finish_reason or "abort"
        s.finished = time.time()
        s.first_token_at = s.first_token_at or s.finished
        s.finish_reason = s.finish_reason or ("abort" if cancelled() else "stop")
        yield ChoiceEvent(index, None, s)
