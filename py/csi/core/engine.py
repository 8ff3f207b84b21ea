"""The engine: the loaded models' runners, their turns (``Scheduler``), and the one generation path
every API face streams from. It knows no API (faces hand it a ``GenerationRequest``) and never asks
where a model runs: a ``Runner`` per model does the work, here or on a server."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping

from ..errors import InvalidInputError, ModelLoadError, ModelNotSupportedError
from ..gguf.ids import is_gguf_id
from .aliases import MODEL_ID, ModelAliases
from .backend import Backend, Embeddings, ModelInfo, ProgressFn
from .generation import Generation, PromptInsides
from .local_runner import LocalRunner
from .request import GenerationRequest
from .runner import HereOnly, Placement, Runner
from .scheduler import Scheduler
from .scope import Scope

MAX_MODELS = 8
DRAFT_PARAM = "extra_body.draft_model"

HUB_URL = re.compile(r"https?://[^\s/?#]+(/[^\s?#]*)?", re.ASCII)  # a Hub mirror's base URL (length apart)


class Engine:
    """One engine behind every API face; owns the models loaded through one ``Backend``."""

    def __init__(self, backend: Backend, servers: Placement | None = None) -> None:
        """``servers`` places models on servers (``csi.servers.ServerPlacement``; ``None``: all run here)."""
        self._backend = backend
        self.servers: Placement = servers or HereOnly()
        """Where the models the page placed on servers run (``set_remotes``)."""
        self.scheduler = Scheduler()
        """Turns at the models, and the cancellation of the work waiting for them."""
        self._runners: dict[str, Runner] = {}
        self._models: dict[str, ModelInfo] = {}
        self._load_epoch = 0
        self._aux_lock = asyncio.Lock()
        self.aliases = ModelAliases()  # other names for loaded models
        # cancellation, as the faces and the worker's envelope call it
        self.interrupt = self.scheduler.interrupt
        self.abort = self.scheduler.abort
        self.is_aborted = self.scheduler.is_aborted
        self.forget = self.scheduler.forget
        self.next_cancel = self.scheduler.next_cancel

    @property
    def models(self) -> Mapping[str, ModelInfo]:
        """The loaded models by id."""
        return self._models

    @property
    def interrupt_epoch(self) -> int:
        """How many ``interrupt()`` calls there have been."""
        return self.scheduler.interrupt_epoch

    # ---- lifecycle -----------------------------------------------------------------------------

    async def load(
        self, model_ids: list[str], device: str = "wasm", progress: ProgressFn | None = None,
        hub: str | None = None, gguf_budget: int | None = None,
    ) -> list[ModelInfo]:
        """Load ``model_ids`` (replacing whatever was loaded); models not built in come from the
        Hugging Face Hub, or from the mirror whose base URL is ``hub`` (param ``hub``); GGUF files'
        weights stay float32 up to ``gguf_budget`` bytes (``None``: the backend's default)."""
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
            if not (MODEL_ID.fullmatch(model_id) and ".." not in model_id) and not is_gguf_id(model_id):
                raise InvalidInputError(f"{model_id[:80]!r} is not a model id: a built-in name, a Hugging Face "
                                        "repo id (letters, digits, '-', '_', '.', one '/'; at most 200 "
                                        "characters) or a GGUF file's URL or path (ending in .gguf)", "model")
        await self.unload()
        mine = self._load_epoch
        for model_id in dict.fromkeys(model_ids):

            async def here(model_id: str = model_id) -> Runner:
                info = await self._backend.load_model(model_id, device, progress, hub, gguf_budget)
                return LocalRunner(self._backend, info, self.scheduler)

            try:
                runner = await self.servers.runner(model_id, here, lambda: self._load_epoch == mine, self.scheduler)
            except BaseException:
                if self._load_epoch == mine:  # all or nothing: what this load brought goes too
                    await self.unload()
                raise
            if self._load_epoch != mine:  # a later load or unload came while this one ran
                await runner.unload()
                raise ModelLoadError(f"loading {model_id!r} was cancelled by a later load or unload", "model")
            self._add(runner)
        return list(self._models.values())

    def _add(self, runner: Runner) -> None:
        self._runners[runner.info.model_id] = runner
        self._models[runner.info.model_id] = runner.info
        self.scheduler.add(runner.info.model_id)

    async def unload(self) -> None:
        """Unload every model, and cancel a load under way (its downloads stop)."""
        self._load_epoch += 1
        self._backend.cancel_loads()
        for model_id, runner in list(self._runners.items()):
            async with self.scheduler.lock(model_id):
                await runner.unload()
            del self._runners[model_id], self._models[model_id]
            self.scheduler.remove(model_id)

    async def reset_chat(self) -> None:
        """Forget the cached conversation of every chat model."""
        for runner in list(self._runners.values()):
            await runner.reset()

    # ---- lookups -------------------------------------------------------------------------------

    def alias_of(self, name: str) -> str:
        """The model id ``name`` stands for (itself unless it is an alias of another)."""
        return name if name in self._models else self.aliases.target(name)

    def runner(self, model_id: str) -> Runner:
        """The runner of a loaded model."""
        return self._runners[model_id]

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
            if self.servers.placed(requested):
                loaded = ", ".join(self._models) or "none"
                raise ModelNotSupportedError(
                    f"model {requested!r} is configured on a server (`remotes`) but is not loaded (loaded: {loaded}); "
                    f"load it with the others: engine.reload([..., {requested!r}]) in the browser, "
                    f"engine.load([..., {requested!r}]) in CPython", "model")
            raise self.aliases.not_served(requested, list(self._models))
        if not self._runners[info.model_id].serves(kind):
            raise ModelNotSupportedError(f"model {requested!r} is a {info.kind} model, not a {kind} model", "model")
        return info

    async def embedding_model(self, model_id: str) -> ModelInfo:
        """A loaded embedding model, loading a built-in one beside the others if need be (param ``model``)."""
        model_id = self.alias_of(model_id)
        if model_id not in self._models:
            if model_id not in self._backend.builtin_models():
                known = ", ".join(sorted(set(self._models) | set(self._backend.builtin_models())))
                raise ModelNotSupportedError(
                    f"model {model_id!r} is neither loaded nor built in (known: {known})", "model")
            async with self._aux_lock:
                if model_id not in self._models:
                    info = await self._backend.load_model(model_id, "wasm", None)
                    self._add(LocalRunner(self._backend, info, self.scheduler))
        info = self._models[model_id]
        if not self._runners[model_id].serves("embedding"):
            raise ModelNotSupportedError(f"model {model_id!r} is a {info.kind} model, not an embedding model", "model")
        return info

    def token_bytes(self, model_id: str, token: int) -> bytes:
        """The bytes of one token (through the tokenizer when there is no byte table)."""
        return self._runners[model_id].token_bytes(token)

    def token_text(self, model_id: str, token: int) -> str:
        """One token as text: its own bytes as UTF-8 (U+FFFD where it holds part of a character),
        special tokens as written."""
        return self._runners[model_id].token_text(token)

    def text_of(self, model: ModelInfo, ids: list[int]) -> str:
        """The text of token ids, special tokens left out (an echoed token prompt, as vLLM echoes it)."""
        return self._runners[model.model_id].text_of(ids)

    # ---- the work ------------------------------------------------------------------------------

    async def insides(self, model: ModelInfo, prompt: str, *, fft: bool, keep: int, top_k: int,
                   scope: Scope | None = None) -> PromptInsides:
        """Each prompt token's embeddings and final-norm hidden state, and the ``top_k`` most likely
        next tokens, in turn with the model's other requests (params ``prompt``, ``top_k_logits``)."""
        return await self._runners[model.model_id].insides(prompt, fft=fft, keep=keep, top_k=top_k, scope=scope)

    async def embed(self, model: ModelInfo, texts: list[str] | list[list[int]],
                    scope: Scope | None = None) -> Embeddings:
        """Sentence embeddings from a loaded embedding model, in turn with the model's other requests:
        of texts, or of token id lists taken as they are (param ``input``: ids outside the
        vocabulary, a list longer than the model's context)."""
        return await self._runners[model.model_id].embed(texts, scope)

    def generate(self, request: GenerationRequest, scope: Scope | None = None) -> Generation:
        """Accept ``request``: resolve the model, check the parameters against it, render the prompt
        and check it against the context window. Iterate the result to run it."""
        model = self.resolve_model(request.model, "chat")
        runner = self._runners[model.model_id]
        draft = request.params.draft_model
        if draft is None:
            return runner.accept(request, scope)
        drafter = self._runners.get(self.resolve_model(draft, "chat").model_id)
        if not isinstance(runner, LocalRunner) or not isinstance(drafter, LocalRunner) or drafter is runner:
            raise InvalidInputError(
                f"{draft!r} cannot draft for {model.model_id!r}: a draft model is another chat model, and both run "
                "here (not on a server)", DRAFT_PARAM)
        if not runner.same_vocabulary(drafter):
            raise InvalidInputError(f"{draft!r} cannot draft for {model.model_id!r}: their vocabularies differ",
                                    DRAFT_PARAM)
        return runner.accept(request, scope, drafter.info)
