"""The decoding role of the Pyodide backend: the bridge runs forward passes and samples
(worker/sampling/); each step's token comes back through a callback that resumes the waiter."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from json import dumps, loads
from typing import Any, cast

from pyodide.ffi import JsException, create_proxy, to_js

from ...core.backend import SamplingParams, StepResult
from ...core.grammar import Grammar, GrammarError, compact_json_formats, json_formats
from ...errors import InternalError
from .bridge_state import BridgeState
from .eager_future import EagerFuture

GRAMMAR_ERROR = "[grammar] "


class PyodideDecoding(BridgeState):
    """``Generation`` over the bridge; one waiter per step in flight, found by its ticket."""

    def __init__(self, bridge: Any) -> None:
        super().__init__(bridge)
        self._steps: dict[int, EagerFuture] = {}
        self._ticket = 0
        self._callbacks = (create_proxy(self._on_token), create_proxy(self._on_step_error),
                           create_proxy(self._on_tokens))
        bridge.setStepCallbacks(*self._callbacks)

    def _on_token(self, ticket: int, token: int, logprobs: str | None = None, grammar_s: float | None = None) -> None:
        future = self._steps.pop(ticket, None)
        if future is None:
            return
        try:
            spent = float(grammar_s) if isinstance(grammar_s, float | int) else 0.0
            if isinstance(logprobs, str):
                logprob, top = loads(logprobs)
                result = StepResult(int(token), logprob, tuple((int(i), lp) for i, lp in top), spent)
            else:
                result = StepResult(int(token), grammar_s=spent)
        except BaseException as exc:  # noqa: BLE001 - a waiter must never be left hanging
            future.settle(None, InternalError(f"bad step result from the bridge: {type(exc).__name__}: {exc}"))
        else:
            future.settle(result, None)

    def _on_tokens(self, ticket: int, results: str) -> None:
        future = self._steps.pop(ticket, None)
        if future is None:
            return
        try:
            out = [StepResult(int(token), None if logprob is None else float(logprob),
                              tuple((int(i), lp) for i, lp in top or ()), float(grammar_s or 0.0))
                   for token, logprob, top, grammar_s in loads(results)]
        except BaseException as exc:  # noqa: BLE001 - a waiter must never be left hanging
            future.settle(None, InternalError(f"bad step results from the bridge: {type(exc).__name__}: {exc}"))
        else:
            future.settle(out, None)

    def _on_step_error(self, ticket: int, message: str) -> None:
        future = self._steps.pop(ticket, None)
        if future is not None:
            if message.startswith(GRAMMAR_ERROR):  # worker/sampling/ marks the grammar's faults
                future.settle(None, GrammarError(message[len(GRAMMAR_ERROR):]))
            else:
                future.settle(None, InternalError(f"forward pass failed: {message}"))

    async def compile_grammar(self, model_id: str, grammar: Grammar) -> None:
        kind, prepend = self._vocab_types[model_id]  # from the token table the engine read at load
        try:
            spec = grammar.to_dict()
            if grammar.kind == "structural_tag":
                tag = loads(grammar.source)
                ebnf = {dumps(s): str(await self._bridge.jsonSchemaToEBNF(dumps(s))) for s in json_formats(tag)}
                spec["compiled_source"] = dumps(compact_json_formats(tag, lambda s: ebnf[dumps(s)]))
            await self._bridge.compileGrammar(
                model_id, dumps(spec), kind, prepend, dumps(list(self._eos.get(model_id, ()))))
        except JsException as exc:
            raise GrammarError(exc.message) from None

    def reuse_prefix(self, model_id: str, ids: list[int]) -> int:
        return int(self._bridge.reusePrefix(model_id, to_js(ids)))

    async def restore_prefix(self, model_id: str, ids: list[int]) -> int:
        try:
            return int(await self._bridge.restorePrefix(model_id, to_js(ids)))
        except JsException:
            return 0

    async def remember(self, model_id: str) -> None:
        try:
            await self._bridge.remember(model_id)
        except JsException:
            pass

    def set_sampling(self, model_id: str, params: SamplingParams) -> None:
        self._bridge.setSampling(model_id, dumps(params.to_dict()))

    def next_choice(self, model_id: str) -> None:
        self._bridge.nextChoice(model_id)

    def latency_breakdown(self, model_id: str) -> dict[str, list[float]]:
        return cast(dict[str, list[float]], loads(self._bridge.latencyBreakdown(model_id)))

    async def step(self, model_id: str, ids: list[int]) -> StepResult:
        # one token (every decode step) crosses as a plain number: no list conversion
        return cast(StepResult, await self._call(lambda ticket: self._bridge.stepAsync(
            model_id, ids[0] if len(ids) == 1 else to_js(ids), ticket)))

    async def verify(self, model_id: str, ids: list[int], drafts: list[int]) -> list[StepResult]:
        return cast(list[StepResult], await self._call(lambda ticket: self._bridge.verifyAsync(
            model_id, to_js(ids), to_js(drafts), ticket)))

    async def _call(self, start: Callable[[int], object]) -> object:
        """Start a step on the bridge under a new ticket; its result comes through a callback."""
        self._ticket += 1
        ticket = self._ticket
        future = EagerFuture(asyncio.get_running_loop())
        self._steps[ticket] = future
        try:
            start(ticket)
        except JsException as exc:
            self._steps.pop(ticket, None)
            raise InternalError(f"forward pass failed: {exc.message}") from None
        return await future
