"""The engine: loaded models, per-model FIFO, cancellation, and the one generation path every
API face streams from. It knows no API: faces hand it a ``GenerationRequest``."""

from __future__ import annotations

import asyncio
import itertools
import re
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import cast

from ..errors import (
    ContextWindowExceededError,
    CsiError,
    InvalidInputError,
    ModelLoadError,
    ModelNotSupportedError,
    NotSupportedError,
)
from .aliases import MODEL_ID, ModelAliases
from .backend import Backend, Embeddings, ModelInfo, ProgressFn
from .decode import GenerationStats, decode
from .generation import ChoiceEvent, Generation, Guts
from .grammar import GrammarError, compiler_message
from .prompt import render_prompt
from .remote import HttpClient, RemoteCall, RemoteModel, Remotes
from .remote_generation import remote_embeddings, remote_generation
from .request import GenerationRequest
from .scope import Scope
from .token_bytes import TokenBytes

MAX_MODELS = 8
MAX_ABORTED = 1024

HUB_URL = re.compile(r"https?://[^\s/?#]+(/[^\s?#]*)?", re.ASCII)  # a Hub mirror's base URL (length apart)


class Engine:
    """One engine behind every API face; owns the models loaded through one ``Backend``."""

    def __init__(self, backend: Backend, http: HttpClient | None = None) -> None:
        """``http`` reaches the servers of remote models (``None``: none can be configured)."""
        self._backend = backend
        self._http = http
        self.remotes = Remotes(http is not None)
        """Models served by OpenAI-compatible servers (``set_remotes``)."""
        self._models: dict[str, ModelInfo] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._token_bytes: dict[str, TokenBytes | None] = {}
        self._interrupt_epoch = 0
        self._aborted: dict[str, None] = {}  # requests cancelled, running or not yet (oldest dropped)
        self._run_ids = itertools.count()
        self._load_epoch = 0
        self._aux_lock = asyncio.Lock()
        self._holders: dict[str, str] = {}  # model id -> the request whose generation holds its lock
        self._wakers: set[asyncio.Future[None]] = set()  # waiting for a model; woken by interrupt/abort
        self.aliases = ModelAliases()  # other names for loaded models

    @property
    def models(self) -> Mapping[str, ModelInfo]:
        """The loaded models by id."""
        return self._models

    # ---- lifecycle -----------------------------------------------------------------------------

    async def load(
        self, model_ids: list[str], device: str = "wasm", progress: ProgressFn | None = None,
        hub: str | None = None,
    ) -> list[ModelInfo]:
        """Load ``model_ids`` (replacing whatever was loaded); models not built in come from the
        Hugging Face Hub, or from the mirror whose base URL is ``hub`` (param ``hub``)."""
        if hub is not None and not (isinstance(hub, str) and len(hub) <= 2000 and HUB_URL.fullmatch(hub)):
            raise InvalidInputError("`hub` must be the base URL of a Hugging Face Hub mirror (http or https, "
                                    "at most 2,000 characters), or null for the Hub itself", "hub")
        if hub is not None and not hub.endswith("/"):
            hub += "/"
        if not isinstance(model_ids, list) or not model_ids or not all(isinstance(m, str) and m for m in model_ids):
            raise InvalidInputError("model ids must be a non-empty list of non-empty strings", "model")
        if len(model_ids) > MAX_MODELS:
            raise InvalidInputError(f"{len(model_ids)} models asked for; at most {MAX_MODELS} load together", "model")
        for model_id in model_ids:
            if not MODEL_ID.fullmatch(model_id) or ".." in model_id:
                raise InvalidInputError(f"{model_id[:80]!r} is not a model id: a built-in name or a Hugging Face "
                                        "repo id (letters, digits, '-', '_', '.', one '/'; at most 200 "
                                        "characters)", "model")
        await self.unload()
        mine = self._load_epoch
        for model_id in dict.fromkeys(model_ids):
            remote = self.remotes.get(model_id)
            try:
                if remote is not None and remote.policy == "remote":
                    info = remote.info(None)
                else:
                    info = await self._backend.load_model(model_id, device, progress, hub)
            except BaseException as exc:
                if remote is not None and self._load_epoch == mine and isinstance(exc, CsiError) \
                        and not isinstance(exc, InvalidInputError):  # prefer-local: the server serves it
                    info = remote.info(f"{exc.name}: {exc.message}")
                else:
                    if self._load_epoch == mine:  # all or nothing: what this load brought goes too
                        await self.unload()
                    raise
            if self._load_epoch != mine:  # a later load or unload came while this one ran
                if info.remote is None:
                    await self._backend.unload_model(model_id)
                raise ModelLoadError(f"loading {model_id!r} was cancelled by a later load or unload", "model")
            self._add(info)
        return list(self._models.values())

    def _add(self, info: ModelInfo) -> None:
        self._models[info.model_id] = info
        self._locks[info.model_id] = asyncio.Lock()
        if info.kind == "chat" and info.remote is None:
            self._token_bytes[info.model_id] = self._backend.token_bytes(info.model_id)

    async def unload(self) -> None:
        """Unload every model, and cancel a load under way (its downloads stop)."""
        self._load_epoch += 1
        self._backend.cancel_loads()
        for model_id in list(self._models):
            async with self._locks[model_id]:
                if self._models[model_id].remote is None:
                    await self._backend.unload_model(model_id)
            del self._models[model_id], self._locks[model_id]
            self._token_bytes.pop(model_id, None)

    def interrupt(self) -> None:
        """End every running generation at its next token with finish_reason ``abort``."""
        self._interrupt_epoch += 1
        self._wake()

    def abort(self, request_id: str) -> None:
        """End the generation of one request (running or queued) with ``abort``."""
        self._aborted[request_id] = None
        while len(self._aborted) > MAX_ABORTED:
            del self._aborted[next(iter(self._aborted))]
        self._wake()

    def is_aborted(self, request_id: str) -> bool:
        """Whether ``abort(request_id)`` was called (and the request is not answered yet)."""
        return request_id in self._aborted

    def next_cancel(self) -> asyncio.Future[None]:
        """A future resolved at the next ``interrupt()`` or ``abort()``; cancel it to stop waiting."""
        waker = asyncio.get_running_loop().create_future()
        self._wakers.add(waker)
        waker.add_done_callback(self._wakers.discard)
        return waker

    def _wake(self) -> None:
        wakers, self._wakers = self._wakers, set()
        for waker in wakers:
            if not waker.done():
                waker.set_result(None)

    async def _acquire(self, model_id: str, key: str, cancelled: Callable[[], bool], scope: Scope | None) -> bool:
        """Take the model's lock in turn, and hold it as ``key``; ``False`` (and no lock) when the
        request is cancelled while it waits. A wait is reported as ``queued`` progress."""
        lock = self._locks[model_id]
        if not lock.locked():
            await lock.acquire()
        else:
            self._report_queued(model_id, key, scope)
            acquiring = asyncio.ensure_future(lock.acquire())
            try:
                while not acquiring.done():
                    if cancelled():
                        break
                    waker = asyncio.get_running_loop().create_future()
                    self._wakers.add(waker)
                    try:
                        await asyncio.wait((acquiring, waker), return_when=asyncio.FIRST_COMPLETED)
                    finally:
                        self._wakers.discard(waker)
            finally:
                if not acquiring.done():
                    acquiring.cancel()
                    await asyncio.wait((acquiring,))
            if acquiring.cancelled() or acquiring.exception() is not None:
                return False
            if cancelled():  # it came with the lock: give it back at once
                lock.release()
                return False
        self._holders[model_id] = key
        return True

    def _release(self, model_id: str) -> None:
        self._holders.pop(model_id, None)
        self._locks[model_id].release()

    def _report_queued(self, model_id: str, key: str, scope: Scope | None) -> None:
        holder = self._holders.get(model_id)
        report = scope.progress if scope else None
        if report is not None and holder != key:
            report({"stage": "queued", "file": None, "loaded": 0, "total": 1, "model": model_id,
                    "waiting_for": holder})

    def _key(self, scope: Scope | None) -> str:
        """The id of the page message the work serves (or one of its own): what cancels it."""
        return scope.request_id if scope and scope.request_id is not None else f"run-{next(self._run_ids)}"

    @asynccontextmanager
    async def _holding(self, model_id: str, scope: Scope | None) -> AsyncIterator[None]:
        """The model's lock, in turn, for work that is not cut half-way (embeddings, insides)."""
        await self._acquire(model_id, self._key(scope), lambda: False, scope)
        try:
            yield
        finally:
            self._release(model_id)

    def forget(self, request_id: str) -> None:
        """The message ``request_id`` is answered: drop its cancellation."""
        self._aborted.pop(request_id, None)

    @property
    def interrupt_epoch(self) -> int:
        """How many ``interrupt()`` calls there have been."""
        return self._interrupt_epoch

    async def reset_chat(self) -> None:
        """Forget the cached conversation of every chat model."""
        for model_id, info in self._models.items():
            if info.kind == "chat" and info.remote is None:
                async with self._locks[model_id]:
                    self._backend.reuse_prefix(model_id, [])

    # ---- lookups -------------------------------------------------------------------------------

    def alias_of(self, name: str) -> str:
        """The model id ``name`` stands for (itself unless it is an alias of another)."""
        return name if name in self._models else self.aliases.target(name)

    def resolve_model(self, requested: str | None, kind: str) -> ModelInfo:
        """The loaded model ``requested`` of this kind; ``None``: the only one loaded (param ``model``)."""
        if requested is None:
            candidates = [m for m in self._models.values() if m.kind == kind]
            if len(candidates) == 1:
                return candidates[0]
            if not candidates:
                raise ModelNotSupportedError(f"no {kind} model is loaded", "model")
            names = ", ".join(m.model_id for m in candidates)
            raise InvalidInputError(f"several {kind} models are loaded ({names}): say which with `model`", "model")
        info = self._models.get(self.alias_of(requested))
        if info is None:
            raise self.aliases.not_served(requested, list(self._models))
        if info.kind != kind and info.remote is None:  # a server says itself what its model can do
            raise ModelNotSupportedError(f"model {requested!r} is a {info.kind} model, not a {kind} model", "model")
        return info

    def remote_call(self, model_id: str, scope: Scope | None) -> tuple[RemoteModel, RemoteCall]:
        """The server of the remote model ``model_id`` and a call to it that ``abort``/``interrupt`` cancel."""
        remote = self.remotes.get(model_id)
        model = self._models.get(model_id)
        if remote is None or self._http is None or model is None or remote.endpoint.base_url != model.remote:
            raise ModelNotSupportedError(f"the server of {model_id!r} is no longer configured: load the "
                                         "model again", "model")
        key = self._key(scope)
        epoch = scope.epoch if scope and scope.epoch is not None else self._interrupt_epoch
        return remote, RemoteCall(self._http, remote.endpoint,
                                  lambda: self._interrupt_epoch != epoch or key in self._aborted, self.next_cancel)

    async def embedding_model(self, model_id: str) -> ModelInfo:
        """A loaded embedding model, loading a built-in one beside the others if need be (param ``model``)."""
        model_id = self.alias_of(model_id)
        info = self._models.get(model_id)
        if info is None:
            if model_id not in self._backend.builtin_models():
                known = ", ".join(sorted(set(self._models) | set(self._backend.builtin_models())))
                raise ModelNotSupportedError(
                    f"model {model_id!r} is neither loaded nor built in (known: {known})", "model")
            async with self._aux_lock:
                if model_id not in self._models:
                    self._add(await self._backend.load_model(model_id, "wasm", None))
            info = self._models[model_id]
        if info.kind != "embedding" and info.remote is None:
            raise ModelNotSupportedError(f"model {model_id!r} is a {info.kind} model, not an embedding model", "model")
        return info

    def token_bytes(self, model_id: str, token: int) -> bytes:
        """The bytes of one token (through the tokenizer when there is no byte table)."""
        table = self._token_bytes.get(model_id)
        if table is not None and token < len(table.table):
            return table.table[token]
        return self._backend.decode(model_id, [token]).encode()

    def token_text(self, model_id: str, token: int) -> str:
        """One token as text: its own bytes as UTF-8 (U+FFFD where it holds part of a character),
        special tokens as written."""
        table = self._token_bytes.get(model_id)
        if table is not None and table.specials and token in table.specials:
            return table.specials[token].decode("utf-8", "replace")
        return self.token_bytes(model_id, token).decode("utf-8", "replace")

    # ---- insides -------------------------------------------------------------------------------

    async def guts(self, model: ModelInfo, prompt: str, *, fft: bool, keep: int, top_k: int,
                   scope: Scope | None = None) -> Guts:
        """Each prompt token's embeddings and final-norm hidden state, and the ``top_k`` most likely
        next tokens, in turn with the model's other requests (params ``prompt``, ``top_k_logits``)."""
        if model.remote is not None:
            raise NotSupportedError(f"{model.model_id!r} runs on a server, which does not show its insides", "model")
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
        async with self._holding(model.model_id, scope):
            arrays = await self._backend.guts(model.model_id, ids, fft=fft, keep=keep, top_k=top_k)
        return Guts(ids, arrays)

    # ---- embeddings ----------------------------------------------------------------------------

    async def embed(self, model: ModelInfo, texts: list[str] | list[list[int]],
                    scope: Scope | None = None) -> Embeddings:
        """Sentence embeddings from a loaded embedding model, in turn with the model's other requests:
        of texts, or of token id lists taken as they are (param ``input``: ids outside the
        vocabulary, a list longer than the model's context)."""
        if model.remote is not None:
            return await remote_embeddings(*self.remote_call(model.model_id, scope), texts)
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
            async with self._holding(model.model_id, scope):
                return await self._backend.embed_ids(model.model_id, rows)
        async with self._holding(model.model_id, scope):
            return await self._backend.embed(model.model_id, cast(list[str], texts))

    # ---- the one generation path ---------------------------------------------------------------

    def text_of(self, model: ModelInfo, ids: list[int]) -> str:
        """The text of token ids, special tokens left out (an echoed token prompt, as vLLM echoes it)."""
        if model.remote is not None:
            raise NotSupportedError("the tokens of a model on a server cannot be echoed as text here", "echo")
        return self._backend.decode(model.model_id, ids)

    def generate(self, request: GenerationRequest, scope: Scope | None = None) -> Generation:
        """Accept ``request``: resolve the model, check the parameters against it, render the prompt
        and check it against the context window. Iterate the result to run it."""
        model = self.resolve_model(request.model, "chat")
        if model.remote is not None:
            return remote_generation(*self.remote_call(model.model_id, scope), model, request, scope)
        ids, params, tool_format = render_prompt(self._backend, model, request)
        return Generation(self._run, lambda token: self.token_bytes(model.model_id, token), model, ids, params,
                          request.n, scope, request.tools, tool_format)

    async def _compile(self, gen: Generation) -> float | None:
        """Compile the request's grammar; the seconds it took (``None``: no grammar)."""
        grammar = gen.params.sampling.grammar
        if grammar is None:
            return None
        started = time.perf_counter()
        try:
            await self._backend.compile_grammar(gen.model.model_id, grammar)
        except GrammarError as exc:
            raise InvalidInputError(compiler_message(str(exc)), grammar.param) from None
        return time.perf_counter() - started

    async def _run(self, gen: Generation) -> AsyncIterator[ChoiceEvent]:
        """Generate ``gen.n`` choices, one after the other, under the model's lock.

        Requests to one model run in arrival order; the backend keeps what it can of its KV cache
        (later choices reuse the prompt). ``interrupt()`` and ``abort(request_id)`` end the running
        choice with ``abort`` and skip the rest.
        """
        model, n = gen.model, gen.n
        scope = gen.scope
        key = self._key(scope)
        epoch = scope.epoch if scope and scope.epoch is not None else self._interrupt_epoch

        def cancelled() -> bool:
            return self._interrupt_epoch != epoch or key in self._aborted

        try:
            if not await self._acquire(model.model_id, key, cancelled, scope):
                for index in range(n):  # cut before it started
                    yield ChoiceEvent(index, None, GenerationStats(prompt_tokens=len(gen.prompt_ids),
                                                                   finish_reason="abort"))
                return
            try:
                grammar_init_s = await self._compile(gen)
                self._backend.set_sampling(model.model_id, gen.params.sampling)
                for index in range(n):
                    if index:
                        self._backend.next_choice(model.model_id)
                    stats = GenerationStats(grammar_init_s=grammar_init_s if index == 0 else None)
                    try:
                        async for delta in decode(self._backend, model, gen.prompt_ids, gen.params, stats,
                                                  cancelled, self._token_bytes.get(model.model_id), gen.stopper()):
                            yield ChoiceEvent(index, delta, stats)
                    except GrammarError as exc:
                        grammar = gen.params.sampling.grammar
                        param = grammar.param if grammar else None
                        raise InvalidInputError(compiler_message(str(exc)), param) from None
                    yield ChoiceEvent(index, None, stats)
                    if stats.finish_reason == "abort":
                        for rest in range(index + 1, n):
                            yield ChoiceEvent(rest, None, GenerationStats(
                                prompt_tokens=len(gen.prompt_ids), finish_reason="abort"))
                        break
            finally:
                self._release(model.model_id)
        finally:
            if scope is None or scope.request_id is None:  # the envelope forgets a message's id once answered
                self._aborted.pop(key, None)
