"""Chat and text completions of a model on an OpenAI-compatible server: the validated request goes
to the server as OpenAI's own (tools, ``n``, logprobs and ``response_format`` as the server supports
them; csi-web's extensions refused, naming the field), always streamed; its chunks come back in
csi-web's response shapes, and the non-streaming answer is that stream collected, as locally.
``usage.extra`` says who served it (``served_by``, ``server``)."""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any, Literal, TypeVar

from ...core.decode import GenerationStats
from ...core.engine import Engine
from ...core.remote import Aborted, RemoteCall, RemoteModel
from ...core.remote_generation import entry_bytes
from ...core.scope import Scope
from ...errors import InvalidInputError
from .messages import text_of
from .protocol import ChatCompletionRequest, CompletionRequest
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
    Delta,
    FunctionCall,
    FunctionCallDelta,
    PromptTokensDetails,
    TokenLogprob,
    ToolCallDelta,
    ToolCallOut,
    TopLogprob,
    UsageExtra,
)

_C = TypeVar("_C", ChatCompletionChunk, Completion)
_NOT_SENT = {"stream", "stream_options", "functions", "function_call", "extra_body", "model"}
_FINISH: dict[str, ChatFinishReason] = {"stop": "stop", "length": "length", "tool_calls": "tool_calls",
                                        "function_call": "tool_calls", "abort": "abort"}


def _bodies(req: ChatCompletionRequest | CompletionRequest, remote: RemoteModel) -> list[dict[str, Any]]:
    """The request as the server gets it: OpenAI's fields, streamed with usage; one request per
    choice (``n``, and each prompt of a list), since servers such as llama.cpp's answer one only.
    A ``seed`` goes up by one from choice to choice, so that seeded choices differ as they do here."""
    if req.return_token_ids:
        raise InvalidInputError(f"{remote.endpoint.base_url} does not return token ids", "return_token_ids")
    extra = req.extra_body
    if extra is not None and extra.enable_latency_breakdown:
        raise InvalidInputError("a server does not report its latency by stage", "extra_body.enable_latency_breakdown")
    rf = req.response_format
    if rf is not None and rf.type in ("grammar", "regex", "structural_tag"):
        raise InvalidInputError(f"`{rf.type}` is csi-web's own response format; a server takes `json_schema` "
                                "or `json_object`", "response_format.type")
    body = req.model_dump(mode="json", exclude_unset=True, by_alias=True, exclude=_NOT_SENT | {"n"})
    if isinstance(req, ChatCompletionRequest):  # text parts as one text: not every server reads parts
        for out, m in zip(body["messages"], req.messages, strict=True):
            if isinstance(out.get("content"), list):
                out["content"] = text_of(getattr(m, "content", None) or [])
    if extra is not None and extra.enable_thinking is not None:
        body["chat_template_kwargs"] = {"enable_thinking": extra.enable_thinking}
    body.update(model=remote.server_model, stream=True, stream_options={"include_usage": True})
    prompts: list[Any] = [None]
    if isinstance(req, CompletionRequest) and isinstance(req.prompt, list) and req.prompt \
            and not isinstance(req.prompt[0], int):
        prompts = list(req.prompt)
    out = []
    for prompt in prompts:
        for k in range(req.n or 1):
            one = dict(body)
            if prompt is not None:
                one["prompt"] = prompt
            if k and req.seed is not None:
                one["seed"] = req.seed + k
            out.append(one)
    return out



def _usage(raw: dict[str, int] | None, stats: GenerationStats, remote: RemoteModel) -> CompletionUsage:
    """The server's usage; a server that reports none when streaming (llama-cpp-python) gets 0
    prompt tokens and the streamed pieces counted as completion tokens."""
    raw = raw or {}
    stats.prompt_tokens = raw.get("prompt_tokens", 0)
    stats.completion_tokens = raw.get("completion_tokens") or stats.completion_tokens
    return CompletionUsage(
        prompt_tokens=stats.prompt_tokens, completion_tokens=stats.completion_tokens,
        total_tokens=stats.prompt_tokens + stats.completion_tokens,
        prompt_tokens_details=PromptTokensDetails(cached_tokens=0),
        extra=UsageExtra(**stats.timings(), served_by="remote", server=remote.endpoint.base_url))


def _token(entry: dict[str, Any]) -> TokenLogprob:
    return TokenLogprob(token=str(entry.get("token", "")), logprob=float(entry.get("logprob") or 0.0),
                        bytes=list(entry_bytes(entry)),
                        top_logprobs=[TopLogprob(token=str(t.get("token", "")), logprob=float(t.get("logprob") or 0.0),
                                                 bytes=list(entry_bytes(t))) for t in entry.get("top_logprobs") or []])


def _chat_logprobs(choice: dict[str, Any]) -> ChoiceLogprobs | None:
    lp = choice.get("logprobs")
    if not isinstance(lp, dict) or not isinstance(lp.get("content"), list):
        return None
    return ChoiceLogprobs(content=[_token(e) for e in lp["content"] if isinstance(e, dict)])


def _tool_deltas(delta: dict[str, Any]) -> list[ToolCallDelta] | None:
    calls = []
    for c in delta.get("tool_calls") or []:
        f = c.get("function") or {}
        calls.append(ToolCallDelta(index=int(c.get("index", 0)), id=c.get("id"),
                                   type="function" if c.get("id") else None,
                                   function=FunctionCallDelta(name=f.get("name"), arguments=f.get("arguments"))))
    if not calls and isinstance(delta.get("function_call"), dict):
        f = delta["function_call"]
        calls.append(ToolCallDelta(index=0, id="call_" + str(f.get("name") or ""), type="function",
                                   function=FunctionCallDelta(name=f.get("name"), arguments=f.get("arguments"))))
    return calls or None


def _carries_text(choice: dict[str, Any]) -> bool:
    delta = choice.get("delta") or {}
    return bool(choice.get("text") or delta.get("content") or delta.get("tool_calls") or delta.get("function_call"))


class _Stream:
    """The server's streams of one request's choices, one after the other, as events whose choice
    ``index`` is the choice's; with their clock and usage (for ``usage.extra``)."""

    def __init__(self, call: RemoteCall, path: str, bodies: list[dict[str, Any]]) -> None:
        self.call, self.path, self.bodies, self.n = call, path, bodies, len(bodies)
        self.stats = GenerationStats(started=time.time())
        self.usage: dict[str, int] | None = None
        self.aborted = False

    async def events(self) -> AsyncIterator[dict[str, Any]]:
        try:
            for index, body in enumerate(self.bodies):
                async for event in self.call.events(self.path, body):
                    if isinstance(event.get("usage"), dict):
                        self._add_usage(event["usage"], first=index == 0)
                    choices = event.get("choices")
                    if choices:
                        if any(_carries_text(c) for c in choices):
                            self.stats.first_token_at = self.stats.first_token_at or time.time()
                            self.stats.completion_tokens += 1  # llama.cpp streams a token per event
                        for c in choices:
                            c["index"] = index
                        yield event
        except Aborted:
            self.aborted = True
        self.stats.finished = time.time()
        self.stats.first_token_at = self.stats.first_token_at or self.stats.finished

    def _add_usage(self, raw: dict[str, Any], first: bool) -> None:
        """The prompt once (choices of one prompt share it), the completions summed."""
        prompt, completion = int(raw.get("prompt_tokens") or 0), int(raw.get("completion_tokens") or 0)
        if self.usage is None:
            self.usage = {"prompt_tokens": 0, "completion_tokens": 0}
        if first:
            self.usage["prompt_tokens"] = prompt
        self.usage["completion_tokens"] += completion


def _remote(engine: Engine, model_id: str, scope: Scope | None) -> tuple[RemoteModel, RemoteCall]:
    return engine.remote_call(model_id, scope)


def chat_stream(engine: Engine, req: ChatCompletionRequest, model_id: str, scope: Scope | None,
                include_usage: bool) -> AsyncIterator[ChatCompletionChunk]:
    """The server's chunks, re-made; each choice ends with a ``finish_reason`` (``abort`` when cancelled).
    What the server cannot be asked for is refused here, before anything streams."""
    remote, call = _remote(engine, model_id, scope)
    stream = _Stream(call, "chat/completions", _bodies(req, remote))
    return _chat_chunks(req, model_id, remote, stream, include_usage)


async def _chat_chunks(req: ChatCompletionRequest, model_id: str, remote: RemoteModel, stream: _Stream,
                       include_usage: bool) -> AsyncIterator[ChatCompletionChunk]:
    legacy = req.functions is not None
    chunk_id, created = "chatcmpl-" + secrets.token_hex(12), int(time.time())
    open_choices = set(range(stream.n))

    def chunk(choices: list[ChunkChoice], use: CompletionUsage | None = None) -> ChatCompletionChunk:
        return ChatCompletionChunk(id=chunk_id, created=created, model=model_id, choices=choices, usage=use)

    pending: ChatCompletionChunk | None = None  # the last finish waits for the usage
    named: set[tuple[int, int]] = set()  # (choice, call) whose id and name went out
    async for event in stream.events():
        for c in event["choices"]:
            index = int(c.get("index", 0))
            if index not in open_choices:
                continue
            d = c.get("delta") or {}
            calls = _tool_deltas(d)
            for call in calls or []:  # llama.cpp repeats the id and name in every piece: once, as OpenAI
                if (index, call.index) in named:
                    call.id = call.type = call.function.name = None
                elif call.function.name:
                    named.add((index, call.index))
            delta = Delta(role="assistant", content=d.get("content"),
                          tool_calls=None if legacy else calls,
                          function_call=calls[0].function if legacy and calls else None)
            reason = c.get("finish_reason")
            finish = _finish(reason, legacy) if reason else None
            if delta.content or delta.tool_calls or delta.function_call or c.get("logprobs"):
                yield chunk([ChunkChoice(index=index, delta=delta, logprobs=_chat_logprobs(c))])
            if finish is not None:
                open_choices.discard(index)
                if pending is not None:
                    yield pending
                pending = chunk([ChunkChoice(index=index, delta=Delta(), finish_reason=finish)])
    ends = (chunk([ChunkChoice(index=i, delta=Delta(), finish_reason="abort" if stream.aborted else "stop")])
            for i in sorted(open_choices))
    for last in _last_ends(pending, ends, chunk([], _usage(stream.usage, stream.stats, remote)), include_usage):
        yield last


def _last_ends(pending: _C | None, ends: Iterator[_C], usage: _C, include_usage: bool) -> Iterator[_C]:
    """The stream's last chunks: the finish held back, the ends of choices the server left open
    (``abort`` when cancelled), then the usage: its own chunk with ``include_usage``, else on the
    last finish, as the local stream puts it."""
    for end in ends:
        if pending is not None:
            yield pending
        pending = end
    if pending is not None:
        if not include_usage:
            pending.usage = usage.usage
        yield pending
    if include_usage:
        yield usage


def _finish(reason: str, legacy: bool) -> ChatFinishReason:
    out = _FINISH.get(reason, "stop")
    return "function_call" if legacy and out == "tool_calls" else out


async def chat(engine: Engine, req: ChatCompletionRequest, model_id: str,
               scope: Scope | None) -> ChatCompletion:
    """The stream collected: per choice its text, calls, log-probabilities and finish."""
    n = req.n or 1
    texts: list[list[str]] = [[] for _ in range(n)]
    calls: list[dict[int, list[str]]] = [{} for _ in range(n)]  # index -> [id, name, arguments]
    logprobs: list[list[TokenLogprob]] = [[] for _ in range(n)]
    finish: list[ChatFinishReason] = ["stop"] * n
    use = None
    async for ch in chat_stream(engine, req, model_id, scope, include_usage=True):
        use = ch.usage or use
        for c in ch.choices:
            i = c.index
            texts[i].append(c.delta.content or "")
            for t in c.delta.tool_calls or ([ToolCallDelta(index=0, function=c.delta.function_call)]
                                            if c.delta.function_call else []):
                slot = calls[i].setdefault(t.index, ["", "", ""])
                slot[0] = t.id or slot[0]
                slot[1] += t.function.name or ""
                slot[2] += t.function.arguments or ""
            if c.logprobs and c.logprobs.content:
                logprobs[i].extend(c.logprobs.content)
            if c.finish_reason:
                finish[i] = c.finish_reason
    legacy = req.functions is not None
    choices = []
    for i in range(n):
        made = [calls[i][k] for k in sorted(calls[i])]
        message = ChatCompletionMessage(
            content="".join(texts[i]) or (None if made else ""),
            tool_calls=None if legacy or not made else [
                ToolCallOut(id=cid or f"call_{secrets.token_hex(6)}", function=FunctionCall(name=name, arguments=args))
                for cid, name, args in made],
            function_call=FunctionCall(name=made[0][1], arguments=made[0][2]) if legacy and made else None)
        choices.append(Choice(index=i, message=message, finish_reason=finish[i],
                              logprobs=ChoiceLogprobs(content=logprobs[i]) if req.logprobs else None))
    return ChatCompletion(id="chatcmpl-" + secrets.token_hex(12), created=int(time.time()), model=model_id,
                          choices=choices, usage=use)


def _legacy_logprobs(c: dict[str, Any]) -> CompletionLogprobs | None:
    lp = c.get("logprobs")
    if not isinstance(lp, dict) or not isinstance(lp.get("tokens"), list):
        return None
    return CompletionLogprobs(tokens=[str(t) for t in lp["tokens"]],
                              token_logprobs=[float(x or 0.0) for x in lp.get("token_logprobs") or []],
                              top_logprobs=[dict(t or {}) for t in lp.get("top_logprobs") or []],
                              text_offset=[int(x) for x in lp.get("text_offset") or []])


def completion_stream(engine: Engine, req: CompletionRequest, model_id: str, scope: Scope | None,
                      include_usage: bool) -> AsyncIterator[Completion]:
    """Text completion chunks from the server, re-made (what it cannot be asked for refused first)."""
    if req.chat_logprobs:
        raise InvalidInputError("a server gives text completions' log-probabilities for `logprobs: <count>`",
                                "logprobs")
    remote, call = _remote(engine, model_id, scope)
    stream = _Stream(call, "completions", _bodies(req, remote))
    return _completion_chunks(model_id, remote, stream, include_usage)


async def _completion_chunks(model_id: str, remote: RemoteModel, stream: _Stream,
                             include_usage: bool) -> AsyncIterator[Completion]:
    n = stream.n
    cid, created = "cmpl-" + secrets.token_hex(12), int(time.time())
    open_choices = set(range(n))

    def chunk(choices: list[CompletionChoice], use: CompletionUsage | None = None) -> Completion:
        return Completion(id=cid, created=created, model=model_id, choices=choices, usage=use)

    pending: Completion | None = None
    async for event in stream.events():
        for c in event["choices"]:
            index = int(c.get("index", 0))
            if index not in open_choices:
                continue
            reason = c.get("finish_reason")
            text = c.get("text") or ""
            if text or c.get("logprobs"):
                yield chunk([CompletionChoice(index=index, text=text, logprobs=_legacy_logprobs(c))])
            if reason:
                open_choices.discard(index)
                if pending is not None:
                    yield pending
                pending = chunk([CompletionChoice(index=index, text="", finish_reason=_text_finish(reason))])
    ends = (chunk([CompletionChoice(index=i, text="", finish_reason="abort" if stream.aborted else "stop")])
            for i in sorted(open_choices))
    for last in _last_ends(pending, ends, chunk([], _usage(stream.usage, stream.stats, remote)), include_usage):
        yield last


def _text_finish(reason: str) -> Literal["stop", "length", "abort"]:
    return "length" if reason == "length" else "abort" if reason == "abort" else "stop"


async def completion(engine: Engine, req: CompletionRequest, model_id: str, scope: Scope | None) -> Completion:
    """The stream collected."""
    texts: dict[int, list[str]] = {}
    finish: dict[int, Any] = {}
    lps: dict[int, list[CompletionLogprobs]] = {}
    use = None
    async for ch in completion_stream(engine, req, model_id, scope, include_usage=True):
        use = ch.usage or use
        for c in ch.choices:
            texts.setdefault(c.index, []).append(c.text)
            if isinstance(c.logprobs, CompletionLogprobs):
                lps.setdefault(c.index, []).append(c.logprobs)
            if c.finish_reason:
                finish[c.index] = c.finish_reason
    choices = []
    for i in sorted(texts):
        parts = lps.get(i)
        merged = CompletionLogprobs(tokens=[t for p in parts for t in p.tokens],
                                    token_logprobs=[t for p in parts for t in p.token_logprobs],
                                    top_logprobs=[t for p in parts for t in p.top_logprobs],
                                    text_offset=[t for p in parts for t in p.text_offset]) if parts else None
        choices.append(CompletionChoice(index=i, text="".join(texts[i]), finish_reason=finish.get(i, "stop"),
                                        logprobs=merged))
    return Completion(id="cmpl-" + secrets.token_hex(12), created=int(time.time()), model=model_id,
                      choices=choices, usage=use)
