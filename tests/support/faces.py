"""The faces as the tests call them: with the JSON bodies a page sends, parsed into each face's
request model the way the worker's envelope parses them (a list becomes a batch model's one field)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from types import ModuleType
from typing import Any, get_type_hints

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


def with_json(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn(service, request, ...)`` taking the request as JSON (a dict or a list)."""
    second = list(inspect.signature(fn).parameters)[1]
    model = get_type_hints(fn)[second]

    def call(service: Any, body: Any, *args: Any, **kwargs: Any) -> Any:
        return fn(service, parse_body(model, body), *args, **kwargs)

    return call


class _Face:
    """A face module whose request-taking functions take JSON."""

    def __init__(self, module: ModuleType) -> None:
        self._module = module

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._module, name)
        if inspect.iscoroutinefunction(value) or inspect.isasyncgenfunction(value):
            params = list(inspect.signature(value).parameters)
            if len(params) > 1:
                hint = get_type_hints(value).get(params[1])
                if isinstance(hint, type) and issubclass(hint, BaseModel):
                    return with_json(value)
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
