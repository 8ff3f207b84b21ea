"""The OpenAI / WebLLM face: chat completions, (legacy) completions and embeddings.

Each request model translates itself into the engine's ``GenerationRequest``; the engine's one
stream of ``ChoiceEvent``s is rendered as chunks, or collected once into the whole response.
"""

from __future__ import annotations

import base64
import secrets
import sys
import time
from array import array
from collections.abc import AsyncIterator, Mapping

from ...core.decode import CallPiece, GenerationStats, TextDelta
from ...core.engine import Engine
from ...core.generation import ChoiceEvent, ChoiceResult, Generation
from ...core.scope import Scope
from ...core.tools import ArgumentsPiece, CallStart, TextPiece, ToolEvent
from ...errors import InvalidInputError
from .protocol import ChatCompletionRequest, CompletionRequest, EmbeddingRequest
from .responses import (
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionMessage,
    ChatFinishReason,
    Choice,
    ChoiceLogprobs,
    ChunkChoice,
    Completion,
    CompletionChoice,
    CompletionLogprobs,
    CompletionUsage,
    CreateEmbeddingResponse,
    Delta,
    EmbeddingData,
    EmbeddingUsage,
    FunctionCall,
    FunctionCallDelta,
    PromptTokensDetails,
    TokenLogprob,
    ToolCallDelta,
    ToolCallOut,
    TopLogprob,
    UsageExtra,
)

# ---- shared by chat and text completions --------------------------------------------------------


def usage(stats: list[GenerationStats], served: Mapping[str, str]) -> CompletionUsage:
    """Usage of all choices: the prompt once, completions summed, timings of the first choice, and
    who served them (``served_by``, ``server``: a model on a server)."""
    first = stats[0]
    completion = sum(s.completion_tokens for s in stats)
    return CompletionUsage(
        prompt_tokens=first.prompt_tokens,
        completion_tokens=completion,
        total_tokens=first.prompt_tokens + completion,
        prompt_tokens_details=PromptTokensDetails(cached_tokens=first.cached_tokens),
        extra=UsageExtra.model_validate({**first.timings(), **served}),
    )


class _Finished:
    """The stats of the choices that have ended, for usage once all have."""

    def __init__(self, served: Mapping[str, str]) -> None:
        self.stats: dict[int, GenerationStats] = {}
        self.served = served

    def add(self, event: ChoiceEvent) -> None:
        self.stats[event.index] = event.stats

    def usage(self) -> CompletionUsage:
        return usage([self.stats[i] for i in sorted(self.stats)], self.served)


# ---- chat completions ------------------------------------------------------------------------------


def token_logprobs(gen: Generation, delta: TextDelta) -> list[TokenLogprob]:
    """The log-probabilities of a delta's tokens, in chat's shape (each with its top alternatives)."""
    def entry(token: int) -> tuple[str, list[int]]:
        return gen.token_text(token), list(gen.token_bytes(token))

    # built from the engine's own data on the per-token path: no validation needed
    out = []
    for step in delta.steps:
        text, raw = entry(step.token)
        top = [TopLogprob.model_construct(token=t, logprob=lp, bytes=b) for t, b, lp in
               ((*entry(tid), lp) for tid, lp in step.top)]
        out.append(TokenLogprob.model_construct(token=text, logprob=step.logprob or 0.0, bytes=raw, top_logprobs=top))
    return out


def _delta(events: list[ToolEvent]) -> Delta:
    """One chunk's delta from what the tool-call parser let through."""
    text = "".join(e.text for e in events if isinstance(e, TextPiece))
    calls: list[ToolCallDelta] = []
    for e in events:
        if isinstance(e, CallStart):
            calls.append(ToolCallDelta(index=e.index, id=e.id, type="function",
                                       function=FunctionCallDelta(name=e.name, arguments="")))
        elif isinstance(e, ArgumentsPiece):
            if calls and calls[-1].index == e.index:
                calls[-1].function.arguments = (calls[-1].function.arguments or "") + e.text
            else:
                calls.append(ToolCallDelta(index=e.index, function=FunctionCallDelta(arguments=e.text)))
    return Delta(content=text or None, tool_calls=calls or None)


def _call_deltas(pieces: tuple[CallPiece, ...]) -> list[ToolCallDelta]:
    """Tool-call pieces a server parsed, as OpenAI streams them."""
    return [ToolCallDelta(index=p.index, id=p.id, type="function" if p.id else None,
                          function=FunctionCallDelta(name=p.name, arguments=p.arguments)) for p in pieces]


def _finish(stats: GenerationStats, called: bool, legacy: bool = False) -> ChatFinishReason:
    """``tool_calls`` (``function_call`` for the deprecated ``functions``) for a reply that ended by
    itself after calling tools."""
    assert stats.finish_reason is not None
    if called and stats.finish_reason == "stop":
        return "function_call" if legacy else "tool_calls"
    return stats.finish_reason


def _legacy_delta(delta: Delta) -> Delta:
    """A delta with its (single) tool call as the deprecated ``function_call``."""
    if not delta.tool_calls:
        return delta
    f = delta.tool_calls[0].function
    return Delta(role=delta.role, content=delta.content, function_call=FunctionCallDelta(name=f.name,
                                                                                          arguments=f.arguments))




async def chat_completion_stream(
    engine: Engine, req: ChatCompletionRequest, scope: Scope | None = None
) -> AsyncIterator[ChatCompletionChunk]:
    """Stream a chat completion as OpenAI does: chunks of text per choice (``index``), ``role`` in
    each choice's first chunk only, a chunk with each choice's ``finish_reason``, ``usage`` null on
    all of them, and with ``stream_options.include_usage`` a last chunk with usage and no choices."""
    include_usage = bool(req.stream_options and req.stream_options.include_usage)
    gen = engine.generate(req.to_generation_request(), scope)
    chunk_id = "chatcmpl-" + secrets.token_hex(12)
    created = int(time.time())
    with_ids = bool(req.return_token_ids)
    with_logprobs = gen.params.sampling.logprobs
    finished = _Finished(gen.served)

    def chunk(choices: list[ChunkChoice], use: CompletionUsage | None = None) -> ChatCompletionChunk:
        return ChatCompletionChunk(id=chunk_id, created=created, model=gen.model.model_id, choices=choices, usage=use)

    parsers = {i: gen.tool_parser() for i in range(gen.n)}
    called: set[int] = set()  # choices with tool calls a server parsed
    begun: set[int] = set()  # choices whose first chunk (the one with ``role``) was sent
    legacy = req.functions is not None

    def said(index: int, delta: Delta) -> Delta:
        if index not in begun:
            begun.add(index)
            delta.role = "assistant"
        return delta

    async for event in gen:
        parser = parsers[event.index]
        if event.delta is not None:
            d = event.delta
            if d.calls:
                called.add(event.index)
                delta = Delta(content=d.text or None, tool_calls=_call_deltas(d.calls))
            else:
                delta = Delta(content=d.text) if parser is None else _delta(list(parser.push(d.text)))
            if legacy:
                delta = _legacy_delta(delta)
            if delta.content is None and delta.tool_calls is None and delta.function_call is None \
                    and not (with_logprobs or with_ids):
                continue  # held back until it is clear whether a tool call begins
            logprobs = ChoiceLogprobs(content=token_logprobs(gen, d)) if with_logprobs else None
            yield chunk([ChunkChoice(index=event.index, delta=said(event.index, delta),
                                     logprobs=logprobs, token_ids=d.token_ids if with_ids else None)])
            continue
        if parser is not None:
            rest = _delta(list(parser.flush()))
            if legacy:
                rest = _legacy_delta(rest)
            if rest.content is not None or rest.tool_calls is not None or rest.function_call is not None:
                yield chunk([ChunkChoice(index=event.index, delta=said(event.index, rest))])
        finished.add(event)
        finish = _finish(event.stats, bool(parser and parser.calls) or event.index in called, legacy)
        done = chunk([ChunkChoice(index=event.index, delta=said(event.index, Delta()), finish_reason=finish,
                                  token_ids=[] if with_ids else None)])
        if with_ids:
            done.prompt_token_ids = gen.prompt_ids
        yield done
    if include_usage:
        yield chunk([], finished.usage())


async def chat_completion(engine: Engine, req: ChatCompletionRequest, scope: Scope | None = None) -> ChatCompletion:
    """The non-streaming form: the engine's stream, collected once."""
    gen = engine.generate(req.to_generation_request(), scope)
    with_ids = bool(req.return_token_ids)
    with_logprobs = gen.params.sampling.logprobs
    legacy = req.functions is not None
    results = await gen.collect()
    return ChatCompletion(
        id="chatcmpl-" + secrets.token_hex(12), created=int(time.time()), model=gen.model.model_id,
        usage=usage([r.stats for r in results], gen.served), prompt_token_ids=gen.prompt_ids if with_ids else None,
        choices=[
            Choice(index=i, message=message,
                   finish_reason=_finish(r.stats, bool(message.tool_calls or message.function_call), legacy),
                   logprobs=ChoiceLogprobs(content=[lp for d in r.deltas for lp in token_logprobs(gen, d)])
                   if with_logprobs else None,
                   token_ids=r.token_ids if with_ids else None)
            for i, r in enumerate(results)
            for message in [_message(gen, r, legacy)]
        ],
    )


def _message(gen: Generation, choice: ChoiceResult, legacy: bool = False) -> ChatCompletionMessage:
    """The whole reply: its text, or (when tools were called) the calls and any text around them;
    for the deprecated ``functions``, the call as ``function_call``."""
    content, calls = gen.reply(choice)
    if legacy:
        first = [FunctionCall(name=name, arguments=args) for _, name, args in calls[:1]]
        return ChatCompletionMessage(content=content, function_call=first[0] if first else None)
    return ChatCompletionMessage(content=content, tool_calls=[
        ToolCallOut(id=cid, function=FunctionCall(name=name, arguments=args)) for cid, name, args in calls] or None)


async def create_chat_completion(
    engine: Engine, req: ChatCompletionRequest, scope: Scope | None = None
) -> ChatCompletion | AsyncIterator[ChatCompletionChunk]:
    """``chat.completions.create``: a stream of chunks when the request says ``stream: true``."""
    if req.stream:
        return chat_completion_stream(engine, req, scope)
    return await chat_completion(engine, req, scope)


# ---- (legacy) text completions --------------------------------------------------------------------


def _legacy_logprobs(gen: Generation, deltas: list[TextDelta], offset: int) -> CompletionLogprobs:
    """OpenAI's legacy completions logprobs of consecutive deltas: tokens, their logprobs, top
    alternatives, offsets (each delta's from where its text starts; the first at ``offset``)."""
    tokens, lps, tops, offsets = [], [], [], []
    for delta in deltas:
        at = offset
        for step in delta.steps:
            text = gen.token_text(step.token)
            tokens.append(text)
            lps.append(step.logprob or 0.0)
            tops.append({gen.token_text(t): lp for t, lp in step.top})
            offsets.append(at)
            at += len(text)
        offset += len(delta.text)
    return CompletionLogprobs(tokens=tokens, token_logprobs=lps, top_logprobs=tops, text_offset=offsets)


def _completion_logprobs(req: CompletionRequest, gen: Generation, deltas: list[TextDelta],
                         offset: int) -> CompletionLogprobs | ChoiceLogprobs | None:
    """OpenAI's legacy shape for ``logprobs: <int>``, chat's for WebLLM's ``logprobs: true``."""
    if req.chat_logprobs:
        return ChoiceLogprobs(content=[lp for d in deltas for lp in token_logprobs(gen, d)])
    if req.logprobs is None or req.logprobs is False:
        return None
    return _legacy_logprobs(gen, deltas, offset)




def _echo(engine: Engine, req: CompletionRequest, gen: Generation) -> str:
    """What ``echo`` puts before the completion: the prompt, as text."""
    if not req.echo:
        return ""
    return req.prompt if isinstance(req.prompt, str) else engine.text_of(gen.model, gen.prompt_ids)


async def completion_stream(
    engine: Engine, req: CompletionRequest, scope: Scope | None = None
) -> AsyncIterator[Completion]:
    """Stream a text completion of a raw prompt (no chat template), OpenAI's legacy shape: ``usage``
    null on every chunk, and with ``stream_options.include_usage`` a last chunk with usage and no choices."""
    include_usage = bool(req.stream_options and req.stream_options.include_usage)
    gen = engine.generate(req.to_generation_request(), scope)
    n = gen.n
    cid = "cmpl-" + secrets.token_hex(12)
    created = int(time.time())
    echo = _echo(engine, req, gen)
    offsets = {i: len(echo) for i in range(n)}
    echoed: set[int] = set()
    finished = _Finished(gen.served)

    def chunk(choices: list[CompletionChoice], use: CompletionUsage | None = None) -> Completion:
        return Completion(id=cid, created=created, model=gen.model.model_id, choices=choices, usage=use)

    async for event in gen:
        i = event.index
        if event.delta is not None:
            d = event.delta
            prefix = echo if i not in echoed else ""
            echoed.add(i)
            lp = _completion_logprobs(req, gen, [d], offsets[i])
            offsets[i] += len(d.text)
            yield chunk([CompletionChoice(index=i, text=prefix + d.text, logprobs=lp,
                                          token_ids=d.token_ids if req.return_token_ids else None)])
            continue
        finished.add(event)
        done = chunk([CompletionChoice(index=i, text="" if i in echoed else echo,
                                       finish_reason=event.stats.finish_reason,
                                       token_ids=[] if req.return_token_ids else None)])
        if req.return_token_ids:
            done.prompt_token_ids = gen.prompt_ids
        yield done
    if include_usage:
        yield chunk([], finished.usage())


async def completion(engine: Engine, req: CompletionRequest, scope: Scope | None = None) -> Completion:
    """The non-streaming form: the engine's stream, collected once."""
    gen = engine.generate(req.to_generation_request(), scope)
    results = await gen.collect()
    echo = _echo(engine, req, gen)
    choices = []
    for i, r in enumerate(results):
        logprobs = _completion_logprobs(req, gen, r.deltas, len(echo))
        choices.append(CompletionChoice(index=i, text=echo + r.text,
                                        finish_reason=r.finish_reason, logprobs=logprobs,
                                        token_ids=r.token_ids if req.return_token_ids else None))
    return Completion(id="cmpl-" + secrets.token_hex(12), created=int(time.time()), model=gen.model.model_id,
                      usage=usage([r.stats for r in results], gen.served), choices=choices,
                      prompt_token_ids=gen.prompt_ids if req.return_token_ids else None)


async def create_completion(
    engine: Engine, req: CompletionRequest, scope: Scope | None = None
) -> Completion | AsyncIterator[Completion]:
    """``completions.create``: a stream of chunks when the request says ``stream: true``."""
    if req.stream:
        return completion_stream(engine, req, scope)
    return await completion(engine, req, scope)


# ---- embeddings ------------------------------------------------------------------------------------


def _base64_floats(values: list[float]) -> str:
    """OpenAI's ``base64`` encoding: float32 values, little-endian, as base64 text."""
    packed = array("f", values)
    if sys.byteorder != "little":
        packed.byteswap()
    return base64.b64encode(packed.tobytes()).decode("ascii")


async def embeddings(engine: Engine, req: EmbeddingRequest, scope: Scope | None = None) -> CreateEmbeddingResponse:
    model = engine.resolve_model(req.model, "embedding")
    result = await engine.embed(model, req.texts, scope)
    if req.dimensions is not None and req.dimensions != result.dims:
        raise InvalidInputError(f"{model.model_id} gives {result.dims} dimensions and was not trained to be cut "
                                "shorter", "dimensions")
    encode = _base64_floats if req.encoding_format == "base64" else list
    return CreateEmbeddingResponse(
        model=model.model_id,
        data=[EmbeddingData(index=i, embedding=encode(v)) for i, v in enumerate(result.vectors)],
        usage=EmbeddingUsage(prompt_tokens=result.prompt_tokens, total_tokens=result.prompt_tokens),
    )
