"""A model that runs here, through the ``Backend``: prompts rendered and checked, choices decoded one
after the other in the model's turn, embeddings and insides in turn with them."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import replace
from typing import cast

from ..errors import ContextWindowExceededError, CsiError, InvalidInputError
from .backend import Backend, Embeddings, ModelInfo, SamplingParams
from .decode import GenerationStats, decode
from .generation import ChoiceEvent, Generation, PromptInsides
from .grammar import GrammarError, compiler_message
from .model_drafts import ModelDrafts
from .prompt import render_prompt
from .request import GenerationRequest
from .scheduler import Scheduler
from .scope import Scope


class LocalRunner:
    """One model loaded in the browser (or in CPython's backend)."""

    served: Mapping[str, str] = {}

    def __init__(self, backend: Backend, info: ModelInfo, scheduler: Scheduler) -> None:
        self.info = info
        self._backend = backend
        self._turns = scheduler
        self._table = backend.token_bytes(info.model_id) if info.kind == "chat" else None

    # ---- tokens ------------------------------------------------------------------------------------

    def token_bytes(self, token: int) -> bytes:
        """The bytes of one token (through the tokenizer when there is no byte table)."""
        table = self._table
        if table is not None and token < len(table.table):
            return table.table[token]
        return self._backend.decode(self.info.model_id, [token]).encode()

    def token_text(self, token: int) -> str:
        """One token as text: its own bytes as UTF-8 (U+FFFD where it holds part of a character),
        special tokens as written."""
        table = self._table
        if table is not None and table.specials and token in table.specials:
            return table.specials[token].decode("utf-8", "replace")
        return self.token_bytes(token).decode("utf-8", "replace")

    def text_of(self, ids: list[int]) -> str:
        return self._backend.decode(self.info.model_id, ids)

    def needs_tokenizer(self, message: str, param: str, error: type[CsiError]) -> None:
        return None

    def serves(self, kind: str) -> bool:
        return self.info.kind == kind

    # ---- lifecycle ---------------------------------------------------------------------------------

    async def reset(self) -> None:
        if self.info.kind == "chat":
            async with self._turns.lock(self.info.model_id):
                self._backend.reuse_prefix(self.info.model_id, [])

    async def unload(self) -> None:
        await self._backend.unload_model(self.info.model_id)

    # ---- embeddings and insides --------------------------------------------------------------------

    async def embed(self, texts: list[str] | list[list[int]], scope: Scope | None) -> Embeddings:
        model = self.info
        if texts and not isinstance(texts[0], str):
            rows = texts
            for row in rows:
                if not row:
                    raise InvalidInputError("an empty token list cannot be embedded", "input")
                if len(row) > model.context_length:
                    raise ContextWindowExceededError(f"{len(row)} tokens; {model.model_id!r} reads at most "
                                                     f"{model.context_length}", "input")
                outside = next((t for t in row if not 0 <= t < model.vocab_size), None)
                if outside is not None:
                    raise InvalidInputError(f"token {outside} is outside the vocabulary of {model.model_id!r} "
                                            f"(0 to {model.vocab_size - 1})", "input")
            async with self._turns.holding(model.model_id, scope):
                return await self._backend.embed_ids(model.model_id, rows)
        async with self._turns.holding(model.model_id, scope):
            return await self._backend.embed(model.model_id, cast(list[str], texts))

    async def insides(self, prompt: str, *, fft: bool, keep: int, top_k: int, scope: Scope | None) -> PromptInsides:
        model = self.info
        ids = self._backend.encode(model.model_id, prompt, add_special_tokens=True)
        if not ids:
            raise InvalidInputError("the prompt is empty", "prompt")
        if len(ids) > model.context_length:
            raise ContextWindowExceededError(
                f"the prompt has {len(ids)} tokens; the context window of {model.model_id!r} "
                f"holds {model.context_length}", "prompt")
        if model.vocab_size and top_k > model.vocab_size:
            raise InvalidInputError(f"`top_k_logits` is {top_k}; the vocabulary has {model.vocab_size} tokens",
                                    "top_k_logits")
        async with self._turns.holding(model.model_id, scope):
            arrays = await self._backend.insides(model.model_id, ids, fft=fft, keep=keep, top_k=top_k)
        return PromptInsides(ids, arrays)

    # ---- generation --------------------------------------------------------------------------------

    def same_vocabulary(self, other: LocalRunner) -> bool:
        """Whether ``other`` reads and writes the same tokens (a draft model for this one)."""
        mine, theirs = self._table, other._table
        if mine is None or theirs is None:
            return False
        return self.info.vocab_size == other.info.vocab_size and mine.table == theirs.table

    def accept(self, request: GenerationRequest, scope: Scope | None, draft: ModelInfo | None = None) -> Generation:
        """``draft``: a loaded model with the same vocabulary that drafts tokens (its greedy choices)."""
        ids, params, tool_format = render_prompt(self._backend, self.info, request)
        params = replace(params, sampling=params.sampling.resolved(self.info.sampling, params.face_defaults))
        gen = Generation(self._run, model=self.info, prompt_ids=ids, params=params, n=request.n, scope=scope,
                         token_bytes=self.token_bytes, token_text=self._byte_text, tools=request.tools,
                         tool_format=tool_format)
        gen.draft = draft
        return gen

    def _byte_text(self, token: int) -> str:
        return self.token_bytes(token).decode("utf-8", "replace")

    async def _compile(self, gen: Generation) -> float | None:
        """Compile the request's grammar; the seconds it took (``None``: no grammar)."""
        grammar = gen.params.sampling.grammar
        if grammar is None:
            return None
        started = time.perf_counter()
        try:
            await self._backend.compile_grammar(self.info.model_id, grammar)
        except GrammarError as exc:
            raise InvalidInputError(compiler_message(str(exc)), grammar.param) from None
        return time.perf_counter() - started

    async def _run(self, gen: Generation) -> AsyncIterator[ChoiceEvent]:
        """Generate ``gen.n`` choices, one after the other, in the model's turn.

        Requests to one model run in arrival order; the backend keeps what it can of its KV cache
        (later choices reuse the prompt). ``interrupt()`` and ``abort(request_id)`` end the running
        choice with ``abort`` and skip the rest.
        """
        model_id, n, scope, draft = self.info.model_id, gen.n, gen.scope, gen.draft
        key, cancelled = self._turns.watch(scope)
        # both models' turns, taken in one order whatever drafts for what (no two requests wait on each other)
        turns = sorted({model_id} | ({draft.model_id} if draft and gen.params.speculative else set()))
        held: list[str] = []
        try:
            for turn in turns:
                if not await self._turns.acquire(turn, key, cancelled, scope):
                    for index in range(n):  # cut before it started
                        yield ChoiceEvent(index, None, GenerationStats(prompt_tokens=len(gen.prompt_ids),
                                                                       finish_reason="abort"))
                    return
                held.append(turn)
            grammar_init_s = await self._compile(gen)
            self._backend.set_sampling(model_id, gen.params.sampling)
            if len(turns) > 1 and draft is not None:
                self._backend.set_sampling(draft.model_id, SamplingParams(temperature=0.0))
            for index in range(n):
                if index:
                    self._backend.next_choice(model_id)
                stats = GenerationStats(grammar_init_s=grammar_init_s if index == 0 else None)
                try:
                    drafter = None if len(turns) == 1 or draft is None else ModelDrafts(
                        self._backend, draft.model_id, draft.context_length)
                    async for delta in decode(self._backend, self.info, gen.prompt_ids, gen.params, stats,
                                              cancelled=cancelled, token_bytes=self._table,
                                              stopper=gen.stopper(), drafter=drafter):
                        yield ChoiceEvent(index, delta, stats)
                except GrammarError as exc:
                    grammar = gen.params.sampling.grammar
                    raise InvalidInputError(compiler_message(str(exc)),
                                            grammar.param if grammar else None) from None
                yield ChoiceEvent(index, None, stats)
                if stats.finish_reason == "abort":
                    for rest in range(index + 1, n):
                        yield ChoiceEvent(rest, None, GenerationStats(prompt_tokens=len(gen.prompt_ids),
                                                                      finish_reason="abort"))
                    break
        finally:
            for turn in reversed(held):
                self._turns.release(turn)
            self._turns.done(key, scope)
