"""The faces as the tests call them: with the JSON bodies a page sends, parsed into each face's
request model the way the worker's envelope parses them (a list becomes a batch model's one field);
the CSI, index, Spin and RemoteLLM faces answer with the JSON the page receives (their reply models
dumped as the envelope dumps them)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from types import ModuleType
from typing import Any

from pydantic import BaseModel

from csi.faces import remote_llm as _remote_llm
from csi.faces import spin as _spin
from csi.faces.openai import serving as _serving
from csi.faces.pharia import index as _index
from csi.faces.pharia import inference as _inference
from csi.faces.pharia import text as _text
from csi.wire import parse_batch, parse_request


def parse_body(model: type[BaseModel], body: Any) -> BaseModel:
    """``body`` as ``model``; a list is the items of a batch model's one field."""
    if isinstance(body, list) and len(model.model_fields) == 1:
        return parse_batch(model, body, next(iter(model.model_fields)))
    return parse_request(model, body)


def request_model(fn: Callable[..., Any]) -> Any:
    """The annotation of ``fn``'s second parameter (its request), resolved in ``fn``'s module."""
    second = list(inspect.signature(fn).parameters)[1]
    hint = fn.__annotations__.get(second)
    return fn.__globals__.get(hint) if isinstance(hint, str) else hint


def with_json(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn(service, request, ...)`` taking the request as JSON (a dict or a list)."""
    model = request_model(fn)

    def call(service: Any, body: Any, *args: Any, **kwargs: Any) -> Any:
        return fn(service, parse_body(model, body), *args, **kwargs)

    return call


def dumped(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` (a coroutine function) answering with its reply model's JSON value."""

    async def call(*args: Any, **kwargs: Any) -> Any:
        out = await fn(*args, **kwargs)
        return out.model_dump(mode="json") if isinstance(out, BaseModel) else out

    return call


class _Face:
    """A face module whose request-taking functions take JSON and answer JSON."""

    def __init__(self, module: ModuleType) -> None:
        self._module = module

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._module, name)
        if inspect.iscoroutinefunction(value) or inspect.isasyncgenfunction(value):
            if len(inspect.signature(value).parameters) > 1:
                hint = request_model(value)
                if isinstance(hint, type) and issubclass(hint, BaseModel):
                    return dumped(with_json(value)) if inspect.iscoroutinefunction(value) else with_json(value)
        return value


remote_llm: Any = _Face(_remote_llm)
spin: Any = _Face(_spin)
inference: Any = _Face(_inference)
text: Any = _Face(_text)
index: Any = _Face(_index)
chat_completion = with_json(_serving.chat_completion)
chat_completion_stream = with_json(_serving.chat_completion_stream)
completion = with_json(_serving.completion)
completion_stream = with_json(_serving.completion_stream)
embeddings = with_json(_serving.embeddings)
