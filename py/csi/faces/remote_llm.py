"""The RemoteLLM gRPC service (rpc.proto), proto3 JSON field names: ``Generate``, ``GetLlmType`` and
``GenerationalGuts``."""

from __future__ import annotations

from json import dumps
from typing import Annotated

from pydantic import Field

from ..core.engine import Engine
from ..core.request import GenerationParams, GenerationRequest, SamplingParams
from ..core.scope import Scope
from ..errors import blame
from ..wire import MAX_BATCH, Reply, Strict


class GenerateRequest(Strict):
    api_key: str = ""
    prompts: Annotated[list[str], Field(max_length=MAX_BATCH)] = []
    stop: list[str] = []

    def to_generation_requests(self, model: str) -> list[GenerationRequest]:
        """One greedy generation per prompt."""
        params = GenerationParams(sampling=SamplingParams(temperature=0.0), stop=tuple(s for s in self.stop if s))
        return [GenerationRequest(model=model, prompt=p, params=params) for p in self.prompts]


class LlmTypeRequest(Strict):
    api_key: str = ""


INT32_MAX = 2**31 - 1


class GenerationalGutsRequest(Strict):
    """Fields left out take the seed's suggested defaults; ``model`` (an extension) picks one of
    several loaded chat models."""

    api_key: str = ""
    prompt: str
    fft_embeddings: bool = True
    embedding_trunkation: int = Field(default=25, ge=0, le=INT32_MAX)
    top_k_logits: int = Field(default=5, ge=0, le=INT32_MAX)
    model: str | None = None


class TextGeneration(Reply):
    text: str
    generation_info: str
    """JSON text: ``finish_reason``, ``prompt_tokens``, ``completion_tokens``, ``model``."""


class PromptGenerations(Reply):
    generations: list[TextGeneration]


class GenerateResponse(Reply):
    generations: list[PromptGenerations]
    """One per prompt, in order."""


class LlmTypeResponse(Reply):
    llm_type: str


class TokenGuts(Reply):
    """One prompt token: its text and id, its embeddings and the model's last hidden state there."""

    token: str
    token_id: int
    positional_embedding: list[float]
    token_embedding: list[float]
    hidden_state: list[float]


class NextToken(Reply):
    """One of the likeliest next tokens: raw ``logit``, and ``probability`` (an extension)."""

    token: str
    id: int
    logit: float
    probability: float


class GenerationalGutsResponse(Reply):
    tokens: list[TokenGuts]
    generations: list[NextToken]


async def generate(engine: Engine, req: GenerateRequest, scope: Scope | None = None) -> GenerateResponse:
    """``RemoteLLM.Generate``: one greedy generation per prompt, on the one chat model loaded.

    The API key is accepted and ignored: the model runs in this browser.
    """
    model = engine.resolve_model(None, "chat").model_id
    out = []
    for i, one in enumerate(req.to_generation_requests(model)):
        with blame(f"prompts[{i}]", prompt=""):
            gen = engine.generate(one, scope)
        [r] = await gen.collect()
        info = {"finish_reason": r.stats.finish_reason, "prompt_tokens": r.stats.prompt_tokens,
                "completion_tokens": r.stats.completion_tokens, "model": model}
        out.append(PromptGenerations(generations=[TextGeneration(text=r.text, generation_info=dumps(info))]))
    return GenerateResponse(generations=out)


async def llm_type(engine: Engine, req: LlmTypeRequest) -> LlmTypeResponse:
    """``RemoteLLM.GetLlmType`` (the API key is accepted and ignored)."""
    return LlmTypeResponse(llm_type=f"csi-web:{engine.resolve_model(None, 'chat').model_id}")


async def generational_guts(engine: Engine, req: GenerationalGutsRequest,
                            scope: Scope | None = None) -> GenerationalGutsResponse:
    """``RemoteLLM.GenerationalGuts``: each prompt token's embeddings and last hidden state, and the
    ``top_k_logits`` most likely next tokens (raw ``logit``, and ``probability`` as an extension)."""
    model = engine.resolve_model(req.model, "chat")
    insides = await engine.insides(model, req.prompt, fft=req.fft_embeddings, keep=req.embedding_trunkation,
                             top_k=req.top_k_logits, scope=scope)
    tokens = [TokenGuts(token=engine.token_text(model.model_id, t), token_id=t, positional_embedding=p,
                        token_embedding=e, hidden_state=h)
              for t, p, e, h in zip(insides.ids, insides.arrays.positional_embedding, insides.arrays.token_embedding,
                                    insides.arrays.hidden_state, strict=True)]
    generations = [NextToken(token=engine.token_text(model.model_id, i), id=i, logit=logit, probability=prob)
                   for i, logit, prob in insides.arrays.top]
    return GenerationalGutsResponse(tokens=tokens, generations=generations)
