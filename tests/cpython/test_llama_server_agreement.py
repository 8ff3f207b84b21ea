"""Our engine on the built-in smollm2-135m-instruct (CPython backend: the GGUF's Q4_1 blocks expanded to
float32) against llama.cpp serving the same GGUF (llama-cpp-python's server: its own template
rendering, tokenizer and quantized kernels): the same prompt tokens, and greedy answers that agree
token for token as far as two different sets of kernels can."""

from __future__ import annotations

from typing import Any

import pytest
import requests

from csi.backends.cpython import CPythonBackend
from csi.core.engine import Engine
from tests.support.aio import run_async
from tests.support.faces import chat_completion
from tests.support.llama_server import LlamaServer
from tests.support.paths import MODELS
from tests.support.smollm2_reference import MODEL, hf_tokenizer

MAX_TOKENS = 24
CONVERSATIONS: list[list[dict[str, str]]] = [
    [{"role": "user", "content": "What is the capital of France?"}],
    [{"role": "user", "content": "Name three primary colors."}],
    [{"role": "user", "content": "What is 2+2?"}],
    [{"role": "user", "content": "How many legs does a spider have?"}],
    [{"role": "user", "content": "Write a haiku about the sea."}],
    [{"role": "user", "content": "Translate 'good morning' into Spanish."}],
    [{"role": "user", "content": "Why is the sky blue? Answer in one sentence."}],
    [{"role": "user", "content": "Give me a Python function that adds two numbers."}],
    [{"role": "system", "content": "You are a pirate. Answer like one."},
     {"role": "user", "content": "Where is the treasure?"}],
    [{"role": "system", "content": "Answer with a single word."},
     {"role": "user", "content": "What colour is grass?"}],
    [{"role": "user", "content": "My name is Ada."},
     {"role": "assistant", "content": "Nice to meet you, Ada! How can I help you today?"},
     {"role": "user", "content": "What is my name?"}],
    [{"role": "user", "content": "List the days of the week."}],
    [{"role": "user", "content": "Wer war Albert Einstein?"}],
]
# Measured with llama-cpp-python 0.3.36 on this machine (x86-64, AVX-512): 4/13 answers equal,
# 8/13 equal on their first 8 tokens, a mean common prefix of 9.6 of 24 tokens (the kernels differ:
# llama.cpp multiplies Q4_1 blocks by activations it rounds to 8 bits, we expand the blocks to
# float32; near-ties such as "The" vs "L'" for the capital of France go either way). Floors under
# those with room for another CPU's kernels, which a broken model, template or tokenizer misses by far.
FIRST_TOKENS = 8
MIN_SHARE_AGREEING_ON_FIRST = 0.4  # answers equal on their first FIRST_TOKENS tokens (or all of a shorter one)
MIN_MEAN_PREFIX = 6.0


@pytest.fixture(scope="module")
def engine() -> Engine:
    eng = Engine(CPythonBackend(MODELS))
    run_async(eng.load([MODEL]))
    return eng


def ours(engine: Engine, messages: list[dict[str, str]]) -> dict:
    request = {"model": MODEL, "messages": messages, "temperature": 0, "max_tokens": MAX_TOKENS,
               "return_token_ids": True, "logprobs": True}
    return run_async(chat_completion(engine, request)).model_dump()


def server_chat(server: LlamaServer, messages: list[dict[str, str]]) -> dict:
    # its logprobs name the tokens it generated (it returns no ids; ``logprobs`` alone gives null)
    body: dict[str, Any] = {"model": server.model, "messages": messages, "temperature": 0, "max_tokens": MAX_TOKENS,
            "logprobs": True, "top_logprobs": 1}
    response = requests.post(f"{server.url}/v1/chat/completions", json=body, timeout=120)
    response.raise_for_status()
    return response.json()


def server_tokenize(server: LlamaServer, text: str) -> list[int]:
    response = requests.post(f"{server.url}/extras/tokenize", json={"input": text}, timeout=30)
    response.raise_for_status()
    return list(response.json()["tokens"])


def common_prefix(a: list, b: list) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


@pytest.fixture(scope="module")
def pairs(engine: Engine, llama_server: LlamaServer) -> list[tuple[dict, dict]]:
    return [(ours(engine, messages), server_chat(llama_server, messages)) for messages in CONVERSATIONS]


def test_prompt_tokens_agree(pairs: list[tuple[dict, dict]], llama_server: LlamaServer) -> None:
    """The server renders the GGUF's template and tokenizes it itself: the same count as ours; and
    its tokenizer gives our ids for our rendered prompt (special tokens included)."""
    for mine, theirs in pairs:
        prompt = mine["prompt_token_ids"]
        assert theirs["usage"]["prompt_tokens"] == len(prompt)
        text = hf_tokenizer().decode(prompt)
        assert server_tokenize(llama_server, text) == prompt


def generated_tokens(reply: dict) -> list[str]:
    return [entry["token"] for entry in reply["choices"][0]["logprobs"]["content"]]


def test_greedy_answers_agree_token_for_token(pairs: list[tuple[dict, dict]], llama_server: LlamaServer) -> None:
    """The tokens each side generated, compared position by position; where the answers are equal,
    the server's tokenizer gives our generated ids back from its text."""
    prefixes, exact, first_ok = [], 0, 0
    for (mine, theirs), messages in zip(pairs, CONVERSATIONS, strict=True):
        our_tokens, their_tokens = generated_tokens(mine), generated_tokens(theirs)
        assert len(our_tokens) == len(mine["choices"][0]["token_ids"])
        n = common_prefix(our_tokens, their_tokens)
        prefixes.append(n)
        if our_tokens == their_tokens:
            exact += 1
            their_text = theirs["choices"][0]["message"]["content"]
            assert their_text == mine["choices"][0]["message"]["content"]
            assert server_tokenize(llama_server, their_text) == mine["choices"][0]["token_ids"]
            assert theirs["choices"][0]["finish_reason"] == mine["choices"][0]["finish_reason"]
        first_ok += n >= min(FIRST_TOKENS, len(our_tokens), len(their_tokens))
        print(f"\n{messages[-1]['content'][:40]!r}: {n} common of {len(our_tokens)}/{len(their_tokens)}"
              f"\n  ours:   {mine['choices'][0]['message']['content']!r}"
              f"\n  server: {theirs['choices'][0]['message']['content']!r}")
    total = len(CONVERSATIONS)
    mean = sum(prefixes) / total
    print(f"\nllama.cpp agreement: {exact}/{total} answers equal, {first_ok}/{total} equal on the first "
          f"{FIRST_TOKENS} tokens, mean common prefix {mean:.1f} of {MAX_TOKENS} tokens")
    assert first_ok >= MIN_SHARE_AGREEING_ON_FIRST * total
    assert mean >= MIN_MEAN_PREFIX
