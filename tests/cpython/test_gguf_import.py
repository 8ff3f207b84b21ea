"""GGUF import (``buildtools/models/gguf_import.py``) round trip on GGUF files the test writes itself:
tiny-chat's float weights, q/k rows permuted as llama.cpp's converter does, 2-D weights quantized by
``gguf.quants`` (Q8_0, Q4_0, Q5_0, Q5_1, one file each; ``ffn_down``'s 688-wide rows stay F16) or,
for the K-quants, by llama.cpp's quantizer from an F32 file (Q4_K_M: Q4_K and Q6_K; Q5_K_M: Q5_K
and Q6_K; Q6_K; Q2_K: Q2_K, Q3_K and Q6_K; llama.cpp chooses per tensor).

References are computed here: the float model with the weights ``gguf.quants.dequantize`` gives
back from the very blocks in the file (rows un-permuted by this test's own inverse), and the
unquantized float model itself. The worker's own expansion (``worker/gguf_blocks.js``) runs in node
on the imported file and is held to the same weights."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch

from buildtools.models.gguf_import import Report
from csi.backends.cpython import CPythonBackend
from tests.support.aio import run_async
from tests.support.gguf_files import (
    TINY_CHAT,
    WrittenGGUF,
    matrix_types,
    quantize_tiny_chat_gguf,
    write_foreign_gguf,
    write_tiny_chat_gguf,
)
from tests.support.onnx_greedy import onnx_greedy
from tests.support.paths import ROOT
from tests.support.prompts import PROMPTS
from tests.support.reference import hf_chat, hf_prompt_ids
from tests.support.smollm2_reference import one_torch_thread

STEPS = 8  # greedy steps decoded on the KV cache after each prompt
# file type -> the types its 2-D tensors must include (llama.cpp's K-quant files mix types)
LLAMA_CPP_FILES = {"Q4_K_M": {"Q4_K", "Q6_K"}, "Q5_K_M": {"Q5_K", "Q6_K"}, "Q6_K": {"Q6_K"},
                   "Q2_K": {"Q2_K", "Q3_K", "Q6_K"}}
# onnx/model.onnx / the fp32 weights' bytes, at most (tiny-chat: ffn_down stays F16 in every file)
SIZE_RATIO = {"Q8_0": 0.33, "Q4_0": 0.22, "Q5_0": 0.24, "Q5_1": 0.26, "Q4_K_M": 0.23, "Q5_K_M": 0.25,
              "Q6_K": 0.27, "Q2_K": 0.19}


@dataclass
class Imported:
    qtype: str
    gguf: WrittenGGUF
    folder: Path
    report: Report


@pytest.fixture(scope="module", params=["Q8_0", "Q4_0", "Q5_0", "Q5_1", *LLAMA_CPP_FILES])
def imported(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Imported:
    from buildtools.models.gguf_import import import_gguf

    qtype = request.param
    tmp = tmp_path_factory.mktemp(f"gguf-{qtype}")
    if qtype in LLAMA_CPP_FILES:
        written = quantize_tiny_chat_gguf(tmp / f"tiny-chat-{qtype}.gguf", qtype)
        assert LLAMA_CPP_FILES[qtype] <= set(matrix_types(written)), matrix_types(written)
    else:
        written = write_tiny_chat_gguf(tmp / f"tiny-chat-{qtype}.gguf", qtype)
    # import_gguf checks itself against transformers' reading of the file (logits and greedy ids)
    report = import_gguf(written.path, tmp / "models" / "tiny-gguf", max_logit_diff=1e-4)
    return Imported(qtype, written, tmp / "models" / "tiny-gguf", report)


def torch_model(weights: dict[str, np.ndarray] | None = None) -> torch.nn.Module:
    """tiny-chat in HF transformers; with ``weights``, those in place of its own."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(TINY_CHAT, dtype=torch.float32).eval()
    if weights is not None:
        model.load_state_dict({k: torch.from_numpy(v) for k, v in weights.items()}, strict=True)
    return model


def torch_logits(model: torch.nn.Module, ids: list[int]) -> np.ndarray:
    with torch.no_grad(), one_torch_thread():
        return model(torch.tensor([ids])).logits[0].numpy()


def test_imported_logits_are_the_dequantized_models_and_within_the_quantization_error(imported: Imported) -> None:
    float_model = torch_model()
    dequantized_model = torch_model(imported.gguf.dequantized)
    for messages in PROMPTS[:3]:
        ids = hf_prompt_ids(messages)
        tokens, ours = onnx_greedy(imported.folder, ids, STEPS)
        sequence = ids + tokens[:-1]
        deq = torch_logits(dequantized_model, sequence)[len(ids) - 1:]
        flt = torch_logits(float_model, sequence)[len(ids) - 1:]
        # the same float32 weights, summed in another order: ~1e-5 on logits of magnitude ~10
        assert np.abs(ours - deq).max() < 1e-4
        assert tokens == deq.argmax(-1).tolist()
        # what quantizing costs, measured on torch; the import adds nothing to it
        quantization_error = np.abs(deq - flt).max()
        assert quantization_error > 1e-3, "the weights were not quantized"
        assert np.abs(ours - flt).max() <= 1.05 * quantization_error


def fingerprint(a: np.ndarray) -> tuple[tuple[int, ...], str]:
    a = np.ascontiguousarray(a, dtype=np.float32)
    return a.shape, hashlib.sha256(a.tobytes()).hexdigest()


def test_onnxruntime_folds_the_blocks_into_exactly_the_dequantized_weights(imported: Imported, tmp_path: Path) -> None:
    """At session start the in-graph expansion is folded away (no BitShift left) and leaves every
    weight bit for bit equal to ``gguf.quants.dequantize`` of its blocks (as is or transposed)."""
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = str(tmp_path / "folded.onnx")
    ort.InferenceSession(str(imported.folder / "onnx" / "model.onnx"), options, providers=["CPUExecutionProvider"])
    folded = onnx.load(str(tmp_path / "folded.onnx"))
    assert not {"BitShift"} & {n.op_type for n in folded.graph.node}
    present = {fingerprint(numpy_helper.to_array(i)) for i in folded.graph.initializer
               if i.data_type == onnx.TensorProto.FLOAT and len(i.dims) == 2}
    matrices = {k: w for k, w in imported.gguf.dequantized.items() if w.ndim == 2}
    missing = [k for k, w in matrices.items() if fingerprint(w) not in present and fingerprint(w.T) not in present]
    assert missing == []
    assert len(matrices) == 4 * 7 + 2


EXPAND = """
import { readFileSync, writeFileSync } from "node:fs";
const [module, model, graph, data] = process.argv.slice(1);
const { expandBlocks } = await import(module);
const made = expandBlocks(new Uint8Array(readFileSync(model)));
writeFileSync(graph, made.graph);
writeFileSync(data, made.data);
"""


def test_the_workers_expansion_makes_the_same_weights_and_logits(imported: Imported, tmp_path: Path) -> None:
    """worker/gguf_blocks.js, run in node on the imported file, makes every weight bit for bit as
    ``gguf.quants.dequantize`` gives it (as onnxruntime's folding does, above), and its graph
    (expansion nodes and blocks gone, weights as external data) decodes as the file does."""
    import onnx

    folder = tmp_path / "models" / "tiny-gguf"
    shutil.copytree(imported.folder, folder)
    model = folder / "onnx" / "model.onnx"
    recipes = json.loads({p.key: p.value for p in onnx.load(str(model), load_external_data=False).metadata_props}
                         ["csi.gguf_blocks"])
    subprocess.run(["node", "--input-type=module", "-e", EXPAND, (ROOT / "worker" / "gguf_blocks.js").as_uri(),
                    str(model), str(model), str(model.parent / "gguf_expanded.bin")], check=True, timeout=120)
    from onnx import numpy_helper

    expanded = onnx.load(str(model))
    assert not [n.name for n in expanded.graph.node if n.output[0].startswith("gguf/")]
    assert not [i.name for i in expanded.graph.initializer if i.name.startswith("gguf/")]
    weights = {i.name: numpy_helper.to_array(i) for i in expanded.graph.initializer}
    made = {fingerprint(weights[r["out"]]) for r in recipes}
    matrices = {k: w for k, w in imported.gguf.dequantized.items() if w.ndim == 2}
    assert len(recipes) == len(matrices) == 4 * 7 + 2
    missing = [k for k, w in matrices.items() if fingerprint(w) not in made and fingerprint(w.T) not in made]
    assert missing == []
    ids = hf_prompt_ids(PROMPTS[0])
    tokens, ours = onnx_greedy(folder, ids, STEPS)
    file_tokens, file_logits = onnx_greedy(imported.folder, ids, STEPS)
    assert tokens == file_tokens
    assert np.abs(ours - file_logits).max() < 1e-5


def test_the_file_keeps_the_blocks_not_fp32(imported: Imported) -> None:
    """onnx/model.onnx is about the size of the GGUF's tensors (F16 and blocks stored as they are),
    far from the fp32 model's."""
    size = (imported.folder / "onnx" / "model.onnx").stat().st_size
    fp32 = sum(w.nbytes for w in imported.gguf.dequantized.values())
    assert abs(size - imported.gguf.tensor_bytes) < 0.08 * imported.gguf.tensor_bytes
    assert size < SIZE_RATIO[imported.qtype] * fp32
    assert imported.report.kept == dict(matrix_types(imported.gguf))
    if imported.qtype not in LLAMA_CPP_FILES:
        assert imported.report.kept == {imported.qtype: 4 * 6 + 2, "F16": 4}
    assert imported.report.dequantized == {}


def test_the_tokenizer_and_chat_template_come_through(imported: Imported) -> None:
    """The imported folder tokenizes chats exactly as tiny-chat's own folder does, in HF
    transformers and in csi's backend, and stops on the GGUF's EOS."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(imported.folder)
    backend = CPythonBackend(imported.folder.parent)
    info = run_async(backend.load_model(imported.folder.name, "cpu", None))
    assert info.eos_token_ids == (2,)
    for messages in PROMPTS:
        expected = hf_prompt_ids(messages)
        assert list(tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True,
                                            return_dict=False)) == expected
        assert backend.apply_chat_template(imported.folder.name, messages) == expected
    text = "Ünïcödé  and\n\n  spaces 12345 <|im_end|>"
    assert backend.encode(imported.folder.name, text) == hf_chat()[0].encode(text)
    assert json.loads((imported.folder / "config.json").read_text())["num_key_value_heads"] == 2


def test_build_py_refuses_another_architecture_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "other.gguf"
    write_foreign_gguf(path, "gpt2")
    model_id = "test-refused-gpt2"
    out = subprocess.run([sys.executable, str(ROOT / "build.py"), "import-gguf", str(path), "--id", model_id],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "unsupported architecture 'gpt2'" in out.stderr
    assert "gemma3, llama, phi3, qwen2 and qwen3 architectures" in out.stderr
    assert not (ROOT / "imported" / model_id).exists()
