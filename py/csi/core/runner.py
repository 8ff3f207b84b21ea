"""Where a model runs, as a port: a ``Runner`` per loaded model, here in the browser (``LocalRunner``)
or on an OpenAI-compatible server (``csi.servers``), and ``Placement``, which decides between them
when a model loads. The engine holds runners and never asks where one runs."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol

from ..errors import CsiError
from .backend import Embeddings, ModelInfo
from .generation import Generation, PromptInsides
from .request import GenerationRequest
from .scheduler import Scheduler
from .scope import Scope


class Runner(Protocol):
    """One loaded model and the place it runs."""

    info: ModelInfo
    served: Mapping[str, str]
    """What usage reports say about who generated a reply (empty: the model here)."""

    def serves(self, kind: str) -> bool:
        """Whether it serves requests for a model of ``kind`` (``chat``, ``embedding``)."""
        ...

    def accept(self, request: GenerationRequest, scope: Scope | None) -> Generation:
        """Check ``request`` against the model and render what it can now; iterate the result to run it."""
        ...

    async def embed(self, texts: list[str] | list[list[int]], scope: Scope | None) -> Embeddings:
        """Sentence embeddings of texts, or of token id lists taken as they are (param ``input``)."""
        ...

    async def insides(self, prompt: str, *, fft: bool, keep: int, top_k: int, scope: Scope | None) -> PromptInsides:
        """The model's insides for ``prompt`` (``Engine.insides``)."""
        ...

    def text_of(self, ids: list[int]) -> str:
        """The text of token ids, special tokens left out."""
        ...

    def token_bytes(self, token: int) -> bytes:
        """The bytes of one token."""
        ...

    def token_text(self, token: int) -> str:
        """One token as text (special tokens as written)."""
        ...

    def needs_tokenizer(self, message: str, param: str, error: type[CsiError]) -> None:
        """Raise ``error(message, param)`` unless the model's tokenizer is here."""
        ...

    async def reset(self) -> None:
        """Forget the cached conversation."""
        ...

    async def unload(self) -> None:
        ...


LoadHere = Callable[[], Awaitable[Runner]]


class Placement(Protocol):
    """Decides where a model runs when it loads: here, or on the server the page placed it on."""

    async def runner(self, model_id: str, load_here: LoadHere, current: Callable[[], bool],
                     scheduler: Scheduler) -> Runner:
        """The model's runner; ``load_here`` loads it in the browser; ``current()`` is false once a
        later load or unload has come (a failed local load then is not replaced by a server)."""
        ...

    def placed(self, model_id: str) -> bool:
        """Whether the page placed ``model_id`` on a server (loaded or not)."""
        ...


class HereOnly:
    """The placement of an engine that reaches no server: every model loads here."""

    async def runner(self, model_id: str, load_here: LoadHere, current: Callable[[], bool],
                     scheduler: Scheduler) -> Runner:
        return await load_here()

    def placed(self, model_id: str) -> bool:
        return False
