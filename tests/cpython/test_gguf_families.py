"""GGUF import of the Qwen3, Gemma 3 and Phi-3 families: a tiny random-weight model of each, made by
transformers (``tests/support/tiny_families.py``), converted to GGUF by llama.cpp's own
``convert_hf_to_gguf.py`` (``tests/support/llama_convert.py``; F32, so the file holds the model's
weights exactly), imported by ``build.py``'s importer, and held to the model it came from: the
imported ONNX, run by csi's CPython backend with its KV cache, gives torch's logits on that model
and the same greedy tokens. The importer checks itself against transformers' reading of the file
as well (``import_gguf``)."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.support.gguf_files import write_foreign_gguf
from tests.support.llama_convert import convert
from tests.support.onnx_greedy import onnx_greedy
from tests.support.paths import ROOT
from tests.support.prompts import PROMPTS
from tests.support.reference import hf_chat, hf_prompt_ids
from tests.support.smollm2_reference import one_torch_thread
from tests.support.tiny_families import FAMILIES, make_family_model

STEPS = 8
MAX_LOGIT_DIFF = 1e-3


@dataclass
class Imported:
    family: str
    source: torch.nn.Module  # the transformers model the GGUF was converted from
    gguf: Path
    folder: Path


# Qwen2 (biases) is held to its source by the page's graph (test_gguf_graph.py); the importer's
# Qwen2 path is the Llama one with biases, checked against transformers on every import
@pytest.fixture(scope="module", params=sorted(f for f in FAMILIES if f != "qwen2"))
def imported(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Imported:
    from buildtools.models.gguf_import import import_gguf

    family = request.param
    tmp = tmp_path_factory.mktemp(f"family-{family}")
    source = make_family_model(family, tmp / f"tiny-{family}")
    gguf = convert(tmp / f"tiny-{family}")
    folder = tmp / "models" / f"tiny-{family}-gguf"
    import_gguf(gguf, folder, max_logit_diff=1e-4)
    return Imported(family, source, gguf, folder)


def test_the_import_decodes_as_the_source_model(imported: Imported) -> None:
    """Prompts longer than Gemma's window of 4, then cached steps: every logit within 1e-3 of
    torch's on the model the GGUF was made from, and torch's greedy tokens."""
    worst = 0.0
    for messages in PROMPTS[:2]:
        ids = hf_prompt_ids(messages)
        assert len(ids) > 8
        tokens, ours = onnx_greedy(imported.folder, ids, STEPS)
        with torch.no_grad(), one_torch_thread():
            expected = imported.source(torch.tensor([ids + tokens[:-1]])).logits[0, len(ids) - 1:].numpy()
        assert tokens == expected.argmax(-1).tolist()
        worst = max(worst, float(np.abs(ours - expected).max()))
        assert float(np.abs(expected).max()) > 0.1  # logits that say something
    print(f"{imported.family}: max |logit diff| vs the source model {worst:.2e}")
    assert worst < MAX_LOGIT_DIFF


TRANSFORMERS_JS = """
const [module, dir, name, idsJson, steps] = process.argv.slice(1);
const { AutoModelForCausalLM, Tensor, env } = await import(module);
env.localModelPath = dir + "/";
env.allowRemoteModels = false;
const ids = JSON.parse(idsJson);
const model = await AutoModelForCausalLM.from_pretrained(name, { dtype: "fp32", device: "cpu" });
const input_ids = new Tensor("int64", BigInt64Array.from(ids.map(BigInt)), [1, ids.length]);
const attention_mask = new Tensor("int64", new BigInt64Array(ids.length).fill(1n), [1, ids.length]);
const { logits } = await model({ input_ids, attention_mask });
const vocab = logits.dims[2];
const last = Array.from(logits.data.slice((ids.length - 1) * vocab, ids.length * vocab));
const out = await model.generate({ input_ids, attention_mask, max_new_tokens: Number(steps), do_sample: false });
console.log(JSON.stringify({ last, greedy: out.tolist()[0].slice(ids.length).map(Number) }));
"""


def test_transformers_js_decodes_the_import_as_the_source_model(imported: Imported) -> None:
    """transformers.js (node, onnxruntime-node), as csi-web's worker uses it: its own position ids
    (1-based for gemma3_text), mask and cache handling, held to torch on the source model."""
    ids = hf_prompt_ids(PROMPTS[0])
    module = (ROOT / "node_modules" / "@huggingface" / "transformers" / "dist" / "transformers.node.mjs").as_uri()
    out = subprocess.run(["node", "--input-type=module", "-e", TRANSFORMERS_JS, module, str(imported.folder.parent),
                          imported.folder.name, json.dumps(ids), str(STEPS)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    with torch.no_grad(), one_torch_thread():
        expected = imported.source.generate(input_ids=torch.tensor([ids]), attention_mask=torch.ones(1, len(ids),
                                            dtype=torch.long), max_new_tokens=STEPS, do_sample=False,
                                            eos_token_id=None, output_logits=True, return_dict_in_generate=True)
    assert got["greedy"] == expected.sequences[0, len(ids):].tolist()
    diff = float(np.abs(np.array(got["last"]) - expected.logits[0][0].numpy()).max())
    print(f"{imported.family}: transformers.js max |logit diff| vs the source model {diff:.2e}")
    assert diff < MAX_LOGIT_DIFF


LLAMA_CPP_LOGITS = """
import json, sys
import llama_cpp
path, ids = sys.argv[1], json.loads(sys.argv[2])
llm = llama_cpp.Llama(model_path=path, n_ctx=256, n_batch=256, logits_all=True, verbose=False, n_threads=1,
                      type_k=0, type_v=0)  # GGML_TYPE_F32: a float32 KV cache, not the default float16
llm.eval(ids)
print(json.dumps([list(map(float, row)) for row in llm.scores[:len(ids)]]))
"""
# llama.cpp against the import on the same file, every prompt position: ~1e-5 where both compute in
# float32; Gemma's ~2.5e-3 is mostly ggml's GELU, which goes through a float16 table (the same
# rounding put into torch's GELU brings torch within 8e-4 of llama.cpp on this model)
LLAMA_CPP_MAX_DIFF = {"qwen3": 1e-4, "phi3": 1e-4, "phi3-longrope": 1e-4, "gemma3": 5e-3}


def test_llama_cpp_reads_the_file_as_the_import_does(imported: Imported) -> None:
    """llama.cpp itself (llama-cpp-python, built by the tests) runs the very GGUF: its logits on a
    chat prompt agree with the imported ONNX's and pick the same tokens at every position."""
    import onnxruntime as ort

    from buildtools.deps.llama_server import ensure_server
    from buildtools.models.onnx_decoder import CacheShape, _inputs, _io_names

    python, _ = ensure_server()
    ids = hf_prompt_ids(PROMPTS[0])
    out = subprocess.run([str(python), "-c", LLAMA_CPP_LOGITS, str(imported.gguf), json.dumps(ids)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    theirs = np.array(json.loads(out.stdout.strip().splitlines()[-1]), np.float32)
    config = json.loads((imported.folder / "config.json").read_text())
    shape = CacheShape(config["num_hidden_layers"], config["num_key_value_heads"], config["head_dim"])
    names, _ = _io_names(shape)
    past = [np.zeros((1, shape.kv_heads, 0, shape.head_dim), np.float32)] * (2 * shape.layers)
    session = ort.InferenceSession(str(imported.folder / "onnx" / "model.onnx"), providers=["CPUExecutionProvider"])
    ours = session.run(["logits"], {n: np.asarray(t) for n, t in zip(names, _inputs(ids, past), strict=True)})[0][0]
    diff = float(np.abs(ours - theirs).max())
    print(f"{imported.family}: llama.cpp max |logit diff| vs the import {diff:.2e} over {len(ids)} positions")
    assert ours.argmax(-1).tolist() == theirs.argmax(-1).tolist()
    assert diff < LLAMA_CPP_MAX_DIFF[imported.family]


def test_the_config_is_the_families(imported: Imported) -> None:
    config = json.loads((imported.folder / "config.json").read_text())
    source = imported.source.config
    assert config["model_type"] == source.model_type
    assert config["architectures"] == [type(imported.source).__name__]
    assert config["head_dim"] == getattr(source, "head_dim", source.hidden_size // source.num_attention_heads)
    assert config["num_key_value_heads"] == source.num_key_value_heads
    assert config["tie_word_embeddings"] == source.tie_word_embeddings
    if imported.family == "gemma3":
        assert config["layer_types"] == source.layer_types == ["sliding_attention"] * 5 + ["full_attention"]
        assert config["rope_parameters"] == source.rope_parameters
        for key in ("sliding_window", "final_logit_softcapping", "query_pre_attn_scalar", "hidden_activation"):
            assert config[key] == getattr(source, key), key
    if imported.family.startswith("phi3"):
        assert config["rope_parameters"]["partial_rotary_factor"] == 0.75
    if imported.family == "phi3-longrope":  # the short factors' context: the original one
        assert config["max_position_embeddings"] == source.original_max_position_embeddings == 512
        rope = config["rope_parameters"]
        assert rope["rope_type"] == "longrope"
        assert rope["short_factor"] == list(np.float32(source.rope_parameters["short_factor"]).tolist())
        assert rope["long_factor"] == list(np.float32(source.rope_parameters["long_factor"]).tolist())
        assert abs(rope["attention_factor"] - (1 + np.log(4) / np.log(512)) ** 0.5) < 1e-6


def test_the_tokenizer_comes_through(imported: Imported) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(imported.folder)
    text = "Ünïcödé  and\n\n  spaces 12345 <|im_end|>"
    assert tok.encode(text) == hf_chat()[0].encode(text)
    assert tok.decode(tok.encode(text)) == text
    assert len(tok) == 4096
    for messages in PROMPTS[:3]:
        assert list(tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True,
                                            return_dict=False)) == hf_prompt_ids(messages)


def test_generation_ends_on_the_end_of_turn_token_too(imported: Imported) -> None:
    """A Phi-3 GGUF names <|endoftext|> its EOS while its chat turns end on <|end|> (Gemma 3 base
    models: <eos> and <end_of_turn>): the import stops on both, as llama.cpp does. Here the file's
    EOS is <|im_end|> (2), tiny-chat's end of turn; named <|endoftext|> (0) instead, both end."""
    from buildtools.models.gguf_import import read_header
    from csi.gguf.spec import read_spec

    meta, tensors = read_header(imported.gguf)
    assert read_spec(meta, tensors).config["eos_token_id"] == 2
    meta["tokenizer.ggml.eos_token_id"] = 0
    assert read_spec(meta, tensors).config["eos_token_id"] == [0, 2]
    assert json.loads((imported.folder / "generation_config.json").read_text())["eos_token_id"] == 2


def test_gemma3_layer_pattern_follows_llama_cpp(tmp_path: Path) -> None:
    """Which layers slide: every sixth global by default (the converted file), or as the file's
    ``attention.sliding_window_pattern`` says (a period, or one flag per layer); none without a window."""
    from buildtools.models.gguf_import import read_header
    from csi.gguf.spec import read_spec

    make_family_model("gemma3", tmp_path / "tiny-gemma3")
    meta, tensors = read_header(convert(tmp_path / "tiny-gemma3"))
    s, f = "sliding_attention", "full_attention"
    assert read_spec(meta, tensors).config["layer_types"] == [s] * 5 + [f]
    meta["gemma3.attention.sliding_window_pattern"] = 3
    assert read_spec(meta, tensors).config["layer_types"] == [s, s, f, s, s, f]
    meta["gemma3.attention.sliding_window_pattern"] = [True, False, False, True, True, False]
    assert read_spec(meta, tensors).config["layer_types"] == [s, f, f, s, s, f]
    meta["gemma3.attention.sliding_window"] = 0
    config = read_spec(meta, tensors).config
    assert config["layer_types"] == [f] * 6 and config["sliding_window"] is None


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_q8_0_files_keep_their_blocks(family: str, tmp_path: Path) -> None:
    """The converter's Q8_0 file of each family: every matrix kept as its Q8_0 blocks (the file about
    the GGUF's size), the import within 1e-4 of transformers' reading of the file (``import_gguf``
    checks it) and no further from the source model than that reading is."""
    from gguf import GGUFReader

    from buildtools.models.gguf_import import import_gguf, reference_model

    source = make_family_model(family, tmp_path / f"tiny-{family}")
    gguf = convert(tmp_path / f"tiny-{family}", "q8_0")
    matrices = [t.name for t in GGUFReader(str(gguf)).tensors if len(t.shape) == 2]
    report = import_gguf(gguf, tmp_path / "models" / "q8", max_logit_diff=1e-4)
    assert report.kept == {"Q8_0": len(matrices)} and report.dequantized == {}
    size = (tmp_path / "models" / "q8" / "onnx" / "model.onnx").stat().st_size
    assert abs(size - gguf.stat().st_size) < 0.08 * gguf.stat().st_size
    ids = hf_prompt_ids(PROMPTS[0])
    tokens, ours = onnx_greedy(tmp_path / "models" / "q8", ids, STEPS)
    config = json.loads((tmp_path / "models" / "q8" / "config.json").read_text())
    with torch.no_grad(), one_torch_thread():
        sequence = torch.tensor([ids + tokens[:-1]])
        read = reference_model(gguf, config)(sequence).logits[0, len(ids) - 1:].numpy()
        exact = source(sequence).logits[0, len(ids) - 1:].numpy()
    assert tokens == read.argmax(-1).tolist()
    assert np.abs(ours - read).max() < 1e-4
    quantization_error = float(np.abs(read - exact).max())
    assert quantization_error > 1e-3, "the weights were not quantized"
    assert np.abs(ours - exact).max() <= 1.05 * quantization_error


@pytest.mark.parametrize("arch", ["gemma2", "phi2", "qwen3moe", "mistral3"])
def test_other_architectures_are_refused_by_name(arch: str, tmp_path: Path) -> None:
    from buildtools.models.gguf_import import GGUFImportError, read_gguf

    path = tmp_path / f"{arch}.gguf"
    write_foreign_gguf(path, arch)
    with pytest.raises(GGUFImportError, match=f"unsupported architecture '{arch}'"):
        read_gguf(path)


@pytest.mark.parametrize("scaling", ["yarn", "linear"])
def test_other_rope_scalings_are_refused_by_name(scaling: str, tmp_path: Path) -> None:
    """YaRN anywhere, linear outside Gemma 3 (its global layers): refused, naming the scaling."""
    from gguf import GGUFWriter, RopeScalingType

    from buildtools.models.gguf_import import GGUFImportError, read_gguf

    path = tmp_path / "qwen3-scaled.gguf"
    writer = GGUFWriter(str(path), "qwen3")
    writer.add_block_count(1)
    writer.add_rope_scaling_type(RopeScalingType(scaling))
    writer.add_tensor("token_embd.weight", np.zeros((16, 32), np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(GGUFImportError, match=f"qwen3 models with rope scaling are not supported .*'{scaling}'"):
        read_gguf(path)


@pytest.mark.parametrize(("arch", "factors"), [("qwen3", ("long", "short")), ("phi3", ("long",))])
def test_rope_factors_the_import_cannot_use_are_refused_by_name(arch: str, factors: tuple[str, ...],
                                                                tmp_path: Path) -> None:
    """LongRoPE factors outside Phi-3, or without their pair: refused, naming them."""
    from gguf import GGUFWriter

    from buildtools.models.gguf_import import GGUFImportError, read_gguf

    path = tmp_path / f"{arch}-factors.gguf"
    writer = GGUFWriter(str(path), arch)
    writer.add_block_count(1)
    writer.add_rope_scaling_orig_ctx_len(4096)
    writer.add_tensor("token_embd.weight", np.zeros((16, 32), np.float32))
    for kind in factors:
        writer.add_tensor(f"rope_factors_{kind}.weight", np.ones(8, np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(GGUFImportError, match=f"{arch} models with LongRoPE .*rope_factors_long.weight"):
        read_gguf(path)
