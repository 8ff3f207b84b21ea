"""A GGUF file -> a model folder transformers.js (and csi-web) loads, its quantized blocks kept.

GGUF is the format people hold local models in (llama.cpp, Ollama, LM Studio). This turns one into
transformers.js's layout (``config.json``, ``generation_config.json``, ``tokenizer.json``,
``tokenizer_config.json`` with the chat template, ``onnx/model.onnx``):

- The decoder is exported from PyTorch (``onnx_decoder.export_decoder``) with weights dequantized
  exactly as ``gguf``'s reference dequantizer does, then every 2-D weight stored in the GGUF as
  Q4_0, Q4_1, Q8_0, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K or Q6_K is put back in the graph **as its
  blocks** (``gguf_blocks``: Q4_0/Q4_1/Q8_0 as they are; the others unpacked into bit planes and
  per-block integer scales, about the GGUF's size) followed by the few nodes that expand them
  (shift, cast, multiply, add, reshape). Those nodes depend on initializers alone, so onnxruntime
  folds them into fp32 weights when the session starts: the file is the GGUF's size, the weights in
  memory are bit for bit the float ones, and decoding runs at fp32 speed.
- F16 weights are stored as fp16 and cast (exact); every other type (BF16, IQ*, TQ*, ...) is
  dequantized to fp32 and said so.
- The Llama, Qwen2, Qwen3, Gemma 3 (text) and Phi-3 families are supported (``gguf_families``:
  their configs, tensor names and what llama.cpp's converter did to them); anything else is
  refused naming the architecture.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from csi.gguf.sampling import generation_config_of_gguf

from . import gguf_families as families
from .gguf_blocks import PLANE_TYPES, RAW_TYPES, GraphEditor, expand_planes, expand_raw, raw_blocks, unpack
from .gguf_families import ARCHITECTURES, MODEL_TYPES

EXACT_TYPES = (*RAW_TYPES, *PLANE_TYPES, "F16")
FLOAT_TYPES = ("F32",)
# The model property listing each expansion: {out, kind, q, d, m, dims, transposed} (Q4_0/Q4_1/Q8_0),
# {out, kind, dims, transposed, planes, offset, shape, d, sc, sc_signed, mn, msc, nibbles} (the planes
# layout of gguf_blocks), {out, transpose_of, dims} (a tied LM head), or {out, kind: "F16", q, dims}.
BLOCKS_KEY = "csi.gguf_blocks"



class GGUFImportError(ValueError):
    """A GGUF file this importer cannot turn into a model folder; the message says why."""


@dataclass
class GGUFModel:
    """What the importer reads from a GGUF file: metadata, raw tensors and their types."""

    path: Path
    arch: str
    meta: dict[str, Any]
    tensors: dict[str, Any]  # name -> gguf ReaderTensor
    types: dict[str, str] = field(default_factory=dict)
    end_of_turn: list[int] = field(default_factory=list)  # ids of the vocabulary's end-of-turn tokens

    def get(self, key: str, default: Any = None) -> Any:
        return self.meta.get(f"{self.arch}.{key}", self.meta.get(key, default))


def read_gguf(path: Path) -> GGUFModel:
    """Read ``path``'s metadata and tensor table; refuse the architectures and variants not supported."""
    from gguf import GGUFReader

    try:
        reader = GGUFReader(str(path))
    except Exception as exc:  # noqa: BLE001 - the reader raises bare ValueErrors and struct errors
        raise GGUFImportError(f"{path} is not a readable GGUF file: {exc}") from exc
    meta: dict[str, Any] = {}
    for key, f in reader.fields.items():
        if key.startswith("tokenizer.ggml.") and key.split(".")[-1] in ("tokens", "merges", "token_type", "scores"):
            continue  # large lists: read through the tokenizer converter
        try:
            meta[key] = f.contents()
        except Exception:  # noqa: BLE001 - exotic field types carry nothing the importer needs
            continue
    arch = str(meta.get("general.architecture", ""))
    if arch not in ARCHITECTURES:
        *names, last = sorted(ARCHITECTURES)
        raise GGUFImportError(
            f"unsupported architecture {arch or '(none)'!r}: csi-web imports GGUF models of the "
            f"{', '.join(names)} and {last} architectures")
    tensors = {t.name: t for t in reader.tensors}
    model = GGUFModel(path, arch, meta, tensors, {n: t.tensor_type.name for n, t in tensors.items()})
    if arch in families.END_OF_TURN_FAMILIES and "tokenizer.ggml.tokens" in reader.fields:
        tokens = reader.fields["tokenizer.ggml.tokens"].contents()
        model.end_of_turn = [i for i, t in enumerate(tokens) if t in families.END_OF_TURN]
    reason = families.refuse(model)
    if reason is not None:
        raise GGUFImportError(reason)
    return model


def hf_config(model: GGUFModel) -> dict[str, Any]:
    """The Hugging Face ``config.json`` of the GGUF's model."""
    hidden = int(model.get("embedding_length"))
    heads = int(model.get("attention.head_count"))
    vocab = int(model.get("vocab_size", 0) or model.tensors["token_embd.weight"].shape[-1])
    config: dict[str, Any] = {
        "architectures": [ARCHITECTURES[model.arch]],
        "model_type": MODEL_TYPES.get(model.arch, model.arch),
        "vocab_size": vocab,
        "hidden_size": hidden,
        "intermediate_size": int(model.get("feed_forward_length")),
        "num_hidden_layers": int(model.get("block_count")),
        "num_attention_heads": heads,
        "num_key_value_heads": int(model.get("attention.head_count_kv", heads)),
        "head_dim": families.head_dim(model),
        "rms_norm_eps": _float32(model.get("attention.layer_norm_rms_epsilon", 1e-6)),
        "rope_theta": _float32(model.get("rope.freq_base", 10000.0)),
        "max_position_embeddings": families.context_length(model),
        "tie_word_embeddings": "output.weight" not in model.tensors,
        "hidden_act": "silu",
        "torch_dtype": "float32",
    }
    for key, name in (("bos_token_id", "tokenizer.ggml.bos_token_id"), ("eos_token_id", "tokenizer.ggml.eos_token_id"),
                      ("pad_token_id", "tokenizer.ggml.padding_token_id")):
        if name in model.meta:
            config[key] = int(model.meta[name])
    families.family_config(model, config)
    return config


def _float32(x: Any) -> float:
    """A GGUF float32 as the shortest decimal that is the same float32 (``1e-05``, not 9.99999974e-06)."""
    return float(str(np.float32(x)))


def _row_order(model: GGUFModel, name: str, rows: int) -> np.ndarray | None:
    """llama.cpp stores Llama's q/k projections with their rows permuted for its rotary layout;
    the row order that undoes it (``None``: rows as they are)."""
    if model.arch != "llama" or not (name.endswith("attn_q.weight") or name.endswith("attn_k.weight")):
        return None
    heads = int(model.get("attention.head_count"))
    if name.endswith("attn_k.weight"):
        heads = int(model.get("attention.head_count_kv", heads))
    index = np.arange(rows)
    # transformers' reverse_permute: reshape(heads, rows/heads/2, 2).swapaxes(1, 2)
    return index.reshape(heads, rows // heads // 2, 2).swapaxes(2, 1).reshape(rows)


def _raw_rows(model: GGUFModel, name: str) -> np.ndarray:
    """The tensor's rows as stored: ``[rows, bytes per row]`` for block types, values for floats."""
    t = model.tensors[name]
    data = np.asarray(t.data)
    order = _row_order(model, name, data.shape[0])
    return data if order is None else data[order]


def dequantized(model: GGUFModel, name: str) -> np.ndarray:
    """The tensor as float32 ``[rows, cols]`` (Hugging Face's orientation), as ``gguf`` dequantizes it."""
    from gguf import GGMLQuantizationType
    from gguf.quants import dequantize

    t = model.tensors[name]
    rows = _raw_rows(model, name)
    return np.ascontiguousarray(dequantize(rows, GGMLQuantizationType[t.tensor_type.name]).astype(np.float32))


def state_dict(model: GGUFModel) -> dict[str, np.ndarray]:
    """Every parameter of the Hugging Face model, dequantized."""
    out = {}
    for name in model.tensors:
        hf = families.hf_name(model.arch, name)
        if hf is not None:
            out[hf] = families.hf_value(model.arch, name, dequantized(model, name))
    return out


# ------------------------------------------------------------------ blocks in the graph


def _tensor_blocks(model: GGUFModel, name: str) -> Any:
    """A block-quantized tensor's parts, its rows un-permuted: ``gguf_blocks``' raw or planes layout."""
    kind = model.types[name]
    raw = _raw_rows(model, name)
    return raw_blocks(kind, raw) if kind in RAW_TYPES else unpack(kind, raw)


def _fingerprint(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a, dtype=np.float32).tobytes()).hexdigest()


@dataclass
class Report:
    """What the import did with each tensor type."""

    kept: dict[str, int] = field(default_factory=dict)  # GGUF type -> tensors stored as blocks / fp16
    dequantized: dict[str, int] = field(default_factory=dict)  # GGUF type -> tensors stored as fp32

    def lines(self) -> list[str]:
        out = [f"  {k}: {v} tensors stored as they are (exact)" for k, v in sorted(self.kept.items())]
        out += [f"  {k}: {v} tensors dequantized to fp32" for k, v in sorted(self.dequantized.items())]
        return out


def store_blocks(model: GGUFModel, onnx_path: Path) -> Report:
    """Replace the fp32 weights of the exported graph at ``onnx_path`` by the GGUF's own blocks.

    Each initializer is matched to its GGUF tensor by value (bit for bit, as is or transposed),
    so nothing depends on the exporter's names. Raises if a quantized tensor is found nowhere."""
    proto = onnx.load(str(onnx_path))
    graph = proto.graph
    wanted: dict[str, tuple[str, bool]] = {}  # fingerprint -> (gguf name, transposed)
    report = Report()
    for name, kind in model.types.items():
        if families.hf_name(model.arch, name) is None or len(model.tensors[name].shape) != 2:
            continue
        if kind in EXACT_TYPES:
            w = dequantized(model, name)
            wanted[_fingerprint(w)] = (name, False)
            wanted[_fingerprint(w.T)] = (name, True)
        elif kind not in FLOAT_TYPES:
            report.dequantized[kind] = report.dequantized.get(kind, 0) + 1
    edit = GraphEditor()
    expanded: dict[str, str] = {}  # GGUF name -> the initializer its first expansion makes
    recipes: list[dict[str, Any]] = []
    keep: list[onnx.TensorProto] = []
    for init in list(graph.initializer):
        hit = None
        if init.data_type == TensorProto.FLOAT and len(init.dims) == 2:
            hit = wanted.get(_fingerprint(numpy_helper.to_array(init)))
        if hit is None:
            keep.append(init)
            continue
        name, transposed = hit
        kind = model.types[name]
        if name in expanded:  # tied embeddings: the LM head is the lookup table transposed, stored once
            edit.nodes.append(helper.make_node("Transpose", [expanded[name]], [init.name], name=edit.name("transpose"),
                                               perm=[1, 0]))
            recipes.append({"out": init.name, "transpose_of": expanded[name], "dims": list(init.dims)})
        elif kind == "F16":
            w = dequantized(model, name)
            half = edit.constant("F16", (w.T if transposed else w).astype(np.float16))
            edit.nodes.append(helper.make_node("Cast", [half], [init.name], name=edit.name("cast"),
                                               to=TensorProto.FLOAT))
            recipes.append({"out": init.name, "kind": "F16", "q": half, "dims": list(init.dims)})
        else:
            expand = expand_raw if kind in RAW_TYPES else expand_planes
            recipes.append(expand(edit, kind, _tensor_blocks(model, name), transposed, init.name,
                                  tuple(init.dims)))  # type: ignore[arg-type]
        if name not in expanded:
            report.kept[kind] = report.kept.get(kind, 0) + 1
            expanded[name] = init.name
    missing = sorted({n for n, _ in wanted.values()} - set(expanded))
    if missing:
        raise RuntimeError(f"quantized tensors not found in the exported graph: {missing[:5]}")
    del graph.initializer[:]
    graph.initializer.extend(keep + edit.initializers)
    nodes = list(graph.node)
    del graph.node[:]
    graph.node.extend(edit.nodes + nodes)  # the expansions first: the graph stays topologically sorted
    # the same expansions as data, for a loader that expands the blocks itself (worker/gguf_blocks.js)
    helper.set_model_props(proto, {BLOCKS_KEY: json.dumps(recipes, separators=(",", ":"))})
    onnx.checker.check_model(proto)
    onnx.save(proto, str(onnx_path))
    return report


# ------------------------------------------------------------------------- tokenizer


def _pre_tokenizer(pre: str) -> dict[str, Any] | None:
    """The Hugging Face pre-tokenizer of llama.cpp's named BPE pre-tokenizer, where transformers'
    GGUF converter leaves a step out (``None``: keep the converter's)."""
    if pre == "smollm":  # SmolLM's tokenizer splits every digit before the byte-level step
        return {"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": True},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]}
    return None


def write_tokenizer(model: GGUFModel, out: Path) -> dict[str, Any]:
    """``tokenizer.json`` and ``tokenizer_config.json`` (with the GGUF's chat template); returns the
    tokenizer config."""
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    generic = model.meta.get("tokenizer.ggml.model") == "gpt2" and model.arch in families.FILE_TOKENIZER_FAMILIES
    loader = PreTrainedTokenizerFast if generic else AutoTokenizer
    tok = loader.from_pretrained(str(model.path.parent), gguf_file=model.path.name)
    tok.save_pretrained(str(out))
    for extra in ("chat_template.jinja", "special_tokens_map.json"):
        (out / extra).unlink(missing_ok=True)
    spec = json.loads((out / "tokenizer.json").read_text())
    pre = _pre_tokenizer(str(model.meta.get("tokenizer.ggml.pre", "")))
    if pre is not None:
        spec["pre_tokenizer"] = pre
    (out / "tokenizer.json").write_text(json.dumps(spec, ensure_ascii=False, indent=1) + "\n")
    config = json.loads((out / "tokenizer_config.json").read_text())
    template = model.meta.get("tokenizer.chat_template")
    if template:
        config["chat_template"] = template  # transformers.js reads it from here only
    config["model_max_length"] = families.context_length(model)
    config["clean_up_tokenization_spaces"] = False
    if generic:
        config["tokenizer_class"] = "PreTrainedTokenizerFast"  # the name transformers.js knows as well
    (out / "tokenizer_config.json").write_text(json.dumps(config, ensure_ascii=False, indent=2) + "\n")
    return config


# ----------------------------------------------------------------------------- build


def _torch_model(model: GGUFModel, config: dict[str, Any]) -> Any:
    """The Hugging Face model with this importer's own dequantized weights (what is exported)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    hf = AutoModelForCausalLM.from_config(AutoConfig.for_model(**config), attn_implementation="eager",
                                          dtype=torch.float32)
    weights = {k: torch.from_numpy(v) for k, v in state_dict(model).items()}
    missing, unexpected = hf.load_state_dict(weights, strict=False)
    missing = [m for m in missing if not (m == "lm_head.weight" and config["tie_word_embeddings"])]
    if missing or unexpected:
        raise GGUFImportError(f"the GGUF's tensors do not fill the {model.arch} model: missing {missing[:4]}, "
                              f"unexpected {unexpected[:4]}")
    hf.tie_weights()
    families.fix_rope(hf)
    return hf.eval()


def reference_model(path: Path, config: dict[str, Any] | None = None) -> Any:
    """transformers' own reading of the GGUF (its loader, dequantized to float32): the reference
    every import is checked against. The few config keys its reader leaves at the class defaults
    for the family (``families.UNREAD_BY_TRANSFORMERS``) are taken from ``config``."""
    import torch
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32,
                                                attn_implementation="eager", **families.unread(config or {})).eval()


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

    model = read_gguf(path)
    config = hf_config(model)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    hf_logging.disable_progress_bar()
    try:
        return _import(path, out, model, config, check_prompts, max_logit_diff)
    finally:
        torch.set_num_threads(threads)


def _import(path: Path, out: Path, model: GGUFModel, config: dict[str, Any], check_prompts: tuple[str, ...],
            max_logit_diff: float) -> Report:
    import onnxruntime as ort
    import torch
    from transformers import AutoTokenizer

    from .atomic_dir import replacing
    from .onnx_decoder import CacheShape, export_decoder, verify_decoder

    with replacing(Path(out).resolve()) as tmp:
        tok_config = write_tokenizer(model, tmp)
        hf = _torch_model(model, config)
        shape = CacheShape(config["num_hidden_layers"], config["num_key_value_heads"], config["head_dim"])
        onnx_path = tmp / "onnx" / "model.onnx"
        export_decoder(hf, shape, onnx_path, seed=7)
        del hf
        report = store_blocks(model, onnx_path)
        for extra in onnx_path.parent.iterdir():
            if extra != onnx_path:
                extra.unlink()  # external data of a large fp32 export, now inside the file
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
        config["transformers.js_config"] = {"dtype": "fp32"}
        # where the model came from; csi-web's worker expands the blocks itself (worker/gguf_blocks.js)
        config["csi_gguf"] = {"file": path.name, "stored_as_blocks": report.kept, "dequantized": report.dequantized}
        (tmp / "config.json").write_text(json.dumps(config, indent=2) + "\n")
        # sampling as the file declares it (general.sampling.*); none declared: the face's defaults
        generation = {**generation_config_of_gguf(model.meta), "bos_token_id": config.get("bos_token_id"),
                      "eos_token_id": config.get("eos_token_id"), "pad_token_id": config.get("pad_token_id")}
        (tmp / "generation_config.json").write_text(json.dumps(generation, indent=2) + "\n")
        size = onnx_path.stat().st_size
        print(f"{path.name} -> {out.name}: {model.arch}, {config['num_hidden_layers']} x {config['hidden_size']}, "
              f"vocab {config['vocab_size']}, onnx/model.onnx {size / 1e6:.1f} MB "
              f"(GGUF {path.stat().st_size / 1e6:.1f} MB), max |logit diff| vs transformers {worst:.2e}, "
              f"chat template {'yes' if 'chat_template' in tok_config else 'no'}")
        for line in report.lines():
            print(line)
    return report
