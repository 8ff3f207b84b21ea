"""Three more faces on the same engine: the CSI inference interface (seed 001), Spin's ``llm``
with the stop / optional max-tokens / finish-reason proposal (seeds 000 + 002), and RemoteLLM
(seed 003). Field names are the seeds' in snake_case; variants as strings or one-key objects."""

from __future__ import annotations

from json import dumps
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .backend import ModelInfo, SamplingParams
from .engine import ChoiceResult
from .generation import GenerationParams
from .validation import parse_request

if TYPE_CHECKING:
    from .engine import Engine


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


# ---- CSI inference (pharia:skill@0.3.0) --------------------------------------------------------

class TopLogprobs(_Strict):
    top: Annotated[int, Field(ge=0, le=20)]


Logprobs = Literal["no", "sampled"] | TopLogprobs


class CompletionParams(_Strict):
    max_tokens: Annotated[int, Field(ge=1)] | None = None
    temperature: Annotated[float, Field(ge=0.0, le=2.0)] | None = None
    top_k: Annotated[int, Field(ge=0)] | None = None
    top_p: Annotated[float, Field(gt=0.0, le=1.0)] | None = None
    stop: list[str] = []
    return_special_tokens: bool = False
    frequency_penalty: Annotated[float, Field(ge=-2.0, le=2.0)] | None = None
    presence_penalty: Annotated[float, Field(ge=-2.0, le=2.0)] | None = None
    logprobs: Logprobs = "no"


class ChatParams(_Strict):
    max_tokens: Annotated[int, Field(ge=1)] | None = None
    temperature: Annotated[float, Field(ge=0.0, le=2.0)] | None = None
    top_p: Annotated[float, Field(gt=0.0, le=1.0)] | None = None
    frequency_penalty: Annotated[float, Field(ge=-2.0, le=2.0)] | None = None
    presence_penalty: Annotated[float, Field(ge=-2.0, le=2.0)] | None = None
    logprobs: Logprobs = "no"


class CompletionRequest(_Strict):
    model: str
    prompt: str
    params: CompletionParams


class Message(_Strict):
    role: str
    content: str


class ChatRequest(_Strict):
    model: str
    messages: Annotated[list[Message], Field(min_length=1)]
    params: ChatParams


class CompleteBatch(_Strict):
    requests: list[CompletionRequest]


class ChatBatch(_Strict):
    requests: list[ChatRequest]


def _csi_params(p: CompletionParams | ChatParams) -> GenerationParams:
    top = p.logprobs.top if isinstance(p.logprobs, TopLogprobs) else 0
    return GenerationParams(
        sampling=SamplingParams(
            temperature=1.0 if p.temperature is None else p.temperature,
            top_k=getattr(p, "top_k", None) or 0,
            top_p=1.0 if p.top_p is None else p.top_p,
            frequency_penalty=p.frequency_penalty or 0.0,
            presence_penalty=p.presence_penalty or 0.0,
            logprobs=p.logprobs != "no",
            top_logprobs=top,
        ),
        max_tokens=p.max_tokens,
        stop=tuple(s for s in getattr(p, "stop", []) if s),
        keep_special=getattr(p, "return_special_tokens", False),
    )


def _csi_result(engine: Engine, model: ModelInfo, r: ChoiceResult, logprobs: Logprobs) -> dict[str, Any]:
    def lp(token: int, value: float) -> dict[str, Any]:
        return {"token": list(engine.token_bytes(model.model_id, token)), "logprob": value}

    distributions = [] if logprobs == "no" else [
        {"sampled": lp(s.token, s.logprob or 0.0),
         "top": [lp(t, v) for t, v in s.top] if isinstance(logprobs, TopLogprobs) else []}
        for s in r.steps]
    return {
        "finish_reason": "stop" if r.stats.finish_reason == "abort" else r.stats.finish_reason,
        "logprobs": distributions,
        "usage": {"prompt": r.stats.prompt_tokens, "completion": r.stats.completion_tokens},
    }


async def csi_complete(engine: Engine, requests: Any) -> list[dict[str, Any]]:
    """``inference.complete``: raw prompts (no chat template), results in request order."""
    batch = parse_request(CompleteBatch, {"requests": requests})
    out = []
    for i, req in enumerate(batch.requests):
        model = engine.resolve_model(req.model, "chat")
        ids = engine.backend.encode(model.model_id, req.prompt, add_special_tokens=True)
        engine.check_prompt(model, ids, f"requests[{i}].prompt")
        [r] = await engine.complete(model, ids, _csi_params(req.params))
        out.append({"text": r.text, **_csi_result(engine, model, r, req.params.logprobs)})
    return out


async def csi_chat(engine: Engine, requests: Any) -> list[dict[str, Any]]:
    """``inference.chat``: messages through the model's chat template, results in request order."""
    batch = parse_request(ChatBatch, {"requests": requests})
    out = []
    for i, req in enumerate(batch.requests):
        model = engine.resolve_model(req.model, "chat")
        ids = engine.backend.apply_chat_template(model.model_id, [m.model_dump() for m in req.messages])
        engine.check_prompt(model, ids, f"requests[{i}].messages")
        [r] = await engine.complete(model, ids, _csi_params(req.params))
        out.append({"message": {"role": "assistant", "content": r.text},
                    **_csi_result(engine, model, r, req.params.logprobs)})
    return out


# ---- Spin llm (seeds 000 + 002) ----------------------------------------------------------------

class InferencingParams(_Strict):
    """Spin's params; absent fields take Spin's defaults."""

    max_tokens: Annotated[int, Field(ge=1)] | None = 100
    repeat_penalty: Annotated[float, Field(gt=0.0)] = 1.1
    repeat_penalty_last_n_token_count: Annotated[int, Field(ge=0)] = 64
    temperature: Annotated[float, Field(ge=0.0, le=2.0)] = 0.8
    top_k: Annotated[int, Field(ge=0)] = 40
    top_p: Annotated[float, Field(gt=0.0, le=1.0)] = 0.9
    stop: list[str] = []


class InferRequest(_Strict):
    model: str
    prompt: str
    params: InferencingParams | None = None


class EmbeddingsRequest(_Strict):
    model: str
    text: list[str]


async def llm_infer(engine: Engine, request: Any) -> dict[str, Any]:
    """``llm.infer``: the raw prompt, Spin's defaults when ``params`` is absent."""
    req = parse_request(InferRequest, request)
    p = req.params or InferencingParams()
    model = engine.resolve_model(req.model, "chat")
    ids = engine.backend.encode(model.model_id, req.prompt, add_special_tokens=True)
    engine.check_prompt(model, ids, "prompt")
    params = GenerationParams(
        sampling=SamplingParams(temperature=p.temperature, top_k=p.top_k, top_p=p.top_p,
                                repetition_penalty=p.repeat_penalty,
                                repetition_window=p.repeat_penalty_last_n_token_count),
        max_tokens=p.max_tokens, stop=tuple(s for s in p.stop if s))
    [r] = await engine.complete(model, ids, params)
    return {
        "text": r.text,
        "finish_reason": "stop" if r.stats.finish_reason == "abort" else r.stats.finish_reason,
        "usage": {"prompt_token_count": r.stats.prompt_tokens, "generated_token_count": r.stats.completion_tokens},
    }


async def llm_generate_embeddings(engine: Engine, request: Any) -> dict[str, Any]:
    """``llm.generate-embeddings``."""
    req = parse_request(EmbeddingsRequest, request)
    model = engine.resolve_model(req.model, "embedding")
    if not req.text:
        return {"embeddings": [], "usage": {"prompt_token_count": 0}}
    result = await engine.embed(model, req.text)
    return {"embeddings": result.vectors, "usage": {"prompt_token_count": result.prompt_tokens}}


# ---- RemoteLLM (seed 003) ----------------------------------------------------------------------

class GenerateRequest(_Strict):
    api_key: str = ""
    prompts: list[str] = []
    stop: list[str] = []


class LlmTypeRequest(_Strict):
    api_key: str = ""


def _remote_model(engine: Engine) -> ModelInfo:
    return engine.resolve_model(None, "chat")


async def remote_generate(engine: Engine, request: Any) -> dict[str, Any]:
    """``RemoteLLM.Generate``: one greedy generation per prompt (proto3 JSON field names).

    The API key is accepted and ignored: the model runs in this browser.
    """
    req = parse_request(GenerateRequest, request)
    model = _remote_model(engine)
    out = []
    for i, prompt in enumerate(req.prompts):
        ids = engine.backend.encode(model.model_id, prompt, add_special_tokens=True)
        engine.check_prompt(model, ids, f"prompts[{i}]")
        params = GenerationParams(sampling=SamplingParams(temperature=0.0), stop=tuple(s for s in req.stop if s))
        [r] = await engine.complete(model, ids, params)
        info = {"finish_reason": r.stats.finish_reason, "prompt_tokens": r.stats.prompt_tokens,
                "completion_tokens": r.stats.completion_tokens, "model": model.model_id}
        out.append({"generations": [{"text": r.text, "generation_info": dumps(info)}]})
    return {"generations": out}


async def remote_llm_type(engine: Engine, request: Any) -> dict[str, Any]:
    """``RemoteLLM.GetLlmType``."""
    parse_request(LlmTypeRequest, request)
    return {"llm_type": f"csi-web:{_remote_model(engine).model_id}"}

