"""RemoteLLM GenerationalGuts on the CPython backend, against HF transformers (torch) and numpy."""

from __future__ import annotations

import pytest

from csi.backends.cpython import CPythonBackend
from csi.core.engine import Engine
from csi.errors import ContextWindowExceededError, CsiError, InvalidInputError
from tests.support.aio import run_async
from tests.support.faces import remote_llm
from tests.support.insides_reference import INSIDES_MODELS, INSIDES_PROMPTS, check_insides, reference_insides
from tests.support.paths import MODELS


@pytest.fixture(scope="module", params=INSIDES_MODELS)
def engine(request: pytest.FixtureRequest) -> Engine:
    eng = Engine(CPythonBackend(MODELS))
    run_async(eng.load([request.param]))
    return eng


def _insides(engine: Engine, **request: object) -> dict:
    return run_async(remote_llm.generational_guts(engine, request))


def _model(engine: Engine) -> str:
    [model_id] = engine.models
    return model_id


@pytest.mark.parametrize("prompt", INSIDES_PROMPTS)
def test_insides_equal_torch_full_width(engine, prompt):
    reply = _insides(engine, prompt=prompt, fft_embeddings=False, embedding_trunkation=0, top_k_logits=10)
    check_insides(reply, reference_insides(_model(engine), prompt), fft=False, keep=0, top_k=10)


@pytest.mark.parametrize(("fft", "keep"), [(True, 7), (True, 0), (False, 3)])
def test_fft_and_truncation_equal_numpy(engine, fft, keep):
    prompt = INSIDES_PROMPTS[1]
    reply = _insides(engine, prompt=prompt, fft_embeddings=fft, embedding_trunkation=keep, top_k_logits=2)
    check_insides(reply, reference_insides(_model(engine), prompt), fft=fft, keep=keep, top_k=2)


def test_fields_left_out_take_the_seed_defaults(engine):
    reply = _insides(engine, prompt="Hello world")
    check_insides(reply, reference_insides(_model(engine), "Hello world"), fft=True, keep=25, top_k=5)
    assert all(len(t[f]) == 25 for t in reply["tokens"]
               for f in ("token_embedding", "positional_embedding", "hidden_state"))


def test_zero_top_k_asks_for_no_candidates(engine):
    reply = _insides(engine, prompt="Hello", top_k_logits=0)
    assert reply["generations"] == [] and reply["tokens"]


BAD = [
    ({"prompt": ""}, InvalidInputError, "prompt"),
    ({}, InvalidInputError, "prompt"),
    ({"prompt": "x", "embedding_trunkation": -1}, InvalidInputError, "embedding_trunkation"),
    ({"prompt": "x", "top_k_logits": -3}, InvalidInputError, "top_k_logits"),
    ({"prompt": "x", "top_k_logits": 2**31}, InvalidInputError, "top_k_logits"),
    ({"prompt": "x", "top_k_logits": 10**6}, InvalidInputError, "top_k_logits"),
    ({"prompt": "x", "top_k_logits": "5"}, InvalidInputError, "top_k_logits"),
    ({"prompt": "x", "fft_embeddings": "yes"}, InvalidInputError, "fft_embeddings"),
    ({"prompt": "x", "embedding_trunkation": 2.5}, InvalidInputError, "embedding_trunkation"),
    ({"prompt": "x", "top_k": 5}, InvalidInputError, "top_k"),
    ({"prompt": "x", "model": "nope"}, CsiError, "model"),
    ({"prompt": "word " * 3000}, ContextWindowExceededError, "prompt"),
]


@pytest.mark.parametrize(("request_", "error", "param"), BAD)
def test_bad_requests_are_typed_errors_and_the_engine_goes_on(engine, request_, error, param):
    with pytest.raises(error) as info:
        _insides(engine, **request_)
    assert info.value.param == param
    assert len(_insides(engine, prompt="ok", top_k_logits=1)["generations"]) == 1


def test_insides_leave_decoding_as_it_was(engine):
    from tests.support.faces import completion

    def greedy() -> list[int]:
        out = run_async(completion(engine, {"prompt": "The json module", "temperature": 0, "max_tokens": 12,
                                            "return_token_ids": True}))
        return out.choices[0].token_ids

    before = greedy()
    _insides(engine, prompt="something else entirely, to fill the insides session")
    assert greedy() == before


@pytest.mark.parametrize("rope", [
    {"rope_type": "default", "rope_theta": 10000.0},
    {"rope_type": "linear", "rope_theta": 10000.0, "factor": 4.0},
    {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
     "high_freq_factor": 4.0, "original_max_position_embeddings": 1024},
])
def test_rotary_frequencies_equal_transformers(rope):
    from transformers import LlamaConfig
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    from csi.core.insides import rotary_inv_freq

    config = LlamaConfig(hidden_size=256, num_attention_heads=4, max_position_embeddings=4096, rope_parameters=rope)
    if rope["rope_type"] == "default":
        want = LlamaRotaryEmbedding.compute_default_rope_parameters(config)[0].numpy()
    else:
        want = ROPE_INIT_FUNCTIONS[rope["rope_type"]](config, "cpu")[0].numpy()
    got = rotary_inv_freq(config.to_dict())
    assert len(got) == len(want)
    assert max(abs(a - b) / b for a, b in zip(got, want, strict=True)) < 1e-6
    legacy = {k: v for k, v in config.to_dict().items() if k != "rope_parameters"}
    legacy |= {"rope_theta": rope["rope_theta"], "rope_scaling": {k: v for k, v in rope.items() if k != "rope_theta"}}
    assert rotary_inv_freq(legacy) == got


def test_a_model_without_chat_template_refuses_messages_by_name():
    from tests.support.faces import chat_completion

    eng = Engine(CPythonBackend(MODELS))
    run_async(eng.load(["tiny-gpt2"]))
    with pytest.raises(InvalidInputError, match="no chat template") as info:
        run_async(chat_completion(eng, {"messages": [{"role": "user", "content": "hi"}]}))
    assert info.value.param == "messages"


@pytest.fixture(scope="module")
def quantized_models(tmp_path_factory: pytest.TempPathFactory):
    """tiny-chat quantized as transformers.js's q8 (onnxruntime dynamic int8: MatMulInteger head,
    int8 embedding table) and q4 (MatMulNBits) exports are."""
    import shutil

    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    src = MODELS / "tiny-chat"
    root = tmp_path_factory.mktemp("quantized")
    for name in ("q8", "q4"):
        (root / name / "onnx").mkdir(parents=True)
        for f in src.iterdir():
            if f.is_file():
                shutil.copy(f, root / name / f.name)
    quantize_dynamic(str(src / "onnx" / "model.onnx"), str(root / "q8" / "onnx" / "model.onnx"),
                     weight_type=QuantType.QInt8)
    q4 = MatMulNBitsQuantizer(onnx.load(str(src / "onnx" / "model.onnx")), block_size=32, is_symmetric=True)
    q4.process()
    q4.model.save_model_to_file(str(root / "q4" / "onnx" / "model.onnx"), use_external_data_format=False)
    return root


@pytest.mark.parametrize(("name", "head_op"), [("q8", "MatMulInteger"), ("q4", "MatMulNBits")])
def test_quantized_exports_show_their_insides(quantized_models, name, head_op):
    import numpy as np
    import onnx

    ops = {n.op_type for n in onnx.load(str(quantized_models / name / "onnx" / "model.onnx")).graph.node}
    assert head_op in ops
    eng = Engine(CPythonBackend(quantized_models))
    run_async(eng.load([name]))
    prompt = INSIDES_PROMPTS[1]
    reply = _insides(eng, prompt=prompt, fft_embeddings=False, embedding_trunkation=0, top_k_logits=1)
    ref = reference_insides("tiny-chat", prompt)
    assert [t["token_id"] for t in reply["tokens"]] == ref["ids"]
    token = np.asarray([t["token_embedding"] for t in reply["tokens"]])
    hidden = np.asarray([t["hidden_state"] for t in reply["tokens"]])
    # weights rounded to 8 or 4 bits: the rows within a quantization step, the states aligned
    assert np.abs(token - ref["token"]).max() < np.abs(ref["token"]).max() / 100
    cosine = (hidden * ref["hidden"]).sum(1) / np.linalg.norm(hidden, axis=1) / np.linalg.norm(ref["hidden"], axis=1)
    assert cosine.mean() > 0.99 and cosine.min() > 0.9
    assert reply["generations"][0]["id"] == int(np.argmax(ref["logits"]))
