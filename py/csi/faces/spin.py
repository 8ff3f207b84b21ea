"""Spin's ``llm`` interface (its WIT world) with the stop / optional max-tokens / finish-reason
proposal: ``infer`` and ``generate-embeddings``."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from ..core.decode import FinishReason
from ..core.engine import Engine
from ..core.request import GenerationParams, GenerationRequest, SamplingParams
from ..core.sampling_defaults import SamplingDefaults
from ..core.scope import Scope
from ..wire import RepetitionPenalty, Reply, Strict

SPIN_DEFAULTS = SamplingDefaults(temperature=0.8, top_k=40, top_p=0.9, repetition_penalty=1.1)


class InferencingParams(Strict):
    """Spin's params. Absent sampling fields take the model's defaults where it declares them,
    else Spin's (temperature 0.8, top-k 40, top-p 0.9, repeat penalty 1.1)."""

    max_tokens: Annotated[int, Field(ge=1)] | None = 100
    repeat_penalty: RepetitionPenalty | None = None
    repeat_penalty_last_n_token_count: Annotated[int, Field(ge=0)] = 64
    temperature: Annotated[float, Field(ge=0.0, le=2.0)] | None = None
    top_k: Annotated[int, Field(ge=0)] | None = None
    top_p: Annotated[float, Field(gt=0.0, le=1.0)] | None = None
    stop: list[str] = []


class InferRequest(Strict):
    model: str
    prompt: str
    params: InferencingParams | None = None

    def to_generation_request(self) -> GenerationRequest:
        p = self.params or InferencingParams()
        return GenerationRequest(model=self.model, prompt=self.prompt, params=GenerationParams(
            sampling=SamplingParams(temperature=p.temperature, top_k=p.top_k, top_p=p.top_p,
                                    repetition_penalty=p.repeat_penalty,
                                    repetition_window=p.repeat_penalty_last_n_token_count),
            face_defaults=SPIN_DEFAULTS, max_tokens=p.max_tokens, stop=tuple(s for s in p.stop if s)))


class EmbeddingsRequest(Strict):
    model: str
    text: list[str]


class InferencingUsage(Reply):
    prompt_token_count: int
    generated_token_count: int


class InferencingResult(Reply):
    text: str
    finish_reason: FinishReason
    """stop, length, or abort (the seed's enum has no word for a cut generation)."""
    usage: InferencingUsage


class EmbeddingsUsage(Reply):
    prompt_token_count: int


class EmbeddingsResult(Reply):
    embeddings: list[list[float]]
    usage: EmbeddingsUsage


async def infer(engine: Engine, req: InferRequest, scope: Scope | None = None) -> InferencingResult:
    """``llm.infer``: the raw prompt, Spin's defaults when ``params`` is absent."""
    [r] = await engine.generate(req.to_generation_request(), scope).collect()
    return InferencingResult(text=r.text, finish_reason=r.finish_reason, usage=InferencingUsage(
        prompt_token_count=r.stats.prompt_tokens, generated_token_count=r.stats.completion_tokens))


async def generate_embeddings(engine: Engine, req: EmbeddingsRequest,
                              scope: Scope | None = None) -> EmbeddingsResult:
    """``llm.generate-embeddings``."""
    model = engine.resolve_model(req.model, "embedding")
    if not req.text:
        return EmbeddingsResult(embeddings=[], usage=EmbeddingsUsage(prompt_token_count=0))
    result = await engine.embed(model, req.text, scope)
    return EmbeddingsResult(embeddings=result.vectors, usage=EmbeddingsUsage(prompt_token_count=result.prompt_tokens))
