"""The model forms of the weights-in-memory experiment (``buildtools/bench/nbits.py``): decoders of
real shapes with random weights, exported to fp32 and rewritten as 4-bit MatMulNBits, int8 and
4-bit-embedding forms."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
ORT_DIST = ROOT / "node_modules" / "onnxruntime-web" / "dist"
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--no-first-run", "--disable-quic", "--enable-unsafe-webgpu",
        "--enable-blink-features=ForceEagerMeasureMemory"]
BLOCK = 32
BITS = 4
FORMS = ("fp32", "nbits", "nbits_gbq", "q8", "q8_gbq", "q8c_gbq")
PROMPT = [(i * 7919) % 3000 + 100 for i in range(16)]
SEED = 31337

@dataclass(frozen=True)
class Shape:
    key: str
    arch: str
    vocab: int
    layers: int
    width: int
    heads: int
    kv_heads: int
    intermediate: int

    @property
    def head_dim(self) -> int:
        return self.width // self.heads


SHAPES = {
    "tiny": Shape("tiny", "llama", 4096, 2, 128, 4, 2, 256),  # a smoke test of the script itself
    "135m": Shape("135m", "llama", 49_152, 30, 576, 9, 3, 1536),  # SmolLM2-135M
    "0.5b": Shape("0.5b", "qwen2", 151_936, 24, 896, 14, 2, 4864),  # Qwen2.5-0.5B
    "1.5b": Shape("1.5b", "qwen2", 151_936, 28, 1536, 12, 2, 8960),  # Qwen2.5-1.5B
}


def log(message: str) -> None:
    print(f"[nbits {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# 4-bit block quantization (asymmetric, min/max per block of 32 along the reduction axis)


@dataclass
class Quantized:
    """Rows of a matrix [n, k] in 4-bit blocks along k: ``packed`` [n, k/BLOCK, BLOCK/2] (two codes a
    byte, the even element in the low nibble), ``scales`` [n, k/BLOCK] float32, ``zero_points``
    [n, ceil(k/BLOCK/2)] (two a byte, low nibble first)."""

    packed: np.ndarray
    scales: np.ndarray
    zero_points: np.ndarray

    @property
    def dequantized(self) -> np.ndarray:
        """The matrix [n, k] float32 these blocks stand for (computed each time: big models)."""
        n, nb, half = self.packed.shape
        codes = np.empty((n, nb, 2 * half), np.float32)
        codes[..., 0::2] = self.packed & 0x0F
        codes[..., 1::2] = self.packed >> 4
        zp = np.empty((n, 2 * self.zero_points.shape[1]), np.float32)
        zp[:, 0::2] = self.zero_points & 0x0F
        zp[:, 1::2] = self.zero_points >> 4
        codes -= zp[:, :nb, None]
        codes *= self.scales[..., None]
        return codes.reshape(n, -1)


def quantize_rows(w: np.ndarray, rows_at_once: int = 8192) -> Quantized:
    n, k = w.shape
    if k % BLOCK:
        raise ValueError(f"K={k} is not a multiple of {BLOCK}")
    nb = k // BLOCK
    levels = (1 << BITS) - 1
    packed = np.empty((n, nb, BLOCK // 2), np.uint8)
    scales = np.empty((n, nb), np.float32)
    zps = np.empty((n, nb + nb % 2), np.uint8)
    for r in range(0, n, rows_at_once):
        blocks = w[r:r + rows_at_once].astype(np.float32).reshape(-1, nb, BLOCK)
        lo = np.minimum(blocks.min(-1), 0.0)
        hi = np.maximum(blocks.max(-1), 0.0)
        scale = ((hi - lo) / levels).astype(np.float32)
        scale[scale == 0] = 1.0
        zp = np.clip(np.rint(-lo / scale), 0, levels).astype(np.uint8)
        q = np.clip(np.rint(blocks / scale[..., None]) + zp[..., None], 0, levels).astype(np.uint8)
        packed[r:r + rows_at_once] = q[..., 0::2] | (q[..., 1::2] << 4)
        scales[r:r + rows_at_once] = scale
        zps[r:r + rows_at_once, :nb] = zp
    zps[:, nb:] = 0
    zero_points = zps[:, 0::2] | (zps[:, 1::2] << 4)
    return Quantized(packed, scales, zero_points)


# ---------------------------------------------------------------------------------------------
# Models: a random fp32 export, then its three forms by graph surgery


def _export_fp32(shape: Shape, path: Path) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    from ..models.onnx_decoder import CacheShape, export_decoder

    torch.manual_seed(SEED)
    common = dict(vocab_size=shape.vocab, hidden_size=shape.width, intermediate_size=shape.intermediate,
                  num_hidden_layers=shape.layers, num_attention_heads=shape.heads,
                  num_key_value_heads=shape.kv_heads, max_position_embeddings=8192, tie_word_embeddings=True,
                  initializer_range=0.02)
    model: torch.nn.Module
    if shape.arch == "llama":
        model = LlamaForCausalLM(LlamaConfig(**common, rope_theta=100_000.0))
    else:
        model = Qwen2ForCausalLM(Qwen2Config(**common, rope_theta=1_000_000.0))
    model.eval()
    export_decoder(model, CacheShape(shape.layers, shape.kv_heads, shape.head_dim), path, SEED)


def _const_weights(graph: Any) -> tuple[list[Any], list[Any]]:
    """The MatMuls whose B is a 2-D initializer, and the Gathers whose data is one (the embedding)."""
    inits = {i.name: i for i in graph.initializer}
    matmuls = [n for n in graph.node if n.op_type == "MatMul" and n.input[1] in inits
               and len(inits[n.input[1]].dims) == 2]
    gathers = [n for n in graph.node if n.op_type == "Gather" and n.input[0] in inits
               and len(inits[n.input[0]].dims) == 2]
    return matmuls, gathers


def _save(model: Any, path: Path) -> None:
    import onnx

    path.parent.mkdir(parents=True, exist_ok=True)
    for old in (path, path.with_name(path.name + ".data")):
        old.unlink(missing_ok=True)
    onnx.save_model(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location=path.name + ".data", size_threshold=1024)


def _embedding_to_gbq(model: Any, quant: dict[str, Quantized]) -> None:
    """Every Gather of a 2-D initializer (the embedding) as a 4-bit GatherBlockQuantized."""
    from onnx import helper, numpy_helper

    graph = model.graph
    _, gathers = _const_weights(graph)
    gone: set[str] = set()
    new_inits: list[Any] = []
    for node in gathers:
        name = node.input[0]
        q = quant[name]
        if name not in gone:
            new_inits += [numpy_helper.from_array(q.packed.reshape(q.packed.shape[0], -1), name + "_q4"),
                          numpy_helper.from_array(q.scales, name + "_scales"),
                          numpy_helper.from_array(q.zero_points, name + "_zp")]
            gone.add(name)
        node.CopyFrom(helper.make_node("GatherBlockQuantized", [name + "_q4", node.input[1], name + "_scales",
                                                                 name + "_zp"],
                                       list(node.output), name=node.name + "_gbq", domain="com.microsoft",
                                       gather_axis=0, quantize_axis=1, block_size=BLOCK, bits=BITS))
    _swap_initializers(model, gone, new_inits)


def _swap_initializers(model: Any, gone: set[str], new_inits: list[Any]) -> None:
    from onnx import helper

    graph = model.graph
    keep = [i for i in graph.initializer if i.name not in gone]
    del graph.initializer[:]
    graph.initializer.extend(keep + new_inits)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))


def build_forms(shape: Shape, folder: Path, accuracy_level: int, forms: list[str]) -> dict[str, Path]:
    """``folder``/<form>/model.onnx (+ .data) for each of ``forms`` (and those they are made from),
    each built once."""
    import onnx
    from onnx import helper, numpy_helper

    paths = {form: folder / form / "model.onnx" for form in FORMS}
    wanted = set(forms) | ({"q8"} if "q8_gbq" in forms else set())
    wanted |= {"fp32"} if "q8" in wanted else set()
    missing = [f for f in FORMS if f in wanted and not paths[f].exists()]
    if not missing:
        return paths
    src = folder / "src" / "model.onnx"
    if not src.exists():
        log(f"{shape.key}: exporting a random fp32 decoder")
        _export_fp32(shape, src)
    log(f"{shape.key}: quantizing")
    model = onnx.load(str(src))
    matmuls, gathers = _const_weights(model.graph)
    inits = {i.name: i for i in model.graph.initializer}
    quant: dict[str, Quantized] = {}
    b_names = {n.input[1] for n in matmuls}
    for name in b_names:  # B [K, N]: MatMulNBits quantizes B^T [N, K] along K
        quant[name] = quantize_rows(numpy_helper.to_array(inits[name]).T)
    for name in {n.input[0] for n in gathers}:  # the table [V, D]: rows along D
        quant[name] = quantize_rows(numpy_helper.to_array(inits[name]))
    del model, inits, matmuls, gathers

    def load() -> tuple[Any, dict[str, Any]]:
        m = onnx.load(str(src))
        return m, {i.name: i for i in m.graph.initializer}

    if "fp32" in missing:  # the dequantized weights, in place
        log(f"{shape.key}: writing fp32 (dequantized)")
        model, inits = load()
        for name, q in quant.items():
            deq = q.dequantized.T.copy() if name in b_names else q.dequantized
            inits[name].CopyFrom(numpy_helper.from_array(deq, name))
        _save(model, paths["fp32"])
        del model, inits

    for form in ("nbits", "nbits_gbq"):
        if form not in missing:
            continue
        log(f"{shape.key}: writing {form}")
        model, inits = load()
        matmuls, gathers = _const_weights(model.graph)
        gone: set[str] = set()
        new_inits: list[Any] = []
        for node in matmuls:
            name = node.input[1]
            q = quant[name]
            n, nb = q.scales.shape
            if name not in gone:
                new_inits += [numpy_helper.from_array(q.packed, name + "_q4"),
                              numpy_helper.from_array(q.scales.reshape(-1), name + "_scales"),
                              numpy_helper.from_array(q.zero_points.reshape(-1), name + "_zp")]
                gone.add(name)
            node.CopyFrom(helper.make_node("MatMulNBits", [node.input[0], name + "_q4", name + "_scales",
                                                           name + "_zp"],
                                           list(node.output), name=node.name + "_nbits", domain="com.microsoft",
                                           K=nb * BLOCK, N=n, bits=BITS, block_size=BLOCK,
                                           accuracy_level=accuracy_level))
        for node in gathers:  # the embedding fp32 (dequantized, so the function is the same)
            name = node.input[0]
            inits[name].CopyFrom(numpy_helper.from_array(quant[name].dequantized, name))
        _swap_initializers(model, gone, new_inits)
        if form == "nbits_gbq":
            _embedding_to_gbq(model, quant)
        _save(model, paths[form])
        del model, inits, matmuls, gathers

    if "q8" in missing:
        log(f"{shape.key}: writing q8")
        from onnxruntime.quantization import QuantType, quantize_dynamic

        tmp = folder / "q8-tmp" / "model.onnx"
        tmp.parent.mkdir(parents=True, exist_ok=True)
        quantize_dynamic(str(paths["fp32"]), str(tmp), op_types_to_quantize=["MatMul"],
                         weight_type=QuantType.QInt8, use_external_data_format=True,
                         extra_options={"MatMulConstBOnly": True})
        _save(onnx.load(str(tmp)), paths["q8"])  # renamed to the layout the page expects
        for f in tmp.parent.iterdir():
            f.unlink()
        tmp.parent.rmdir()
    if "q8c_gbq" in missing:
        log(f"{shape.key}: writing q8c_gbq")
        model, inits = load()
        matmuls, _ = _const_weights(model.graph)
        gone, new_inits = set(), []
        for node in matmuls:
            name = node.input[1]
            if name not in gone:
                w = numpy_helper.to_array(inits[name])  # [K, N]
                scale = (np.abs(w).max(axis=0) / 127.0).astype(np.float32)
                scale[scale == 0] = 1.0
                q = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
                new_inits += [numpy_helper.from_array(q, name + "_i8"),
                              numpy_helper.from_array(scale, name + "_i8_scale")]
                gone.add(name)
                del w, q
            node.CopyFrom(helper.make_node("DynamicQuantizeMatMul", [node.input[0], name + "_i8", name + "_i8_scale"],
                                           list(node.output), name=node.name + "_dqmm", domain="com.microsoft"))
        _swap_initializers(model, gone, new_inits)
        _embedding_to_gbq(model, quant)
        _save(model, paths["q8c_gbq"])
        del model, inits, matmuls
    if "q8_gbq" in missing:  # q8's embedding is the 4-bit table dequantized: the same function
        log(f"{shape.key}: writing q8_gbq")
        model = onnx.load(str(paths["q8"]))
        _embedding_to_gbq(model, quant)
        _save(model, paths["q8_gbq"])
        del model
    return paths


def form_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))
