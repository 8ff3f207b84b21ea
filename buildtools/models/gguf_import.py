"""A GGUF file -> a model folder transformers.js (and csi-web) loads, its quantized blocks kept.

GGUF is the format people hold local models in (llama.cpp, Ollama, LM Studio). This turns one into
transformers.js's layout (``config.json``, ``generation_config.json``, ``tokenizer.json``,
``tokenizer_config.json`` with the chat template, ``onnx/model.onnx``) with the page's own code
(``csi.gguf``: the families, refusals, decoder graph, tokenizer and sampling the worker uses when it
opens a GGUF itself). What the import adds is where the weights live:

- every 2-D weight stored in the GGUF as Q4_0, Q4_1, Q8_0, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K or Q6_K
  is put in the graph **as its blocks** (``gguf_blocks``: Q4_0/Q4_1/Q8_0 as they are; the others
  unpacked into bit planes and per-block integer scales, about the GGUF's size) followed by the few
  nodes that expand them (shift, cast, multiply, add, reshape). Those nodes depend on initializers
  alone, so onnxruntime folds them into fp32 weights when the session starts (the worker expands
  them itself, ``worker/gguf_blocks.js``): the file is the GGUF's size, the weights in memory are
  bit for bit gguf-py's dequantization of the file;
- F16 matrices are stored as fp16 and cast (exact); vectors and every other type (BF16, IQ*, TQ*, ...)
  are stored dequantized to fp32, and the report says so.

Each import is checked against transformers' own reading of the file (logits and greedy ids).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from csi.gguf.graph import DecoderGraph
from csi.gguf.page import PageModel, gguf_model
from csi.gguf.spec import GGUFModelError, TensorInfo

from .gguf_blocks import PLANE_TYPES, RAW_TYPES, GraphEditor, expand_planes, expand_raw, raw_blocks, unpack

# The model property listing each expansion: {out, kind, q, d, m, dims, transposed} (Q4_0/Q4_1/Q8_0),
# {out, kind, dims, transposed, planes, offset, shape, d, sc, sc_signed, mn, msc, nibbles} (the planes
# layout of gguf_blocks) or {out, kind: "F16", q, dims}.
BLOCKS_KEY = "csi.gguf_blocks"
# The config keys transformers' own GGUF reader leaves at its class defaults, per family: the check
# against transformers' reading takes them from the import's config (the weights stay transformers' reading).
UNREAD_BY_TRANSFORMERS = {
    "qwen3": ("head_dim",),
    "gemma3_text": ("query_pre_attn_scalar", "final_logit_softcapping", "attn_logit_softcapping", "layer_types",
                    "sliding_window", "rope_parameters"),
    "phi3": ("rope_parameters", "sliding_window", "original_max_position_embeddings", "pad_token_id"),
}


class GGUFImportError(ValueError):
    """A GGUF file this importer cannot turn into a model folder; the message says why."""


def read_header(path: Path) -> tuple[dict[str, Any], list[TensorInfo]]:
    """The file's metadata (plain Python values) and tensor table, as the worker's reader gives them."""
    from gguf import GGUFReader

    reader = GGUFReader(str(path))
    meta: dict[str, Any] = {}
    for key, f in reader.fields.items():
        try:
            meta[key] = f.contents()
        except Exception:  # noqa: BLE001 - exotic field types carry nothing the model needs
            continue
    tensors = [TensorInfo(t.name, tuple(int(d) for d in t.shape), int(t.tensor_type), int(t.data_offset),
                          int(t.n_bytes)) for t in reader.tensors]
    return meta, tensors


@dataclass
class GGUFFile:
    """A GGUF file read as the page reads it: metadata, tensor table and the model folder's parts."""

    path: Path
    meta: dict[str, Any]
    tensors: list[TensorInfo]
    model: PageModel


def read_gguf(path: Path) -> GGUFFile:
    """Read ``path``'s header; refuse (``GGUFImportError``) what csi-web does not run, as the page does."""
    try:
        meta, tensors = read_header(path)
    except Exception as exc:  # noqa: BLE001 - the reader raises bare ValueErrors and struct errors
        raise GGUFImportError(f"{path} is not a readable GGUF file: {exc}") from exc
    try:
        return GGUFFile(path, meta, tensors, gguf_model(meta, tensors, budget=sys.maxsize))
    except GGUFModelError as exc:
        raise GGUFImportError(str(exc)) from exc


def unread(config: dict[str, Any]) -> dict[str, Any]:
    """The keys of the import's ``config`` that transformers' GGUF reader would leave at their defaults."""
    return {k: config[k] for k in UNREAD_BY_TRANSFORMERS.get(config.get("model_type", ""), ()) if k in config}


def hf_config(gguf: GGUFFile) -> dict[str, Any]:
    """The Hugging Face ``config.json``: the page's, with what only the file's data holds (LongRoPE's
    factor lists)."""
    config = json.loads(gguf.model.files["config.json"])
    rope = config.get("rope_parameters") or {}
    if rope.get("rope_type") == "longrope":
        table = {t.name: t for t in gguf.tensors}
        raw = np.memmap(gguf.path, dtype=np.uint8, mode="r")
        for kind in ("short", "long"):
            t = table[f"rope_factors_{kind}.weight"]
            rope[f"{kind}_factor"] = np.frombuffer(raw[t.offset:t.offset + t.size], np.float32).tolist()
    return config


# ------------------------------------------------------------------ blocks in the graph


@dataclass
class Report:
    """What the import did with each tensor type."""

    kept: dict[str, int] = field(default_factory=dict)  # GGUF type -> matrices stored as blocks / fp16
    dequantized: dict[str, int] = field(default_factory=dict)  # GGUF type -> matrices stored as fp32

    def lines(self) -> list[str]:
        out = [f"  {k}: {v} tensors stored as they are (exact)" for k, v in sorted(self.kept.items())]
        out += [f"  {k}: {v} tensors dequantized to fp32" for k, v in sorted(self.dequantized.items())]
        return out


def store_blocks(graph: DecoderGraph, path: Path, onnx_path: Path) -> Report:
    """Write ``graph`` to ``onnx_path`` with the weights of the GGUF at ``path`` inside it: its
    matrices as their blocks (or fp16) with the nodes that expand them, the rest as fp32."""
    from gguf import GGMLQuantizationType
    from gguf.quants import dequantize

    proto = onnx.load_model_from_string(graph.model)
    weights = {w.tensor: w for w in graph.weights}
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    edit = GraphEditor()
    recipes: list[dict[str, Any]] = []
    keep: list[onnx.TensorProto] = []
    report = Report()
    for init in proto.graph.initializer:
        w = weights.get(init.name)
        if w is None:
            keep.append(init)
            continue
        kind = GGMLQuantizationType(w.type).name
        rows = np.asarray(raw[w.offset:w.offset + w.size]).reshape(w.rows, -1)
        if w.row_order is not None:
            rows = rows[list(w.row_order)]
        shape = (w.rows, w.cols)
        matrix = len(init.dims) == 2
        if matrix and kind in RAW_TYPES:
            recipes.append(expand_raw(edit, kind, raw_blocks(kind, rows), False, init.name, shape))
        elif matrix and kind in PLANE_TYPES:
            recipes.append(expand_planes(edit, kind, unpack(kind, rows), False, init.name, shape))
        elif matrix and kind == "F16":
            half = edit.constant("F16", rows.view(np.float16).reshape(shape))
            edit.nodes.append(helper.make_node("Cast", [half], [init.name], name=edit.name("cast"),
                                               to=TensorProto.FLOAT))
            recipes.append({"out": init.name, "kind": "F16", "q": half, "dims": list(shape)})
        else:
            values = dequantize(rows, GGMLQuantizationType(w.type)).astype(np.float32).reshape(tuple(init.dims))
            keep.append(numpy_helper.from_array(values, init.name))
            if matrix and kind != "F32":
                report.dequantized[kind] = report.dequantized.get(kind, 0) + 1
            continue
        report.kept[kind] = report.kept.get(kind, 0) + 1
    del proto.graph.initializer[:]
    proto.graph.initializer.extend(keep + edit.initializers)
    nodes = list(proto.graph.node)
    del proto.graph.node[:]
    proto.graph.node.extend(edit.nodes + nodes)  # the expansions first: the graph stays topologically sorted
    # the same expansions as data, for a loader that expands the blocks itself (worker/gguf_blocks.js)
    proto.metadata_props.add(key=BLOCKS_KEY, value=json.dumps(recipes, separators=(",", ":")))
    onnx.checker.check_model(proto)
    onnx_path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(proto, str(onnx_path))
    return report


# ----------------------------------------------------------------------------- build


def reference_model(path: Path, config: dict[str, Any] | None = None) -> Any:
    """transformers' own reading of the GGUF (its loader, dequantized to float32): the reference
    every import is checked against. The few config keys its reader leaves at the class defaults
    for the family (``UNREAD_BY_TRANSFORMERS``) are taken from ``config``."""
    import torch
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32,
                                                attn_implementation="eager", **unread(config or {})).eval()


def greedy_ids(session: Any, shape: Any, prompt: list[int], steps: int, eos: set[int]) -> list[int]:
    """Greedy decoding on an ORT session of the exported layout, one token per step after the prompt."""
    from .onnx_decoder import _inputs, _io_names

    names, _ = _io_names(shape)
    past: list[Any] = [np.zeros((1, shape.kv_heads, 0, shape.head_dim), np.float32)] * (2 * shape.layers)
    out: list[int] = []
    chunk = prompt
    for _ in range(steps):
        feeds = {n: np.asarray(t) for n, t in zip(names, _inputs(chunk, past), strict=True)}
        logits, *past = session.run(None, feeds)
        token = int(logits[0, -1].argmax())
        out.append(token)
        if token in eos:
            break
        chunk = [token]
    return out


def import_gguf(path: Path, out: Path, check_prompts: tuple[str, ...] = ("What is the capital of France?",),
                max_logit_diff: float = 1e-3) -> Report:
    """Turn the GGUF at ``path`` into the model folder ``out`` (replaced atomically), checked
    against transformers' reading of the same file: logits within ``max_logit_diff`` on a prefill
    and cached steps, and the same greedy ids on each chat prompt of ``check_prompts``."""
    import torch
    from transformers.utils import logging as hf_logging

    gguf = read_gguf(path)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    hf_logging.disable_progress_bar()
    try:
        return _import(gguf, out, check_prompts, max_logit_diff)
    finally:
        torch.set_num_threads(threads)


def _import(gguf: GGUFFile, out: Path, check_prompts: tuple[str, ...], max_logit_diff: float) -> Report:
    import onnxruntime as ort
    import torch
    from transformers import AutoTokenizer

    from .atomic_dir import replacing
    from .onnx_decoder import CacheShape, verify_decoder

    path = gguf.path
    config = hf_config(gguf)
    with replacing(Path(out).resolve()) as tmp:
        for name, text in gguf.model.files.items():
            if name != "config.json":
                (tmp / name).write_text(text)
        onnx_path = tmp / "onnx" / "model.onnx"
        report = store_blocks(gguf.model.graph, path, onnx_path)
        shape = CacheShape(config["num_hidden_layers"], config["num_key_value_heads"], config["head_dim"])
        reference = reference_model(path, config)
        worst = verify_decoder(reference, shape, onnx_path, config["vocab_size"], seed=11, max_diff=max_logit_diff)
        tokenizer = AutoTokenizer.from_pretrained(str(tmp))
        session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
        eos = set(np.atleast_1d(config.get("eos_token_id") or []).tolist())
        for prompt in check_prompts:
            ids = tokenizer.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True,
                                                tokenize=True, return_dict=False)
            with torch.no_grad():
                expected = reference.generate(input_ids=torch.tensor([ids]),
                                              attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                                              max_new_tokens=24, do_sample=False,
                                              eos_token_id=sorted(eos) or None)[0, len(ids):].tolist()
            got = greedy_ids(session, shape, ids, 24, eos)
            if got != expected:
                raise RuntimeError(f"greedy ids differ from transformers' on {prompt!r}: {got} vs {expected}")
            print(f"  {prompt!r} -> {tokenizer.decode(got, skip_special_tokens=True)!r}")
        del session, reference
        # where the model came from; csi-web's worker expands the blocks itself (worker/gguf_blocks.js)
        config["csi_gguf"] = {"file": path.name, "stored_as_blocks": report.kept, "dequantized": report.dequantized}
        (tmp / "config.json").write_text(json.dumps(config, indent=2) + "\n")
        size = onnx_path.stat().st_size
        template = "chat_template" in json.loads(gguf.model.files["tokenizer_config.json"])
        print(f"{path.name} -> {out.name}: {gguf.model.graph.spec.arch}, {config['num_hidden_layers']} x "
              f"{config['hidden_size']}, vocab {config['vocab_size']}, onnx/model.onnx {size / 1e6:.1f} MB "
              f"(GGUF {path.stat().st_size / 1e6:.1f} MB), max |logit diff| vs transformers {worst:.2e}, "
              f"chat template {'yes' if template else 'no'}")
        for line in report.lines():
            print(line)
    return report
