"""The RemoteLLM gRPC service (seed 003), proto3 JSON field names: ``Generate`` and ``GetLlmType``."""

from __future__ import annotations

from json import dumps
from typing import Any

from ..core.engine import Engine
from ..core.request import GenerationParams, GenerationRequest, SamplingParams
from ..errors import blame
from ..wire import Strict, parse_request


class GenerateRequest(Strict):
    api_key: str = ""
    prompts: list[str] = []
    stop: list[str] = []

    def to_generation_requests(self, model: str) -> list[GenerationRequest]:
        """One greedy generation per prompt."""
        params = GenerationParams(sampling=SamplingParams(temperature=0.0), stop=tuple(s for s in self.stop if s))
        return [GenerationRequest(model=model, prompt=p, params=params) for p in self.prompts]


class LlmTypeRequest(Strict):
    api_key: str = ""


async def generate(engine: Engine, request: Any) -> dict[str, Any]:
    """``RemoteLLM.Generate``: one greedy generation per prompt, on the one chat model loaded.

    The API key is accepted and ignored: the model runs in this browser.
    """
    req = parse_request(GenerateRequest, request)
    model = engine.resolve_model(None, "chat").model_id
    out = []
    for i, one in enumerate(req.to_generation_requests(model)):
        with blame(f"prompts[{i}]", prompt=""):
            gen = engine.generate(one)
        [r] = await gen.collect()
        info = {"finish_reason": r.stats.finish_reason, "prompt_tokens": r.stats.prompt_tokens,
                "completion_tokens": r.stats.completion_tokens, "model": model}
        out.append({"generations": [{"text": r.text, "generation_info": dumps(info)}]})
    return {"generations": out}


async def llm_type(engine: Engine, request: Any) -> dict[str, Any]:
    """``RemoteLLM.GetLlmType``."""
    parse_request(LlmTypeRequest, request)
    return {"llm_type": f"csi-web:{engine.resolve_model(None, 'chat').model_id}"}
