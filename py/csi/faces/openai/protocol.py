"""Pydantic models of the OpenAI / WebLLM chat completion and embeddings shapes."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, cast

from pydantic import Field, model_validator

from ...core.request import GenerationParams, GenerationRequest, SamplingParams
from ...errors import InvalidInputError
from ...wire import MAX_BATCH, RepetitionPenalty, Strict
from ..structured import (
    ChatCompletionTool,
    FunctionDefinition,
    NamedFunction,
    NamedToolChoice,
    ResponseFormat,
    ToolChoiceOption,
    engine_tools,
)
from .messages import Message, TextContentPart, chat_message, check_messages

# ---- request ---------------------------------------------------------------------------------


def stop_list(stop: str | list[str] | None) -> list[str]:
    """OpenAI's ``stop`` (a string, a list, or nothing) as a list of non-empty strings."""
    if stop is None:
        return []
    return [stop] if isinstance(stop, str) else [s for s in stop if s]


class StreamOptions(Strict):
    include_usage: bool | None = None
    include_obfuscation: bool | None = None
    """A no-op: nothing crosses a network, so there is nothing to pad."""


class Prediction(Strict):
    """OpenAI's predicted output: a speed hint, accepted and not used."""

    type: Literal["content"]
    content: str | list[TextContentPart]


class ExtraBody(Strict):
    """WebLLM's extensions to the OpenAI request."""

    enable_thinking: bool | None = None
    """``false``: the reply starts after an empty ``<think></think>`` (models whose chat template has
    an ``enable_thinking`` switch, such as Qwen3); ``true`` or unset: the template's default."""
    enable_latency_breakdown: bool | None = None
    """Not yet measured: ``true`` is refused."""
    speculative: bool | None = None
    """csi-web's: ``false`` decodes one token per forward pass, without drafts from the context
    (speculative decoding never changes the output; this is for measuring it)."""
    draft_model: Annotated[str, Field(min_length=1, max_length=256)] | None = None
    """csi-web's: a loaded chat model with the same vocabulary (a smaller one of the family) drafts
    the tokens, in place of the context; the output is the same."""


Metadata = Annotated[dict[Annotated[str, Field(max_length=64)], Annotated[str, Field(max_length=512)]],
                     Field(max_length=16)]
ServiceTier = Literal["auto", "default", "flex", "scale", "priority"]


class _OpenAINoOps(Strict):
    """Fields today's OpenAI API defines that have no meaning for a model in the browser: checked for
    their shape, then not used."""

    store: bool | None = None
    metadata: Metadata | None = None
    service_tier: ServiceTier | None = None
    user: str | None = None
    safety_identifier: str | None = None
    prompt_cache_key: str | None = None


class ChatCompletionRequest(_OpenAINoOps):
    """OpenAI chat completion request, as WebLLM's ``ChatCompletionRequestBase``: every field today's
    OpenAI API defines is accepted (README: the field table), WebLLM's ``extra_body`` too."""

    messages: Annotated[list[Message], Field(min_length=1)]
    model: str | None = None
    stream: bool | None = None
    stream_options: StreamOptions | None = None
    n: Annotated[int, Field(ge=1, le=128)] | None = None
    frequency_penalty: Annotated[float, Field(ge=-2.0, le=2.0)] | None = None
    presence_penalty: Annotated[float, Field(ge=-2.0, le=2.0)] | None = None
    repetition_penalty: RepetitionPenalty | None = None
    max_tokens: Annotated[int, Field(ge=1)] | None = None
    max_completion_tokens: Annotated[int, Field(ge=1)] | None = None
    """OpenAI's newer name for ``max_tokens``."""
    stop: str | list[str] | None = None
    temperature: Annotated[float, Field(ge=0.0, le=2.0)] | None = None
    top_p: Annotated[float, Field(gt=0.0, le=1.0)] | None = None
    top_k: Annotated[int, Field(ge=0)] | None = None
    logit_bias: dict[str, Annotated[float, Field(ge=-100.0, le=100.0)]] | None = None
    logprobs: bool | None = None
    top_logprobs: Annotated[int, Field(ge=0, le=20)] | None = None
    seed: int | None = None
    ignore_eos: bool | None = None
    tools: list[ChatCompletionTool] | None = None
    tool_choice: ToolChoiceOption | None = None
    parallel_tool_calls: bool | None = None
    response_format: ResponseFormat | None = None
    prediction: Prediction | None = None
    modalities: list[Literal["text", "audio"]] | None = None
    audio: dict[str, Any] | None = None
    reasoning_effort: Literal["none", "minimal", "low", "medium", "high", "xhigh"] | None = None
    verbosity: Literal["low", "medium", "high"] | None = None
    web_search_options: dict[str, Any] | None = None
    functions: Annotated[list[FunctionDefinition], Field(min_length=1)] | None = None
    """Deprecated by OpenAI for ``tools``: taken as tools, and the reply carries ``function_call``."""
    function_call: Literal["none", "auto"] | NamedFunction | None = None
    """Deprecated by OpenAI for ``tool_choice`` (with ``functions``)."""
    extra_body: ExtraBody | None = None
    return_token_ids: bool | None = None
    """Extension (as vLLM's): also return prompt and completion token ids."""

    @model_validator(mode="after")
    def _rules(self) -> ChatCompletionRequest:
        """WebLLM's rules beyond the field types, and what cannot be honored here (after the
        fields validate; an ``InvalidInputError`` passes through pydantic unchanged)."""
        _check_common(self)
        if None not in (self.max_tokens, self.max_completion_tokens) and self.max_tokens != self.max_completion_tokens:
            raise InvalidInputError("`max_completion_tokens` and `max_tokens` disagree; give one",
                                    "max_completion_tokens")
        if self.top_logprobs is not None and not self.logprobs:
            raise InvalidInputError("`top_logprobs` needs `logprobs: true`", "top_logprobs")
        check_messages(list(self.messages))
        if self.messages[-1].role not in ("user", "tool", "function"):
            raise InvalidInputError("the last message must be from the user or a tool", "messages")
        if self.modalities and "audio" in self.modalities:
            raise InvalidInputError("csi-web's models reply in text only", "modalities")
        for name in ("audio", "web_search_options"):
            if getattr(self, name) is not None:
                raise InvalidInputError(_CANNOT[name], name)
        _legacy_functions(self)
        if self.reasoning_effort not in (None, "none"):
            raise InvalidInputError("the model does not reason, so its effort cannot be set (only \"none\")",
                                    "reasoning_effort")
        if self.reasoning_effort == "none" and self.extra_body and self.extra_body.enable_thinking:
            raise InvalidInputError("`reasoning_effort: \"none\"` turns thinking off; `enable_thinking` asks for it",
                                    "extra_body.enable_thinking")
        if self.verbosity not in (None, "medium"):
            raise InvalidInputError("csi-web's models cannot be asked for a verbosity (only \"medium\")", "verbosity")
        return self

    def to_generation_request(self) -> GenerationRequest:
        """Chat defaults to the rest of the window for ``max_tokens``."""
        tools, choice = engine_tools(self.tools, self.tool_choice)
        return GenerationRequest(
            model=self.model, messages=tuple(chat_message(m) for m in self.messages),
            params=_generation_params(self, self.top_logprobs or 0, self.max_completion_tokens or self.max_tokens),
            n=self.n or 1, tools=tools, tool_choice=choice,
            parallel_tool_calls=self.parallel_tool_calls is not False, template_vars=self._template_vars(),
            openai=self)

    def _template_vars(self) -> tuple[tuple[str, Any], ...]:
        thinking = self.extra_body.enable_thinking if self.extra_body else None
        if self.reasoning_effort == "none":
            thinking = False
        return () if thinking is None else (("enable_thinking", thinking),)


_CANNOT = {
    "audio": "csi-web's models do not speak: `audio` output cannot be honored",
    "web_search_options": "a model in the browser cannot search the web",
}


def _legacy_functions(req: ChatCompletionRequest) -> None:
    """OpenAI's deprecated ``functions`` / ``function_call`` as ``tools`` / ``tool_choice`` (one call
    per reply, as they had)."""
    if req.function_call is not None and req.functions is None:
        raise InvalidInputError("`function_call` names how to use `functions`: give `functions` too", "function_call")
    if req.functions is None:
        return
    if req.tools is not None or req.tool_choice is not None:
        raise InvalidInputError("give `functions` (deprecated) or `tools`, not both", "functions")
    req.tools = [ChatCompletionTool(type="function", function=f) for f in req.functions]
    fc = req.function_call
    req.tool_choice = NamedToolChoice(type="function", function=fc) if isinstance(fc, NamedFunction) else fc
    req.parallel_tool_calls = False


class CompletionRequest(_OpenAINoOps):
    """OpenAI (legacy) text completion request, as WebLLM's ``CompletionCreateParamsBase``."""

    prompt: str | Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=1)] | list[str] | list[list[int]]
    """A string or token ids; OpenAI's list of prompts is taken when it holds one (use ``n`` for more)."""
    model: str | None = None
    stream: bool | None = None
    stream_options: StreamOptions | None = None
    n: Annotated[int, Field(ge=1, le=128)] | None = None
    echo: bool | None = None
    frequency_penalty: Annotated[float, Field(ge=-2.0, le=2.0)] | None = None
    presence_penalty: Annotated[float, Field(ge=-2.0, le=2.0)] | None = None
    repetition_penalty: RepetitionPenalty | None = None
    max_tokens: Annotated[int, Field(ge=1)] | None = None
    stop: str | list[str] | None = None
    temperature: Annotated[float, Field(ge=0.0, le=2.0)] | None = None
    top_p: Annotated[float, Field(gt=0.0, le=1.0)] | None = None
    top_k: Annotated[int, Field(ge=0)] | None = None
    logit_bias: dict[str, Annotated[float, Field(ge=-100.0, le=100.0)]] | None = None
    logprobs: bool | Annotated[int, Field(ge=0, le=20)] | None = None
    """OpenAI's: the number of alternatives per token (legacy logprobs); WebLLM's: ``true`` (chat-shaped
    logprobs, alternatives from ``top_logprobs``)."""
    top_logprobs: Annotated[int, Field(ge=0, le=20)] | None = None
    seed: int | None = None
    ignore_eos: bool | None = None
    suffix: str | None = None
    best_of: Annotated[int, Field(ge=1)] | None = None
    extra_body: ExtraBody | None = None
    return_token_ids: bool | None = None
    response_format: ResponseFormat | None = None
    """Extension: constrain the completion as chat's ``response_format`` does."""

    @model_validator(mode="after")
    def _rules(self) -> CompletionRequest:
        """The rules beyond the field types; one prompt per request."""
        _check_common(self)
        if isinstance(self.prompt, list) and self.prompt and isinstance(self.prompt[0], str | list):
            if len(self.prompt) != 1:
                raise InvalidInputError(f"{len(self.prompt)} prompts in one request: csi-web completes one "
                                        "prompt per request (send several requests)", "prompt")
            self.prompt = self.prompt[0]
            if self.prompt == []:
                raise InvalidInputError("the prompt is empty", "prompt")
        if self.suffix:
            raise InvalidInputError("csi-web's models cannot fill in the middle: `suffix` cannot be honored", "suffix")
        if self.best_of is not None and self.best_of != (self.n or 1):
            raise InvalidInputError("`best_of` cannot be honored: generate `n` completions and rank them yourself",
                                    "best_of")
        if self.top_logprobs is not None and self.logprobs is not True:
            raise InvalidInputError("`top_logprobs` needs `logprobs: true`", "top_logprobs")
        if self.extra_body and self.extra_body.enable_thinking is not None:
            raise InvalidInputError("`enable_thinking` is a chat template switch; completions have no template",
                                    "extra_body.enable_thinking")
        return self

    @property
    def chat_logprobs(self) -> bool:
        """WebLLM's ``logprobs: true``: logprobs shaped as chat's."""
        return self.logprobs is True

    def to_generation_request(self) -> GenerationRequest:
        """OpenAI's legacy completions default to 16 tokens."""
        top = (self.top_logprobs or 0) if self.chat_logprobs else int(self.logprobs or 0)
        tokens = isinstance(self.prompt, list)
        return GenerationRequest(model=self.model, prompt=None if tokens else cast(str, self.prompt),
                                 prompt_ids=tuple(cast(list[int], self.prompt)) if tokens else None,
                                 params=_generation_params(self, top, self.max_tokens or 16),
                                 n=self.n or 1, openai=self)


def _check_common(req: ChatCompletionRequest | CompletionRequest) -> None:
    """Rules shared by chat and text completions, beyond the field types."""
    if req.stream_options is not None and not req.stream:
        raise InvalidInputError("`stream_options` is only allowed when `stream` is true", "stream_options")
    for key in req.logit_bias or {}:
        if not re.fullmatch(r"-?[0-9]{1,10}", key):
            raise InvalidInputError(f"`logit_bias` keys are token ids; got {key!r}", "logit_bias")


def _generation_params(req: ChatCompletionRequest | CompletionRequest, top_logprobs: int,
                       max_tokens: int | None) -> GenerationParams:
    return GenerationParams(
        sampling=SamplingParams(
            temperature=req.temperature,
            top_k=req.top_k,
            top_p=req.top_p,
            seed=req.seed,
            repetition_penalty=req.repetition_penalty,
            frequency_penalty=req.frequency_penalty or 0.0,
            presence_penalty=req.presence_penalty or 0.0,
            logit_bias=tuple((int(k), float(v)) for k, v in (req.logit_bias or {}).items()),
            logprobs=req.logprobs is not None and req.logprobs is not False,  # 0 alternatives: still logprobs
            top_logprobs=top_logprobs,
            grammar=req.response_format.to_grammar() if req.response_format else None,
        ),
        max_tokens=max_tokens,
        stop=tuple(stop_list(req.stop)),
        ignore_eos=bool(req.ignore_eos),
        latency_breakdown=bool(req.extra_body and req.extra_body.enable_latency_breakdown),
        speculative=not (req.extra_body and req.extra_body.speculative is False),
        draft_model=req.extra_body.draft_model if req.extra_body else None,
    )


class EmbeddingRequest(Strict):
    """OpenAI embeddings request: one string or a list of strings."""

    input: (str | Annotated[list[str], Field(min_length=1, max_length=MAX_BATCH)]
            | Annotated[list[int], Field(min_length=1)]
            | Annotated[list[list[int]], Field(min_length=1, max_length=MAX_BATCH)])
    """Text, or token ids (one list, or one per input), embedded as they are: no special tokens added."""
    model: str | None = None
    encoding_format: Literal["float", "base64"] | None = None
    """``base64``: each embedding as the base64 of its little-endian float32 values."""
    dimensions: Annotated[int, Field(ge=1)] | None = None
    """Honored when it is the model's own width; no built-in model was trained to be cut shorter."""
    user: str | None = None

    @property
    def texts(self) -> list[str] | list[list[int]]:
        """The inputs: texts, or token id lists."""
        if isinstance(self.input, str):
            return [self.input]
        if isinstance(self.input[0], int):
            return [self.input]
        return cast(list[str] | list[list[int]], list(self.input))
