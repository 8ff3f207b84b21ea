"""Bounded and digit-limited numbers in Chromium: the worker converts the schema with web-xgrammar,
Python swaps its numbers, web-xgrammar compiles the result. The tokens must equal the CPython
backend's (PyPI xgrammar) for the same request, and replies validate (``jsonschema``)."""

from __future__ import annotations

import json

import jsonschema
import pytest

from csi.backends.cpython import CPythonBackend
from csi.core.engine import Engine
from tests.support.faces import chat_completion
from tests.support.aio import run_async
from tests.support.paths import MODELS

pytestmark = pytest.mark.browser

SCHEMA = {"type": "object", "properties": {
    "price": {"type": "number", "minimum": 0.5, "maximum": 19.99},
    "score": {"type": ["integer", "null"], "exclusiveMinimum": -3, "maximum": 3},
    "free": {"type": "number"}}, "required": ["price", "score", "free"], "additionalProperties": False}


@pytest.fixture(scope="module")
def cpython_engine() -> Engine:
    eng = Engine(CPythonBackend(MODELS))
    run_async(eng.load(["tiny-chat"]))
    return eng


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("bias", [False, True])
def test_bounded_number_tokens_equal_the_cpython_backend(engine_page, cpython_engine, seed, bias):
    request = {"model": "tiny-chat", "messages": [{"role": "user", "content": "A price in JSON."}], "seed": seed,
               "temperature": 1.0, "max_tokens": 96, "return_token_ids": True,
               "response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema": SCHEMA}}}
    if bias:  # digits pushed as hard as they go: the digit limits decide where numbers end
        digits = [t for t in range(cpython_engine.models["tiny-chat"].vocab_size)
                  if cpython_engine.token_bytes("tiny-chat", t).isdigit()]
        request["logit_bias"] = {str(t): 100 for t in digits}
    browser = engine_page.ok("return await engine.chat.completions.create(arg);", request)
    cpython = run_async(chat_completion(cpython_engine, request)).model_dump()
    assert browser["choices"][0]["token_ids"] == cpython["choices"][0]["token_ids"]
    assert browser["choices"][0]["finish_reason"] == cpython["choices"][0]["finish_reason"] == "stop"
    jsonschema.validate(json.loads(browser["choices"][0]["message"]["content"]), SCHEMA)
