"""The engine's generation path for a model on a server: a ``GenerationRequest`` sent as OpenAI's
chat or text completion (streamed), its events turned back into ``ChoiceEvent``s, so that every face
built on the engine (CSI, Spin, RemoteLLM) serves remote models unchanged. The server's tokens get ids
of this generation's own (``TokenTable``): the faces write log-probabilities from their bytes."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

from ..errors import InvalidInputError, ServerError
from .backend import Embeddings, ModelInfo, StepResult
from .decode import FinishReason, GenerationStats, TextDelta
from .generation import ChoiceEvent, Generation
from .remote import Aborted, RemoteCall, RemoteModel
from .request import GenerationParams, GenerationRequest
from .scope import Scope

FINISH: dict[str, FinishReason] = {"stop": "stop", "length": "length", "tool_calls": "stop",
                                   "function_call": "stop", "eos": "stop"}


class TokenTable:
    """Ids for the tokens a server names by text (and bytes): the same token, the same id."""

    def __init__(self) -> None:
        self._ids: dict[bytes, int] = {}
        self._bytes: list[bytes] = []

    def id_of(self, raw: bytes) -> int:
        token = self._ids.get(raw)
        if token is None:
            token = self._ids[raw] = len(self._bytes)
            self._bytes.append(raw)
        return token

    def bytes_of(self, token: int) -> bytes:
        return self._bytes[token] if 0 <= token < len(self._bytes) else b""


def entry_bytes(entry: dict[str, Any]) -> bytes:
    """The bytes of a token in a server's logprobs entry: its ``bytes``, else its text as UTF-8
    (llama-cpp-python sends ``bytes: null``)."""
    raw = entry.get("bytes")
    if isinstance(raw, list) and all(isinstance(b, int) and 0 <= b < 256 for b in raw):
        return bytes(raw)
    return str(entry.get("token", "")).encode()


def sampling_body(params: GenerationParams) -> dict[str, Any]:
    """OpenAI's request fields for ``params`` (those at their defaults left out); what a server
    cannot be asked for is refused, naming it."""
    s = params.sampling
    if s.grammar is not None:
        raise InvalidInputError("a model on a server is not constrained by a grammar on this face; send "
                                "`response_format` through chat completions", s.grammar.param)
    if params.keep_special:
        raise InvalidInputError("a server does not show special tokens", "keep_special")
    body: dict[str, Any] = {"temperature": s.temperature}
    if s.top_p != 1.0:
        body["top_p"] = s.top_p
    if s.top_k:
        body["top_k"] = s.top_k
    if s.seed is not None:
        body["seed"] = s.seed
    if s.frequency_penalty:
        body["frequency_penalty"] = s.frequency_penalty
    if s.presence_penalty:
        body["presence_penalty"] = s.presence_penalty
    if s.repetition_penalty != 1.0:
        body["repeat_penalty"] = body["repetition_penalty"] = s.repetition_penalty
    if s.logit_bias:
        body["logit_bias"] = {str(t): b for t, b in s.logit_bias}
    if params.max_tokens is not None:
        body["max_tokens"] = params.max_tokens
    if params.stop:
        body["stop"] = list(params.stop)
    if params.ignore_eos:
        body["ignore_eos"] = True
    return body


def request_body(request: GenerationRequest, remote: RemoteModel) -> tuple[str, dict[str, Any]]:
    """The path and body of ``request`` for the server: chat for messages, text completion otherwise."""
    if request.tools and request.tool_choice != "none":
        raise InvalidInputError("tools of a model on a server are served through chat completions only", "tools")
    s = request.params.sampling
    body = {"model": remote.server_model, "stream": True, "stream_options": {"include_usage": True},
            **sampling_body(request.params)}
    if request.messages is not None:
        body["messages"] = [_message(m) for m in request.messages]
        if s.logprobs:
            body["logprobs"] = True
            body["top_logprobs"] = s.top_logprobs
        if request.template_vars:
            body["chat_template_kwargs"] = dict(request.template_vars)
        return "chat/completions", body
    body["prompt"] = request.prompt if request.prompt is not None else list(request.prompt_ids or ())
    body.setdefault("max_tokens", None)  # the rest of the window, as here (a server's default is 16)
    if s.logprobs:
        body["logprobs"] = max(s.top_logprobs, 1)
    return "completions", body


def _message(m: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"role": m.role, "content": m.content}
    if m.tool_calls:
        out["tool_calls"] = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                             for c in m.tool_calls]
    if m.tool_call_id is not None:
        out["tool_call_id"] = m.tool_call_id
    return out


def _steps(choice: dict[str, Any], table: TokenTable, top_n: int) -> list[Any]:
    """The log-probabilities of one streamed choice, chat's shape or the legacy one."""
    lp = choice.get("logprobs")
    if not isinstance(lp, dict):
        return []
    steps = []
    if isinstance(lp.get("content"), list):
        for entry in lp["content"]:
            tops = entry.get("top_logprobs") or []
            steps.append(StepResult(table.id_of(entry_bytes(entry)), float(entry.get("logprob", 0.0)),
                                    tuple((table.id_of(entry_bytes(t)), float(t.get("logprob", 0.0)))
                                          for t in tops[:top_n])))
    elif isinstance(lp.get("tokens"), list):
        tops_all = lp.get("top_logprobs") or []
        for i, token in enumerate(lp["tokens"]):
            value = (lp.get("token_logprobs") or [None] * (i + 1))[i]
            tops = tops_all[i] if i < len(tops_all) and isinstance(tops_all[i], dict) else {}
            steps.append(StepResult(table.id_of(str(token).encode()), float(value or 0.0),
                                    tuple((table.id_of(k.encode()), float(v)) for k, v in list(tops.items())[:top_n])))
    return steps


def remote_generation(remote: RemoteModel, call: RemoteCall, model: ModelInfo, request: GenerationRequest,
                      scope: Scope | None) -> Generation:
    """``request`` for the model's server, accepted: what a server cannot be asked for is refused now."""
    table = TokenTable()
    path, body = request_body(request, remote)
    return Generation(lambda _: _events(call, request, path, body, table), table.bytes_of, model, [],
                      request.params, request.n, scope)


async def _events(call: RemoteCall, request: GenerationRequest, path: str, body: dict[str, Any],
                  table: TokenTable) -> AsyncIterator[ChoiceEvent]:
    """Stream ``request`` from the server as ``ChoiceEvent``s: each choice's deltas, then its end."""
    cancelled = call.cancelled
    top_n = request.params.sampling.top_logprobs
    chat = path.startswith("chat")
    seed = body.get("seed")
    for index in range(request.n):  # one request per choice: servers such as llama.cpp's answer one
        s = GenerationStats(started=time.time())
        if index and seed is not None:
            body = {**body, "seed": seed + index}
        try:
            if cancelled():
                raise Aborted
            async for event in call.events(path, body):
                usage = event.get("usage")
                if isinstance(usage, dict):
                    s.prompt_tokens = int(usage.get("prompt_tokens") or 0)
                    if usage.get("completion_tokens") is not None:
                        s.completion_tokens = int(usage["completion_tokens"])
                for choice in (event.get("choices") or [])[:1]:
                    text = (choice.get("delta") or {}).get("content") if chat else choice.get("text")
                    steps = _steps(choice, table, top_n)
                    if text or steps:
                        s.first_token_at = s.first_token_at or time.time()
                        s.completion_tokens += max(len(steps), 1)
                        yield ChoiceEvent(index, TextDelta(text or "", [], steps), s)
                    if choice.get("finish_reason"):
                        s.finish_reason = FINISH.get(choice["finish_reason"], "stop")
        except Aborted:
            s.finish_reason = s.finish_reason or "abort"
        s.finished = time.time()
        s.first_token_at = s.first_token_at or s.finished
        s.finish_reason = s.finish_reason or ("abort" if cancelled() else "stop")
        yield ChoiceEvent(index, None, s)


def pooled(values: list[Any]) -> list[float]:
    """A server's embedding as a vector: one per token (llama.cpp's for a model without pooling)
    mean-pooled and L2-normalized, as csi-web's own are; a sentence vector as it came."""
    if values and isinstance(values[0], list):
        rows = [[float(x) for x in row] for row in values]
        mean = [sum(col) / len(rows) for col in zip(*rows, strict=True)]
        norm = sum(x * x for x in mean) ** 0.5 or 1.0
        return [x / norm for x in mean]
    return [float(x) for x in values]


async def remote_embeddings(remote: RemoteModel, call: RemoteCall, texts: list[str] | list[list[int]]) -> Embeddings:
    """Embeddings from the model's server (OpenAI's ``/embeddings``)."""
    body = await call.json("embeddings", {"model": remote.server_model, "input": texts, "encoding_format": "float"})
    try:
        rows = sorted(body["data"], key=lambda d: d["index"])
        vectors = [pooled(row["embedding"]) for row in rows]
        tokens = int((body.get("usage") or {}).get("prompt_tokens") or 0)
    except (KeyError, TypeError, ValueError) as exc:
        raise ServerError(f"{call.where} answered embeddings in another shape ({exc!r})") from None
    if len(vectors) != len(texts):
        raise ServerError(f"{call.where} answered {len(vectors)} embeddings for {len(texts)} inputs")
    return Embeddings(vectors, tokens, len(vectors[0]) if vectors else 0)
