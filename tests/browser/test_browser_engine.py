"""End to end in Debian's Chromium, WASM backend: page -> worker -> Pyodide/Python -> transformers.js."""

from __future__ import annotations

import numpy as np
import pytest

from csi.backends.cpython import CPythonBackend
from csi.core.engine import Engine
from tests.support.aio import run_async
from tests.support.faces import chat_completion
from tests.support.paths import MODELS
from tests.support.prompts import PROMPTS
from tests.support.reference import hf_greedy_ids, hf_prompt_ids, sentence_transformer

pytestmark = pytest.mark.browser

GREEDY_TOKENS = 40


def chat(engine_page, request):
    return engine_page.ok("return await engine.chat.completions.create(arg);", request)


def stream(engine_page, request):
    return engine_page.ok(
        """const chunks = [];
           for await (const c of await engine.chat.completions.create({...arg, stream: true})) chunks.push(c);
           return chunks;""",
        request,
    )


@pytest.mark.parametrize("messages", PROMPTS)
def test_greedy_ids_equal_hf_transformers(engine_page, messages):
    reply = chat(engine_page, {"messages": messages, "temperature": 0, "max_tokens": GREEDY_TOKENS,
                               "return_token_ids": True})
    assert reply["prompt_token_ids"] == hf_prompt_ids(messages)
    # all but the first token come from one-token decode steps on the worker's KV cache
    assert reply["choices"][0]["token_ids"] == hf_greedy_ids(messages, GREEDY_TOKENS)


def test_streamed_content_equals_non_streamed(engine_page):
    request = {"messages": PROMPTS[2], "temperature": 0, "max_tokens": 48}
    whole = chat(engine_page, request)
    chunks = stream(engine_page, request)
    streamed = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert streamed == whole["choices"][0]["message"]["content"]
    assert all(c["object"] == "chat.completion.chunk" and c["id"] == chunks[0]["id"] for c in chunks)
    assert chunks[-1]["choices"][0]["finish_reason"] == whole["choices"][0]["finish_reason"]
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks[:-1])
    assert len(chunks) > 5  # pushed token by token, not in one piece


def test_seeded_sampling_equals_the_cpython_backend(engine_page):
    request = {"messages": PROMPTS[0], "temperature": 0.9, "top_p": 0.9, "top_k": 50, "seed": 1234,
               "max_tokens": 32, "return_token_ids": True}
    browser = chat(engine_page, request)["choices"][0]["token_ids"]
    assert chat(engine_page, request)["choices"][0]["token_ids"] == browser

    async def on_cpython():
        engine = Engine(CPythonBackend(MODELS))
        await engine.load(["tiny-chat"])
        return (await chat_completion(engine, request)).choices[0].token_ids

    cpython = run_async(on_cpython())
    assert browser == cpython


def test_include_usage_and_timings(engine_page):
    chunks = stream(engine_page, {"messages": PROMPTS[1], "max_tokens": 8, "stream_options": {"include_usage": True},
                                  "ignore_eos": True})
    assert chunks[-1]["choices"] == []
    usage = chunks[-1]["usage"]
    assert usage["completion_tokens"] == 8 and usage["total_tokens"] == usage["prompt_tokens"] + 8
    assert usage["extra"]["decode_tokens_per_s"] > 0 and usage["extra"]["time_to_first_token_s"] > 0


def test_embeddings_match_sentence_transformers(engine_page):
    texts = ["The cat sits on the mat.", "Ein Hund läuft im Park.", "Rust borrow checker", "naïve café ☕"]
    out = engine_page.ok("return await engine.embeddings.create({input: arg, model: 'all-minilm-l6-v2'});", texts)
    assert out["object"] == "list" and [d["index"] for d in out["data"]] == list(range(len(texts)))
    ours = np.array([d["embedding"] for d in out["data"]])
    ref = sentence_transformer().encode(texts, normalize_embeddings=True)
    cos = (ours * ref).sum(axis=1) / np.linalg.norm(ours, axis=1) / np.linalg.norm(ref, axis=1)
    assert cos.min() >= 0.999
    tokens = sum(len(sentence_transformer().tokenizer(t)["input_ids"]) for t in texts)
    assert out["usage"] == {"prompt_tokens": tokens, "total_tokens": tokens}


@pytest.mark.parametrize(
    ("request_", "name", "param"),
    [
        ({"temperature": 0}, "InvalidInputError", "messages"),
        ({"messages": [{"role": "user", "content": "hi"}], "model": "no-such-model"},
         "ModelNotSupportedError", "model"),
        ({"messages": [{"role": "user", "content": "hi"}], "max_tokens": -1}, "InvalidInputError", "max_tokens"),
        ({"messages": [{"role": "user", "content": 7}]}, "InvalidInputError", "messages[0].content"),
        ({"messages": [{"role": "user", "content": "hi"}], "stream": True, "max_tokens": 0},
         "InvalidInputError", "max_tokens"),
    ],
)
def test_bad_input_gives_typed_error_and_engine_keeps_working(engine_page, request_, name, param):
    out = engine_page.call("return await engine.chat.completions.create(arg);", request_)
    assert not out["ok"]
    assert out["error"]["name"] == name and out["error"]["param"] == param and out["error"]["message"]
    good = {"messages": PROMPTS[0], "temperature": 0, "max_tokens": 12, "return_token_ids": True}
    assert chat(engine_page, good)["choices"][0]["token_ids"] == hf_greedy_ids(PROMPTS[0], 12)


def test_interrupt_ends_stream_with_abort_and_next_request_works(engine_page):
    out = engine_page.ok(
        """const chunks = [];
           const s = await engine.chat.completions.create({messages: arg, stream: true, ignore_eos: true,
                                                           max_tokens: 500, temperature: 0});
           for await (const c of s) { chunks.push(c); if (chunks.length === 5) engine.interruptGenerate(); }
           const next = await engine.chat.completions.create({messages: arg, max_tokens: 3, temperature: 0});
           return {n: chunks.length, last: chunks.at(-1).choices[0].finish_reason, next};""",
        PROMPTS[0],
    )
    assert out["last"] == "abort" and out["n"] < 50
    assert out["next"]["usage"]["completion_tokens"] == 3


def test_abandoned_stream_does_not_block_the_next_request(engine_page):
    out = engine_page.ok(
        """const s = await engine.chat.completions.create({messages: arg, stream: true, ignore_eos: true,
                                                           max_tokens: 600, temperature: 0});
           let n = 0;
           for await (const c of s) { if (++n === 1) break; }
           const t0 = performance.now();
           const next = await engine.chat.completions.create({messages: arg, max_tokens: 4, temperature: 0});
           return {ms: performance.now() - t0, tokens: next.usage.completion_tokens};""",
        PROMPTS[0],
    )
    assert out["tokens"] == 4


def test_no_request_left_127_0_0_1(engine_page):
    assert engine_page.requests, "the request listener saw nothing"
    assert engine_page.foreign_requests() == []


def test_load_reported_progress_with_stage_file_and_bytes(engine_page):
    progress = engine_page.ok("return window.progress;")
    assert {"pyodide", "wheels", "python-ready", "ready"} <= {p["stage"] for p in progress}
    model_files = [p for p in progress if p["stage"] == "progress" and p["file"] == "onnx/model.onnx"]
    assert model_files and all(set(p) >= {"stage", "file", "loaded", "total"} for p in model_files)
    assert max(p["loaded"] for p in model_files) == max(p["total"] for p in model_files) > 100_000
    fractions = [p["progress"] for p in progress]
    assert fractions[-1] == 1 and all(0 <= f <= 1 for f in fractions)


def test_greedy_logprobs_match_torch_in_the_browser(engine_page):
    from tests.support.reference import hf_next_logits
    from tests.support.sampling_reference import log_softmax

    reply = chat(engine_page, {"messages": PROMPTS[1], "temperature": 0, "max_tokens": 10, "logprobs": True,
                               "top_logprobs": 4, "return_token_ids": True, "ignore_eos": True})
    prompt, generated = reply["prompt_token_ids"], reply["choices"][0]["token_ids"]
    for i, entry in enumerate(reply["choices"][0]["logprobs"]["content"]):
        ref = log_softmax(hf_next_logits(prompt + generated[:i]))
        assert abs(entry["logprob"] - ref[generated[i]]) < 1e-3
        top = np.argsort(-ref, kind="stable")[:4]
        assert [t["logprob"] for t in entry["top_logprobs"]] == pytest.approx(ref[top].tolist(), abs=1e-3)


def test_n_streams_indexed_choices_with_penalties(engine_page):
    chunks = stream(engine_page, {"messages": PROMPTS[0], "n": 3, "seed": 5, "temperature": 1.0, "max_tokens": 10,
                                  "frequency_penalty": 0.5, "presence_penalty": 0.3, "repetition_penalty": 1.2,
                                  "logit_bias": {"16": -100}, "return_token_ids": True,
                                  "stream_options": {"include_usage": True}})
    by_index: dict[int, list[int]] = {}
    for c in chunks:
        for ch in c["choices"]:
            by_index.setdefault(ch["index"], []).extend(ch.get("token_ids") or [])
    assert sorted(by_index) == [0, 1, 2]
    assert all(16 not in ids for ids in by_index.values())
    assert chunks[-1]["usage"]["completion_tokens"] == sum(len(v) for v in by_index.values())


def test_second_turn_prefill_processes_only_new_tokens(engine_page):
    first = [{"role": "user", "content": "Tell me about os.path.join."}]
    r1 = chat(engine_page, {"messages": first, "temperature": 0, "max_tokens": 16})
    second = [*first, {"role": "assistant", "content": r1["choices"][0]["message"]["content"]},
              {"role": "user", "content": "Thanks. And os.path.split?"}]
    warm = chat(engine_page, {"messages": second, "temperature": 0, "max_tokens": 16, "return_token_ids": True})
    engine_page.ok("await engine.resetChat();")
    cold = chat(engine_page, {"messages": second, "temperature": 0, "max_tokens": 16, "return_token_ids": True})
    assert 0 < warm["usage"]["prompt_tokens_details"]["cached_tokens"] < warm["usage"]["prompt_tokens"]
    # resetChat dropped the cache in memory: what is cached came from a cache kept beyond the page, if any
    kept = cold["usage"]["extra"].get("prompt_cache_tokens", 0)  # from a cache kept beyond the page, if any
    assert cold["usage"]["prompt_tokens_details"]["cached_tokens"] == kept
    assert warm["choices"][0]["token_ids"] == cold["choices"][0]["token_ids"]


def test_the_four_faces_agree_in_the_browser(engine_page):
    prompt = "The json module"
    out = engine_page.ok(
        """const p = arg;
           const oa = await engine.completions.create({prompt: p, temperature: 0, max_tokens: 12});
           const [csi] = await engine.csi.complete([{model: 'tiny-chat', prompt: p,
                                                     params: {temperature: 0, max_tokens: 12, stop: [],
                                                              logprobs: 'sampled'}}]);
           const spin = await engine.llm.infer('tiny-chat', p, {temperature: 0, max_tokens: 12,
                                                                repeat_penalty: 1.0, top_k: 0, top_p: 1.0});
           const remote = await engine.remote.generate({api_key: '', prompts: [p], stop: []});
           const type = await engine.remote.getLlmType({api_key: ''});
           return {oa: oa.choices[0].text, csi: csi.text, spin: spin.text, usage: spin.usage,
                   remote: remote.generations[0].generations[0].text, type,
                   bytes: csi.logprobs[0].sampled.token instanceof Uint8Array};""",
        prompt,
    )
    assert out["oa"] == out["csi"] == out["spin"] and out["remote"].startswith(out["oa"])
    assert out["bytes"] and out["type"] == {"llm_type": "csi-web:tiny-chat"}
