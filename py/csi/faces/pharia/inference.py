"""The CSI ``inference`` interface (pharia:skill@0.3.0): completions of raw prompts and
chats through the model's chat template, batches in, results in request order."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal, TypeVar

from pydantic import Field, RootModel

from ...core.engine import Engine
from ...core.generation import ChoiceResult, Generation
from ...core.grammar import Grammar
from ...core.request import ChatMessage, GenerationParams, GenerationRequest, SamplingParams, ToolCall
from ...core.scope import Scope
from ...errors import blame
from ...wire import Reply, Strict
from ..structured import (
    ChatCompletionTool,
    FunctionDefinition,
    FunctionName,
    JsonSchemaSpec,
    NamedToolChoice,
    ResponseFormat,
    engine_tools,
)


class TopLogprobs(Strict):
    top: Annotated[int, Field(ge=0, le=20)]


Logprobs = Literal["no", "sampled"] | TopLogprobs


class CompletionParams(Strict):
    max_tokens: Annotated[int, Field(ge=1)] | None = None
    temperature: Annotated[float, Field(ge=0.0, le=2.0)] | None = None
    top_k: Annotated[int, Field(ge=0)] | None = None
    top_p: Annotated[float, Field(gt=0.0, le=1.0)] | None = None
    stop: list[str] = []
    return_special_tokens: bool = False
    frequency_penalty: Annotated[float, Field(ge=-2.0, le=2.0)] | None = None
    presence_penalty: Annotated[float, Field(ge=-2.0, le=2.0)] | None = None
    logprobs: Logprobs = "no"


class ChatResponseFormat(Strict):
    """pharia:skill@0.4's response formats: text, any JSON object, or a JSON Schema."""

    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchemaSpec | None = None


class Tool(Strict):
    """pharia:skill@0.4's tool: a function with a JSON Schema for its arguments."""

    name: FunctionName
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class NamedTool(Strict):
    name: str


class ChatParams(Strict):
    max_tokens: Annotated[int, Field(ge=1)] | None = None
    temperature: Annotated[float, Field(ge=0.0, le=2.0)] | None = None
    top_p: Annotated[float, Field(gt=0.0, le=1.0)] | None = None
    frequency_penalty: Annotated[float, Field(ge=-2.0, le=2.0)] | None = None
    presence_penalty: Annotated[float, Field(ge=-2.0, le=2.0)] | None = None
    logprobs: Logprobs = "no"
    response_format: ChatResponseFormat | None = None
    tools: list[Tool] | None = None
    tool_choice: Literal["none", "auto", "required"] | NamedTool | None = None
    parallel_tool_calls: bool | None = None


def _grammar(p: CompletionParams | ChatParams) -> Grammar | None:
    if not isinstance(p, ChatParams) or p.response_format is None:
        return None
    shape = ResponseFormat.model_validate(p.response_format.model_dump(exclude_none=True, by_alias=True))
    return shape.to_grammar("params.response_format")


def _generation_params(p: CompletionParams | ChatParams) -> GenerationParams:
    """The CSI's params as the engine's (chat params have no top-k, stops or special tokens)."""
    top = p.logprobs.top if isinstance(p.logprobs, TopLogprobs) else 0
    completion = p if isinstance(p, CompletionParams) else None
    return GenerationParams(
        sampling=SamplingParams(
            temperature=p.temperature,
            top_k=completion.top_k if completion else None,
            top_p=p.top_p,
            frequency_penalty=p.frequency_penalty or 0.0,
            presence_penalty=p.presence_penalty or 0.0,
            logprobs=p.logprobs != "no",
            top_logprobs=top,
            grammar=_grammar(p),
        ),
        max_tokens=p.max_tokens,
        stop=tuple(s for s in completion.stop if s) if completion else (),
        keep_special=completion.return_special_tokens if completion else False,
    )


class CompletionRequest(Strict):
    model: str
    prompt: str
    params: CompletionParams

    def to_generation_request(self) -> GenerationRequest:
        return GenerationRequest(model=self.model, prompt=self.prompt, params=_generation_params(self.params))


class MessageToolCall(Strict):
    id: str
    name: str
    arguments: str
    """The arguments as JSON text."""


class Message(Strict):
    role: str
    content: str | None = None
    tool_calls: list[MessageToolCall] | None = None
    tool_call_id: str | None = None


class ChatRequest(Strict):
    model: str
    messages: Annotated[list[Message], Field(min_length=1)]
    params: ChatParams

    def to_generation_request(self) -> GenerationRequest:
        messages = tuple(ChatMessage(m.role, m.content, tuple(ToolCall(c.id, c.name, c.arguments)
                                                               for c in m.tool_calls or []), m.tool_call_id)
                         for m in self.messages)
        p = self.params
        with blame("params"):
            tools, choice = engine_tools(
                [ChatCompletionTool(type="function", function=FunctionDefinition(**t.model_dump()))
                 for t in p.tools or []],
                None if p.tool_choice is None else p.tool_choice if isinstance(p.tool_choice, str)
                else NamedToolChoice.model_validate({"type": "function", "function": {"name": p.tool_choice.name}}))
        return GenerationRequest(model=self.model, messages=messages, params=_generation_params(p), tools=tools,
                                 tool_choice=choice, parallel_tool_calls=p.parallel_tool_calls is not False)


class CompleteBatch(Strict):
    requests: list[CompletionRequest]


class ChatBatch(Strict):
    requests: list[ChatRequest]


R = TypeVar("R", CompletionRequest, ChatRequest)
T = TypeVar("T")


class Logprob(Reply):
    """A token (its bytes: ``list<u8>``) and its log-probability."""

    token: list[int]
    logprob: float


class Distribution(Reply):
    """The sampled token and, when asked for (``top``), the likeliest ones."""

    sampled: Logprob
    top: list[Logprob]


class TokenUsage(Reply):
    prompt: int
    completion: int


class CsiCompletion(Reply):
    """``inference.complete``'s result of one request."""

    text: str
    finish_reason: str
    """stop, length, or abort (the seed's enum has no word for a cut generation)."""
    logprobs: list[Distribution]
    usage: TokenUsage


class CsiMessage(Reply):
    """The assistant's message; ``tool_calls`` only when it called tools (pharia:skill@0.4)."""

    role: Literal["assistant"] = "assistant"
    content: str | None
    tool_calls: list[MessageToolCall] | None = None


class CsiChatResponse(Reply):
    """``inference.chat``'s result of one request."""

    message: CsiMessage
    finish_reason: str
    """stop, length, abort, or tool_calls."""
    logprobs: list[Distribution]
    usage: TokenUsage


class CsiCompletions(RootModel[list[CsiCompletion]]):
    """A completion per request, in request order."""


class CsiChatResponses(RootModel[list[CsiChatResponse]]):
    """A chat response per request, in request order."""


def _distributions(gen: Generation, r: ChoiceResult, logprobs: Logprobs) -> list[Distribution]:
    def lp(token: int, value: float) -> Logprob:
        return Logprob(token=list(gen.token_bytes(token)), logprob=value)

    return [] if logprobs == "no" else [
        Distribution(sampled=lp(s.token, s.logprob or 0.0),
                     top=[lp(t, v) for t, v in s.top] if isinstance(logprobs, TopLogprobs) else [])
        for s in r.steps]


def _finish(r: ChoiceResult, called: bool) -> str:
    # the seed's enum (stop, length, content-filter) has no word for a cut generation; "abort", as
    # WebLLM and the OpenAI face say it, rather than "stop", which would claim a natural end
    finish: str = str(r.stats.finish_reason)
    return "tool_calls" if called and finish == "stop" else finish


def _usage(r: ChoiceResult) -> TokenUsage:
    return TokenUsage(prompt=r.stats.prompt_tokens, completion=r.stats.completion_tokens)


async def _each(engine: Engine, requests: Sequence[R], scope: Scope | None,
                answer: Callable[[Generation, ChoiceResult, R], T]) -> list[T]:
    """Run the requests one after the other; ``answer`` makes each one's result."""
    out = []
    for i, req in enumerate(requests):
        with blame(f"requests[{i}]"):
            gen = engine.generate(req.to_generation_request(), scope)
            [r] = await gen.collect()
        out.append(answer(gen, r, req))
    return out


async def complete(engine: Engine, batch: CompleteBatch, scope: Scope | None = None) -> CsiCompletions:
    """``inference.complete``: raw prompts (no chat template), results in request order."""
    return CsiCompletions(await _each(engine, batch.requests, scope, lambda gen, r, req: CsiCompletion(
        text=r.text, finish_reason=_finish(r, False), logprobs=_distributions(gen, r, req.params.logprobs),
        usage=_usage(r))))


async def chat(engine: Engine, batch: ChatBatch, scope: Scope | None = None) -> CsiChatResponses:
    """``inference.chat``: messages through the model's chat template, results in request order."""
    return CsiChatResponses(await _each(engine, batch.requests, scope, _chat_response))


def _chat_response(gen: Generation, r: ChoiceResult, req: ChatRequest) -> CsiChatResponse:
    """The assistant's message; with tool calls (pharia:skill@0.4) their id, name and arguments."""
    content, calls = gen.reply(r)
    if not req.params.tools:  # a server's calls the request offered no tools for: not the skill's to run
        calls = []
    message = CsiMessage(content=content) if not calls else CsiMessage(content=content, tool_calls=[
        MessageToolCall(id=cid, name=name, arguments=args) for cid, name, args in calls])
    return CsiChatResponse(message=message, finish_reason=_finish(r, bool(calls)),
                           logprobs=_distributions(gen, r, req.params.logprobs), usage=_usage(r))
