"""The OpenAI / WebLLM face: chat completions and embeddings on the engine's one generation path."""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from .backend import ModelInfo, SamplingParams, StepResult
from .errors import InvalidInputError
from .generation import GenerationParams, GenerationStats
from .openai_types import (
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionMessage,
    ChatCompletionRequest,
    Choice,
    ChoiceLogprobs,
    ChunkChoice,
    Completion,
    CompletionChoice,
    CompletionLogprobs,
    CompletionRequest,
    CompletionUsage,
    CreateEmbeddingResponse,
    Delta,
    EmbeddingData,
    EmbeddingRequest,
    EmbeddingUsage,
    PromptTokensDetails,
    TokenLogprob,
    TopLogprob,
    UsageExtra,
)
from .validation import parse_request

if TYPE_CHECKING:
    from .engine import Engine

# Fields of seed 004 that a later issue implements; until then refused, never ignored.
_NOT_YET = ("tools", "tool_choice", "response_format")


def check_common(req: ChatCompletionRequest | CompletionRequest) -> None:
    """Rules shared by chat and text completions, beyond the field types."""
    if req.stream_options is not None and not req.stream:
        raise InvalidInputError("`stream_options` is only allowed when `stream` is true", "stream_options")
    for key in req.logit_bias or {}:
        if not key.lstrip("-").isdigit():
            raise InvalidInputError(f"`logit_bias` keys are token ids; got {key!r}", "logit_bias")


def check_chat(req: ChatCompletionRequest) -> None:
    """WebLLM's rules beyond the field types."""
    for name in _NOT_YET:
        if getattr(req, name) not in (None, False):
            raise InvalidInputError(f"`{name}` is not supported yet", name)
    check_common(req)
    if req.top_logprobs is not None and not req.logprobs:
        raise InvalidInputError("`top_logprobs` needs `logprobs: true`", "top_logprobs")
    if req.messages[-1].role not in ("user", "tool"):
        raise InvalidInputError("the last message must be from the user or a tool", "messages")


def generation_params(req: ChatCompletionRequest | CompletionRequest, model: ModelInfo) -> GenerationParams:
    bias = tuple((int(k), float(v)) for k, v in (req.logit_bias or {}).items())
    for token, _ in bias:
        if not 0 <= token < max(model.vocab_size, 1):
            raise InvalidInputError(f"`logit_bias` names token {token}, outside the vocabulary", "logit_bias")
    return GenerationParams(
        sampling=SamplingParams(
            temperature=1.0 if req.temperature is None else req.temperature,
            top_k=req.top_k or 0,
            top_p=1.0 if req.top_p is None else req.top_p,
            seed=req.seed,
            repetition_penalty=req.repetition_penalty or 1.0,
            frequency_penalty=req.frequency_penalty or 0.0,
            presence_penalty=req.presence_penalty or 0.0,
            logit_bias=bias,
            logprobs=req.logprobs is not None and req.logprobs is not False,
            top_logprobs=(req.top_logprobs or 0) if isinstance(req, ChatCompletionRequest) else (req.logprobs or 0),
        ),
        # OpenAI's legacy completions default to 16 tokens; chat to the rest of the window
        max_tokens=req.max_tokens if isinstance(req, ChatCompletionRequest) or req.max_tokens else 16,
        stop=tuple(req.stop_list),
        ignore_eos=bool(req.ignore_eos),
    )


def token_logprobs(engine: Engine, model_id: str, steps: list[StepResult]) -> list[TokenLogprob]:
    def entry(token: int) -> tuple[str, list[int]]:
        raw = engine.token_bytes(model_id, token)
        return raw.decode("utf-8", errors="replace"), list(raw)

    # built from the engine's own data on the per-token path: no validation needed
    out = []
    for step in steps:
        text, raw = entry(step.token)
        top = [TopLogprob.model_construct(token=t, logprob=lp, bytes=b) for t, b, lp in
               ((*entry(tid), lp) for tid, lp in step.top)]
        out.append(TokenLogprob.model_construct(token=text, logprob=step.logprob or 0.0, bytes=raw, top_logprobs=top))
    return out


def usage(stats: list[GenerationStats]) -> CompletionUsage:
    """Usage of all choices: the prompt once, completions summed, timings of the first choice."""
    first = stats[0]
    completion = sum(s.completion_tokens for s in stats)
    return CompletionUsage(
        prompt_tokens=first.prompt_tokens,
        completion_tokens=completion,
        total_tokens=first.prompt_tokens + completion,
        prompt_tokens_details=PromptTokensDetails(cached_tokens=first.cached_tokens),
        extra=UsageExtra(**first.timings()),
    )


async def chat_completion_stream(
    engine: Engine, request: dict[str, Any], request_id: str | None = None
) -> AsyncIterator[ChatCompletionChunk]:
    """Stream a chat completion: chunks of text per choice (``index``), a chunk with each
    choice's ``finish_reason``, and with ``stream_options.include_usage`` a last chunk with usage."""
    req = parse_request(ChatCompletionRequest, request)
    check_chat(req)
    model = engine.resolve_model(req.model, "chat")
    params = generation_params(req, model)
    messages = [{"role": m.role, "content": _text_of(m.content)} for m in req.messages]
    ids = engine.backend.apply_chat_template(model.model_id, messages)
    engine.check_prompt(model, ids, "messages")
    async for chunk in stream_chunks(engine, model, ids, params, req.n or 1, request_id, req):
        yield chunk


async def stream_chunks(
    engine: Engine, model: ModelInfo, ids: list[int], params: GenerationParams, n: int,
    request_id: str | None, req: ChatCompletionRequest,
) -> AsyncIterator[ChatCompletionChunk]:
    chunk_id = "chatcmpl-" + secrets.token_hex(12)
    created = int(time.time())
    with_ids = bool(req.return_token_ids)
    include_usage = bool(req.stream_options and req.stream_options.include_usage)
    finished: dict[int, GenerationStats] = {}

    def chunk(choices: list[ChunkChoice], use: CompletionUsage | None = None) -> ChatCompletionChunk:
        return ChatCompletionChunk(id=chunk_id, created=created, model=model.model_id, choices=choices, usage=use)

    async for event in engine.run(model, ids, params, n, request_id):
        if event.delta is not None:
            d = event.delta
            logprobs = (ChoiceLogprobs(content=token_logprobs(engine, model.model_id, d.steps))
                        if params.sampling.logprobs else None)
            yield chunk([ChunkChoice(index=event.index, delta=Delta(role="assistant", content=d.text),
                                     logprobs=logprobs, token_ids=d.token_ids if with_ids else None)])
            continue
        finished[event.index] = event.stats
        last = event.index == n - 1
        done = chunk([ChunkChoice(index=event.index, delta=Delta(), finish_reason=event.stats.finish_reason,  # type: ignore[arg-type]
                                  token_ids=[] if with_ids else None)])
        if last and not include_usage:
            done.usage = usage([finished[i] for i in sorted(finished)])
        if with_ids:
            done.prompt_token_ids = ids
        yield done
    if include_usage:
        yield chunk([], usage([finished[i] for i in sorted(finished)]))


async def chat_completion(engine: Engine, request: dict[str, Any], request_id: str | None = None) -> ChatCompletion:
    """The non-streaming form: the collected stream."""
    texts: dict[int, list[str]] = {}
    ids: dict[int, list[int]] = {}
    logprobs: dict[int, list[TokenLogprob]] = {}
    finish: dict[int, str] = {}
    last: ChatCompletionChunk | None = None
    use = None
    prompt_ids = None
    async for c in chat_completion_stream(engine, request, request_id):
        last = c
        use = c.usage or use
        prompt_ids = c.prompt_token_ids or prompt_ids
        for choice in c.choices:
            texts.setdefault(choice.index, []).append(choice.delta.content or "")
            ids.setdefault(choice.index, []).extend(choice.token_ids or [])
            if choice.logprobs and choice.logprobs.content:
                logprobs.setdefault(choice.index, []).extend(choice.logprobs.content)
            if choice.finish_reason:
                finish[choice.index] = choice.finish_reason
    assert last is not None
    with_ids = prompt_ids is not None
    with_logprobs = bool(request.get("logprobs"))
    return ChatCompletion(
        id=last.id, created=last.created, model=last.model, usage=use, prompt_token_ids=prompt_ids,
        choices=[
            Choice(index=i, message=ChatCompletionMessage(content="".join(texts.get(i, []))),
                   finish_reason=finish[i],  # type: ignore[arg-type]
                   logprobs=ChoiceLogprobs(content=logprobs.get(i, [])) if with_logprobs else None,
                   token_ids=ids.get(i, []) if with_ids else None)
            for i in sorted(finish)
        ],
    )


def legacy_logprobs(engine: Engine, model_id: str, steps: list[StepResult], offset: int) -> CompletionLogprobs:
    """OpenAI's legacy completions logprobs: tokens, their logprobs, top alternatives, offsets."""
    tokens, lps, tops, offsets = [], [], [], []
    for step in steps:
        text = engine.token_bytes(model_id, step.token).decode("utf-8", errors="replace")
        tokens.append(text)
        lps.append(step.logprob or 0.0)
        tops.append({engine.token_bytes(model_id, t).decode("utf-8", errors="replace"): lp for t, lp in step.top})
        offsets.append(offset)
        offset += len(text)
    return CompletionLogprobs(tokens=tokens, token_logprobs=lps, top_logprobs=tops, text_offset=offsets)


async def completion_stream(
    engine: Engine, request: dict[str, Any], request_id: str | None = None
) -> AsyncIterator[Completion]:
    """Stream a text completion of a raw prompt (no chat template), OpenAI's legacy shape."""
    req = parse_request(CompletionRequest, request)
    check_common(req)
    model = engine.resolve_model(req.model, "chat")
    params = generation_params(req, model)
    ids = engine.backend.encode(model.model_id, req.prompt, add_special_tokens=True)
    engine.check_prompt(model, ids, "prompt")
    n = req.n or 1
    cid = "cmpl-" + secrets.token_hex(12)
    created = int(time.time())
    include_usage = bool(req.stream_options and req.stream_options.include_usage)
    offsets = {i: len(req.prompt) if req.echo else 0 for i in range(n)}
    echoed: set[int] = set()
    finished: dict[int, GenerationStats] = {}

    def chunk(choices: list[CompletionChoice], use: CompletionUsage | None = None) -> Completion:
        return Completion(id=cid, created=created, model=model.model_id, choices=choices, usage=use)

    async for event in engine.run(model, ids, params, n, request_id):
        i = event.index
        if event.delta is not None:
            d = event.delta
            prefix = req.prompt if req.echo and i not in echoed else ""
            echoed.add(i)
            lp = legacy_logprobs(engine, model.model_id, d.steps, offsets[i]) if req.logprobs is not None else None
            offsets[i] += len(d.text)
            yield chunk([CompletionChoice(index=i, text=prefix + d.text, logprobs=lp,
                                          token_ids=d.token_ids if req.return_token_ids else None)])
            continue
        finished[i] = event.stats
        done = chunk([CompletionChoice(index=i, text="" if i in echoed or not req.echo else req.prompt,
                                       finish_reason=event.stats.finish_reason,  # type: ignore[arg-type]
                                       token_ids=[] if req.return_token_ids else None)])
        if i == n - 1 and not include_usage:
            done.usage = usage([finished[k] for k in sorted(finished)])
        if req.return_token_ids:
            done.prompt_token_ids = ids
        yield done
    if include_usage:
        yield chunk([], usage([finished[k] for k in sorted(finished)]))


async def completion(engine: Engine, request: dict[str, Any], request_id: str | None = None) -> Completion:
    """The non-streaming form: the collected stream."""
    texts: dict[int, list[str]] = {}
    ids: dict[int, list[int]] = {}
    lps: dict[int, list[CompletionLogprobs]] = {}
    finish: dict[int, str] = {}
    last = None
    use = None
    prompt_ids = None
    async for c in completion_stream(engine, request, request_id):
        last, use, prompt_ids = c, c.usage or use, c.prompt_token_ids or prompt_ids
        for ch in c.choices:
            texts.setdefault(ch.index, []).append(ch.text)
            ids.setdefault(ch.index, []).extend(ch.token_ids or [])
            if ch.logprobs:
                lps.setdefault(ch.index, []).append(ch.logprobs)
            if ch.finish_reason:
                finish[ch.index] = ch.finish_reason
    assert last is not None

    def merged(parts: list[CompletionLogprobs]) -> CompletionLogprobs:
        return CompletionLogprobs(tokens=sum((p.tokens for p in parts), []),
                                  token_logprobs=sum((p.token_logprobs for p in parts), []),
                                  top_logprobs=sum((p.top_logprobs for p in parts), []),
                                  text_offset=sum((p.text_offset for p in parts), []))

    with_lp = request.get("logprobs") is not None
    return Completion(
        id=last.id, created=last.created, model=last.model, usage=use, prompt_token_ids=prompt_ids,
        choices=[CompletionChoice(index=i, text="".join(texts.get(i, [])), finish_reason=finish[i],  # type: ignore[arg-type]
                                  logprobs=merged(lps.get(i, [])) if with_lp else None,
                                  token_ids=ids.get(i, []) if prompt_ids is not None else None)
                 for i in sorted(finish)],
    )


async def embeddings(engine: Engine, request: dict[str, Any]) -> CreateEmbeddingResponse:
    req = parse_request(EmbeddingRequest, request)
    model = engine.resolve_model(req.model, "embedding")
    result = await engine.embed(model, req.texts)
    return CreateEmbeddingResponse(
        model=model.model_id,
        data=[EmbeddingData(index=i, embedding=v) for i, v in enumerate(result.vectors)],
        usage=EmbeddingUsage(prompt_tokens=result.prompt_tokens, total_tokens=result.prompt_tokens),
    )


def _text_of(content: object) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(part.text for part in content)  # type: ignore[attr-defined]
