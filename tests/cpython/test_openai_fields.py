"""The OpenAI field table (README), row by row, on the real CPython backend: honored fields change
the output as documented (against HF transformers where a prompt is rendered), no-ops leave it
unchanged, refusals name the field."""

from __future__ import annotations

import base64
import json
import shutil

import numpy as np
import pytest

from csi.backends.cpython import CPythonBackend
from csi.core.engine import Engine
from csi.errors import InvalidInputError
from tests.support.aio import run_async
from tests.support.faces import chat_completion, completion, embeddings
from tests.support.paths import MODELS
from tests.support.reference import hf_chat, hf_prompt_ids, reference_token_embeddings, sentence_transformer

USER = [{"role": "user", "content": "Name a colour."}]
GREEDY = {"temperature": 0, "max_tokens": 8, "return_token_ids": True}
THINK_TEMPLATE = ("{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}<|assistant|>"
                  "{% if enable_thinking is defined and not enable_thinking %}<think>\n\n</think>\n\n{% endif %}")


@pytest.fixture(scope="module")
def engine() -> Engine:
    eng = Engine(CPythonBackend(MODELS))
    run_async(eng.load(["tiny-chat", "all-minilm-l6-v2"]))
    return eng


def chat(engine: Engine, **fields: object) -> dict:
    return run_async(chat_completion(engine, {"messages": USER, **GREEDY, **fields})).model_dump()


def refused(engine: Engine, fn: object, request: dict) -> InvalidInputError:
    with pytest.raises(InvalidInputError) as err:
        run_async(fn(engine, request))  # type: ignore[operator]
    return err.value


# ---- honored ------------------------------------------------------------------------------------


def test_max_completion_tokens_limits_the_reply_as_max_tokens_does(engine):
    base = {k: v for k, v in GREEDY.items() if k != "max_tokens"}
    newer = run_async(chat_completion(engine, {"messages": USER, **base, "max_completion_tokens": 3,
                                               "ignore_eos": True})).model_dump()
    older = run_async(chat_completion(engine, {"messages": USER, **base, "max_tokens": 3,
                                               "ignore_eos": True})).model_dump()
    assert newer["usage"]["completion_tokens"] == 3 and newer["choices"][0]["finish_reason"] == "length"
    assert newer["choices"][0]["token_ids"] == older["choices"][0]["token_ids"]


def test_a_developer_message_is_rendered_as_a_system_message():
    eng = Engine(CPythonBackend(MODELS))
    run_async(eng.load(["tiny-chat"]))
    msgs = [{"role": "developer", "content": "Answer briefly."}, *USER]
    out = run_async(chat_completion(eng, {"messages": msgs, **GREEDY})).model_dump()
    assert out["prompt_token_ids"] == hf_prompt_ids([{"role": "system", "content": "Answer briefly."}, *USER])


def test_refusals_and_tool_calls_in_history_are_what_the_assistant_said(engine):
    msgs = [*USER, {"role": "assistant", "content": None, "refusal": "I cannot say.", "tool_calls": None},
            {"role": "user", "content": [{"type": "text", "text": "Please?"}]},
            {"role": "assistant", "content": [{"type": "refusal", "refusal": "No."}]},
            {"role": "user", "content": "Why?"}]
    out = run_async(chat_completion(engine, {"messages": msgs, **GREEDY})).model_dump()
    assert out["prompt_token_ids"] == hf_prompt_ids([
        *USER, {"role": "assistant", "content": "I cannot say."}, {"role": "user", "content": "Please?"},
        {"role": "assistant", "content": "No."}, {"role": "user", "content": "Why?"}])


def test_enable_thinking_reaches_a_template_with_the_switch(tmp_path):
    """``extra_body.enable_thinking: false`` (and ``reasoning_effort: "none"``) render an empty think
    block, as HF's ``apply_chat_template(..., enable_thinking=False)`` does with the same template."""
    folder = tmp_path / "tiny-think"
    shutil.copytree(MODELS / "tiny-chat", folder)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config["chat_template"] = THINK_TEMPLATE
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    eng = Engine(CPythonBackend(tmp_path))
    run_async(eng.load(["tiny-think"]))
    tok, _ = hf_chat()

    def hf(**kw: object) -> list[int]:
        return list(tok.apply_chat_template(USER, chat_template=THINK_TEMPLATE, add_generation_prompt=True,
                                            tokenize=True, return_dict=False, **kw))

    def ours(**fields: object) -> list[int]:
        return run_async(chat_completion(eng, {"messages": USER, **GREEDY, **fields})).prompt_token_ids or []

    assert ours(extra_body={"enable_thinking": False}) == hf(enable_thinking=False) != hf()
    assert ours(reasoning_effort="none") == hf(enable_thinking=False)
    assert ours(extra_body={"enable_thinking": True}) == ours() == hf()


def test_webllm_logprobs_true_on_completions_is_shaped_as_chat(engine):
    webllm = run_async(completion(engine, {"prompt": "The colour", "temperature": 0, "max_tokens": 4,
                                           "logprobs": True, "top_logprobs": 2})).model_dump()
    legacy = run_async(completion(engine, {"prompt": "The colour", "temperature": 0, "max_tokens": 4,
                                           "logprobs": 2})).model_dump()
    content = webllm["choices"][0]["logprobs"]["content"]
    old = legacy["choices"][0]["logprobs"]
    assert [c["token"] for c in content] == old["tokens"]
    assert [c["logprob"] for c in content] == pytest.approx(old["token_logprobs"])
    assert [len(c["top_logprobs"]) for c in content] == [2] * len(content)
    for c, top in zip(content, old["top_logprobs"], strict=True):
        assert {t["token"]: t["logprob"] for t in c["top_logprobs"]} == pytest.approx(top)


def test_token_id_prompts_complete_as_torch_does_and_echo_their_text(engine):
    import torch

    tok, model = hf_chat()
    ids = hf_prompt_ids(USER)
    with torch.no_grad():
        out = model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                             do_sample=False, max_new_tokens=6, min_new_tokens=6, pad_token_id=0)
    for prompt in (ids, [ids]):  # token ids, and OpenAI's list of one prompt
        r = run_async(completion(engine, {"prompt": prompt, **GREEDY, "max_tokens": 6, "ignore_eos": True,
                                          "echo": True})).model_dump()
        assert r["prompt_token_ids"] == ids and r["choices"][0]["token_ids"] == out[0, len(ids):].tolist()
        assert r["choices"][0]["text"].startswith(tok.decode(ids, skip_special_tokens=True))  # as vLLM echoes


@pytest.mark.parametrize(("prompt", "message"), [
    ([5, 10**9], "outside the vocabulary"), (["a", "b"], "2 prompts"), ([[]], "empty"), ([-1], "prompt"),
])
def test_bad_token_prompts_are_refused_naming_the_prompt(engine, prompt, message):
    err = refused(engine, completion, {"prompt": prompt, "max_tokens": 2})
    assert err.param.startswith("prompt") and message in str(err)


def test_token_id_embedding_input_is_embedded_as_given(engine):
    st = sentence_transformer()
    fox = st.tokenizer("A red fox.")["input_ids"]  # with [CLS] and [SEP]: the text's own embedding
    rows = [fox, [2054, 2003, 1037], [7592]]
    batch = run_async(embeddings(engine, {"input": rows})).model_dump()
    single = run_async(embeddings(engine, {"input": rows[1]})).model_dump()
    got = np.array([d["embedding"] for d in batch["data"]])
    assert np.abs(got - reference_token_embeddings(rows)).max() < 1e-4
    assert np.abs(got[0] - st.encode(["A red fox."], normalize_embeddings=True)[0]).max() < 1e-4
    assert single["data"][0]["embedding"] == pytest.approx(batch["data"][1]["embedding"], abs=1e-5)
    assert batch["usage"]["prompt_tokens"] == sum(map(len, rows))


@pytest.mark.parametrize(("tokens", "message"), [
    ([1, 10**6], "outside the vocabulary"), ([[1], []], "empty"), ([[-3]], "outside"), ([0] * 600, "at most"),
])
def test_bad_token_id_embedding_input_is_refused_naming_it(engine, tokens, message):
    with pytest.raises(Exception) as err:
        run_async(embeddings(engine, {"input": tokens}))
    assert getattr(err.value, "param", None) == "input" and message in str(err.value)


def test_base64_embeddings_are_the_float32_values_little_endian(engine):
    text = ["A red fox.", "Ein roter Fuchs."]
    b64 = run_async(embeddings(engine, {"input": text, "encoding_format": "base64"})).model_dump()
    reference = sentence_transformer().encode(text, normalize_embeddings=True)
    for item, ref in zip(b64["data"], reference, strict=True):
        values = np.frombuffer(base64.b64decode(item["embedding"]), dtype="<f4")
        assert values.shape == ref.shape and np.allclose(values, ref, atol=1e-4)


def test_dimensions_equal_to_the_model_width_is_honored_and_shorter_is_refused(engine):
    out = run_async(embeddings(engine, {"input": "fox", "dimensions": 384})).model_dump()
    assert len(out["data"][0]["embedding"]) == 384
    assert refused(engine, embeddings, {"input": "fox", "dimensions": 128}).param == "dimensions"


# ---- accepted, no effect ------------------------------------------------------------------------


@pytest.mark.parametrize("fields", [
    {"store": True}, {"store": False}, {"metadata": {"app": "csi-web", "run": "1"}}, {"service_tier": "auto"},
    {"service_tier": "priority"}, {"user": "u-1"}, {"safety_identifier": "hash"}, {"prompt_cache_key": "k"},
    {"prediction": {"type": "content", "content": "Blue."}}, {"modalities": ["text"]}, {"verbosity": "medium"},
    {"reasoning_effort": "none"}, {"function_call": None, "functions": None, "audio": None},
    {"web_search_options": None}, {"parallel_tool_calls": True}, {"extra_body": {}},
    {"stream_options": None}, {"extra_body": {"enable_latency_breakdown": False}},
])
def test_no_op_fields_are_accepted_and_change_nothing(engine, fields):
    base = chat(engine)
    out = chat(engine, **fields)
    assert out["choices"][0]["token_ids"] == base["choices"][0]["token_ids"]
    assert out["prompt_token_ids"] == base["prompt_token_ids"]


# ---- refused, naming the field ------------------------------------------------------------------


FUNCTION = {"name": "f", "parameters": {"type": "object"}}


@pytest.mark.parametrize(("fields", "param"), [
    ({"modalities": ["text", "audio"]}, "modalities"),
    ({"audio": {"voice": "alloy", "format": "mp3"}}, "audio"),
    ({"reasoning_effort": "high"}, "reasoning_effort"),
    ({"verbosity": "low"}, "verbosity"),
    ({"web_search_options": {}}, "web_search_options"),
    ({"function_call": "auto"}, "function_call"),
    ({"max_tokens": 3, "max_completion_tokens": 4}, "max_completion_tokens"),
    ({"extra_body": {"enable_thinking": True}, "reasoning_effort": "none"}, "extra_body.enable_thinking"),
    ({"extra_body": {"max_tokens": 3}}, "extra_body.max_tokens"),
    ({"metadata": {f"k{i}": "v" for i in range(17)}}, "metadata"),
    ({"service_tier": "fastest"}, "service_tier"),
    ({"store": "yes"}, "store"),
    ({"tools": [{"type": "custom", "custom": {"name": "c"}}]}, "tools[0].type"),
    ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:,"}}]}]},
     "messages[0].content[0]"),
    ({"messages": [{"role": "user", "content": [
        {"type": "text", "text": "hi"}, {"type": "input_audio", "input_audio": {"data": "", "format": "wav"}}]}]},
     "messages[0].content[1]"),
    ({"messages": [{"role": "user", "content": [{"type": "file", "file": {"file_id": "f"}}]}]},
     "messages[0].content[0]"),
    ({"messages": [*USER, {"role": "assistant", "audio": {"id": "a"}}, *USER]}, "messages[1].audio"),
    ({"messages": [{"role": "function", "name": "f", "content": "x"}]}, "messages[0].name"),
    ({"messages": [{"role": "function", "content": "x"}]}, "messages[0].function.name"),
    ({"messages": [{"role": "user", "content": [{"type": "text", "text": 1}]}]}, "messages[0].content[0].text"),
    ({"temprature": 0.5}, "temprature"),
])
def test_what_cannot_be_honored_is_refused_naming_the_field(engine, fields, param):
    assert refused(engine, chat_completion, {"messages": USER, **fields}).param == param
    assert chat(engine)["choices"][0]["finish_reason"] in ("stop", "length")  # the engine goes on


@pytest.mark.parametrize(("fields", "param"), [
    ({"suffix": "end"}, "suffix"),
    ({"best_of": 3, "n": 1}, "best_of"),
    ({"top_logprobs": 2}, "top_logprobs"),
    ({"logprobs": 2, "top_logprobs": 2}, "top_logprobs"),
    ({"extra_body": {"enable_thinking": False}}, "extra_body.enable_thinking"),
])
def test_completion_fields_that_cannot_be_honored_are_refused(engine, fields, param):
    assert refused(engine, completion, {"prompt": "x", **fields}).param == param


def test_completion_best_of_equal_to_n_and_an_empty_suffix_are_accepted(engine):
    base = run_async(completion(engine, {"prompt": "The colour", "temperature": 0, "max_tokens": 4})).model_dump()
    out = run_async(completion(engine, {"prompt": "The colour", "temperature": 0, "max_tokens": 4, "best_of": 1,
                                        "suffix": "", "user": "u", "store": False})).model_dump()
    assert out["choices"][0]["text"] == base["choices"][0]["text"]


def test_latency_breakdown_has_one_entry_per_step_by_stage(engine):
    """WebLLM's ``usage.extra.latencyBreakdown``: seconds per generated token, by stage, with the
    forward pass; absent unless asked for."""
    req = {"max_tokens": 6, "ignore_eos": True, "temperature": 0.8, "top_p": 0.9,
           "logit_bias": {"5": 1.0}, "frequency_penalty": 0.2, "logprobs": True}
    plain = chat(engine, **req)
    assert "latencyBreakdown" not in plain["usage"]["extra"]
    timed = chat(engine, **req, extra_body={"enable_latency_breakdown": True})
    breakdown = timed["usage"]["extra"]["latencyBreakdown"]
    assert set(breakdown) == {"forwardTime", "logitProcessorTime", "grammarBitmaskTime", "penaltyTime",
                              "logitBiasTime", "sampleTime", "totalTime"}
    steps = timed["usage"]["completion_tokens"]
    assert steps == 6 and all(len(v) == steps for v in breakdown.values())
    assert all(t >= 0 for v in breakdown.values() for t in v)
    assert all(f > 0 for f in breakdown["forwardTime"])
    for i in range(steps):  # the parts of the per-token work add up to its total
        parts = sum(breakdown[k][i] for k in ("logitProcessorTime", "grammarBitmaskTime", "penaltyTime",
                                               "logitBiasTime", "sampleTime"))
        assert parts == pytest.approx(breakdown["totalTime"][i], abs=1e-6)
