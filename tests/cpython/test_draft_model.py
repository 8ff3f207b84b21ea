"""Drafts from a draft model (``extra_body.draft_model``: ``core.model_drafts``) on the real SmolLM2 in
csi's CPython backend. The draft is a second copy of the model under another id: its greedy choices
agree with a greedy target (drafts accepted) and often differ from a sampling one (drafts rejected,
the KV caches of both models cut back); either way every reply is plain decoding's, token for token.
A model with another vocabulary, the target itself, or a model not loaded is refused by field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from csi.backends.cpython import CPythonBackend
from csi.core.engine import Engine
from csi.errors import CsiError
from tests.cpython.test_speculative import EXTRACTIVE, FREE, SETTINGS
from tests.support.aio import run_async
from tests.support.faces import chat_completion
from tests.support.paths import MODELS
from tests.support.smollm2_reference import MODEL, greedy_ids

DRAFT = "smollm2-draft"
MAX_TOKENS = 32


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    models: Path = tmp_path_factory.mktemp("models")
    for name in (MODEL, "tiny-chat"):
        (models / name).symlink_to(MODELS / name)
    (models / DRAFT).symlink_to(MODELS / MODEL)
    eng = Engine(CPythonBackend(models))
    run_async(eng.load([MODEL, DRAFT, "tiny-chat"]))
    return eng


def ask(engine: Engine, prompt: str, draft: str | None, **setting: Any) -> dict[str, Any]:
    extra = {"draft_model": draft} if draft else {"speculative": False}
    request = {"model": MODEL, "messages": [{"role": "user", "content": prompt}], "max_tokens": MAX_TOKENS,
               "return_token_ids": True, "extra_body": extra, **setting}
    return run_async(chat_completion(engine, request)).model_dump()


@pytest.mark.parametrize("setting", ["sampled", "bias, logprobs and stop"])  # greedy: the next test
def test_every_reply_with_a_draft_model_is_plain_decodings(engine: Engine, setting: str) -> None:
    accepted = rejected = 0
    for prompt in [EXTRACTIVE[1], FREE[0]]:
        plain, drafted = (ask(engine, prompt, d, **SETTINGS[setting]) for d in (None, DRAFT))
        a, b = plain["choices"][0], drafted["choices"][0]
        assert b["token_ids"] == a["token_ids"], prompt
        assert (b["message"]["content"], b["finish_reason"]) == (a["message"]["content"], a["finish_reason"])
        if a["logprobs"] is not None:
            for x, y in zip(a["logprobs"]["content"], b["logprobs"]["content"], strict=True):
                assert abs(x["logprob"] - y["logprob"]) < 1e-4
        extra = drafted["usage"]["extra"]
        accepted += extra["accepted_draft_tokens"]
        rejected += extra["draft_tokens"] - extra["accepted_draft_tokens"]
    print(f"{setting}: {accepted} drafts accepted, {rejected} rejected")
    assert accepted > 10
    if setting == "sampled":
        assert rejected > 0  # the target's draws left the draft's greedy path: both caches were cut


def test_greedy_with_a_draft_model_is_transformers_and_free_chat_is_drafted_too(engine: Engine) -> None:
    """Unlike drafts from the context, a draft model drafts free text as well."""
    reply = ask(engine, FREE[0], DRAFT, temperature=0)
    ids = reply["choices"][0]["token_ids"]
    assert ids == greedy_ids([{"role": "user", "content": FREE[0]}], MAX_TOKENS)[:len(ids)]
    extra = reply["usage"]["extra"]
    assert extra["accepted_draft_tokens"] == extra["draft_tokens"] >= len(ids) - 8


@pytest.mark.parametrize(("draft", "why"), [("tiny-chat", "vocabularies differ"), (MODEL, "another chat model"),
                                            ("not-loaded", "not-loaded")])
def test_a_draft_model_that_cannot_draft_is_refused_by_field(engine: Engine, draft: str, why: str) -> None:
    with pytest.raises(CsiError) as caught:
        ask(engine, FREE[1], draft, temperature=0)
    assert caught.value.param in ("extra_body.draft_model", "model") and why in str(caught.value), caught.value
