"""``ServerRunner``: a model served by an OpenAI-compatible server (llama.cpp, vLLM, ...), behind the
same port as a model here. Generations stream from the server's chat or text completions, one request
per choice (servers such as llama.cpp's answer one), cancelled with the request; embeddings come from
its ``/embeddings``. What needs the model's tokenizer or insides is refused, naming why."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..core.backend import Embeddings, ModelInfo
from ..core.generation import Generation, PromptInsides
from ..core.request import GenerationRequest
from ..core.scheduler import Scheduler
from ..core.scope import Scope
from ..errors import CsiError, ModelNotSupportedError, NotSupportedError, ServerError
from ..faces.openai.protocol import ChatCompletionRequest, CompletionRequest
from .call import ServerCall
from .endpoints import ServerModel
from .events import TokenTable, choice_events, finite_number, text_budget, usage_count
from .http import HttpClient
from .requests import passthrough_body, request_body


class ServerRunner:
    """One model on its server."""

    def __init__(self, model: ServerModel, info: ModelInfo, http: HttpClient, scheduler: Scheduler,
                 lookup: Callable[[str], ServerModel | None]) -> None:
        """``lookup`` finds the model's server as configured now (the page may have changed it)."""
        self.info = info
        self.served: Mapping[str, str] = {"served_by": "remote", "server": model.endpoint.base_url}
        self._http = http
        self._turns = scheduler
        self._lookup = lookup

    def _server(self) -> ServerModel:
        model = self._lookup(self.info.model_id)
        if model is None or model.endpoint.base_url != self.info.remote:
            raise ModelNotSupportedError(f"the server of {self.info.model_id!r} is no longer configured: load the "
                                         "model again", "model")
        return model

    def serves(self, kind: str) -> bool:
        return True  # a server says itself what its model can do

    def _call(self, model: ServerModel, scope: Scope | None) -> tuple[ServerCall, Callable[[], bool]]:
        _, cancelled = self._turns.watch(scope)
        return ServerCall(self._http, model.endpoint, cancelled, self._turns.next_cancel), cancelled

    def accept(self, request: GenerationRequest, scope: Scope | None) -> Generation:
        model = self._server()
        openai = request.openai
        if isinstance(openai, ChatCompletionRequest | CompletionRequest):
            path, body = passthrough_body(openai, model)
        else:
            path, body = request_body(request, model)
        seed = body.get("seed")
        bodies = [body if not k or seed is None else {**body, "seed": seed + k} for k in range(request.n)]
        call, cancelled = self._call(model, scope)
        table = TokenTable()
        top_n = request.params.sampling.top_logprobs
        budget = text_budget(request.params.max_tokens)
        return Generation(lambda _: choice_events(call, path, bodies, table, top_n, cancelled, budget), model=self.info,
                          prompt_ids=[], params=request.params, n=request.n, scope=scope,
                          token_bytes=table.bytes_of, token_text=table.text_of, served=self.served)

    async def embed(self, texts: list[str] | list[list[int]], scope: Scope | None) -> Embeddings:
        model = self._server()
        call, _ = self._call(model, scope)
        body = await call.json("embeddings", {"model": model.server_model, "input": texts, "encoding_format": "float"})
        try:
            rows = sorted(body["data"], key=lambda d: d["index"])
            vectors = [pooled(row["embedding"]) for row in rows]
            usage = body.get("usage")
            tokens = (usage_count(usage.get("prompt_tokens")) if isinstance(usage, dict) else None) or 0
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ServerError(f"{call.where} answered embeddings in another shape ({exc!r})"[:2000]) from None
        if len(vectors) != len(texts):
            raise ServerError(f"{call.where} answered {len(vectors)} embeddings for {len(texts)} inputs")
        if len({len(v) for v in vectors}) > 1 or any(not v for v in vectors):
            raise ServerError(f"{call.where} answered embeddings of different or no dimensions")
        return Embeddings(vectors, tokens, len(vectors[0]) if vectors else 0)

    async def insides(self, prompt: str, *, fft: bool, keep: int, top_k: int, scope: Scope | None) -> PromptInsides:
        raise NotSupportedError(f"{self.info.model_id!r} runs on a server, which does not show its insides", "model")

    def text_of(self, ids: list[int]) -> str:
        raise NotSupportedError("the tokens of a model on a server cannot be echoed as text here", "echo")

    def token_bytes(self, token: int) -> bytes:
        raise NotSupportedError("the tokens of a model on a server are not known here", "model")

    def token_text(self, token: int) -> str:
        raise NotSupportedError("the tokens of a model on a server are not known here", "model")

    def needs_tokenizer(self, message: str, param: str, error: type[CsiError]) -> None:
        raise error(message, param)

    async def reset(self) -> None:
        return None  # the server keeps no conversation of ours

    async def unload(self) -> None:
        return None


def pooled(values: list[Any]) -> list[float]:
    """A server's embedding as a vector: one per token (llama.cpp's for a model without pooling)
    mean-pooled and L2-normalized, as csi-web's own are; a sentence vector as it came."""
    if not isinstance(values, list):
        raise TypeError("an embedding that is not a list")
    if values and isinstance(values[0], list):
        rows = [[finite_number(x, "an embedding's value") for x in row] for row in values]
        mean = [sum(col) / len(rows) for col in zip(*rows, strict=True)]
        norm = sum(x * x for x in mean) ** 0.5 or 1.0
        return [x / norm for x in mean]
    return [finite_number(x, "an embedding's value") for x in values]

