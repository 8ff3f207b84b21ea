"""A GGUF model's decoder as an ONNX graph, in transformers.js's decoder-with-past layout, written
from its metadata alone; the weights stay where they are and are expanded by the loader.

Inputs ``input_ids``, ``attention_mask``, ``position_ids``, ``past_key_values.<i>.key``/``.value``;
outputs ``logits`` and ``present.<i>.key``/``.value``, as ``buildtools/models/onnx_decoder.py``
exports them from torch. Every weight is an initializer in one external-data buffer
(:data:`WEIGHTS_FILE`) that the loader fills from the file's own tensors as ``Weight`` says: a matrix
``[rows, cols]`` as stored (projections run as ``Gemm`` with ``transB``, so nothing is transposed),
Llama's q/k rows put back in Hugging Face's order. The arithmetic follows transformers' eager
implementation of each family, so the logits agree with torch's on the same weights.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .onnx_proto import BOOL, FLOAT, INT8, INT64, UINT8, Graph
from .spec import GGUFModelError, ModelSpec, Rope, TensorInfo, read_spec

WEIGHTS_FILE = "gguf_weights.bin"
OPSET = 17
FORMS = ("fp32", "int8", "nbits8")
"""How the weights are held: ``fp32`` (expanded, exact: the graph computes as torch does on the file's
weights); ``int8`` (matrices requantized per row to int8, run by onnxruntime's ``DynamicQuantizeMatMul``,
which quantizes activations too: a quarter of the memory and WASM's fastest form, for models whose
fp32 weights pass the budget); ``nbits8`` (matrices requantized to 8-bit blocks of 32 with a scale
and zero point each, run by ``MatMulNBits`` on float activations: weight-only, within ~1/30 of the
GGUF's own quantization step; the WebGPU form, where ``MatMulNBits`` has shaders)."""
BLOCK = 32  # values per block of the nbits8 form
_ALIGN = 64
_F32_MIN = -3.4028234663852886e38


@dataclass(frozen=True)
class Weight:
    """One initializer the loader writes: GGUF tensor ``tensor`` (``rows`` x ``cols`` values of ggml
    type ``type``, ``size`` bytes at ``offset`` of the file) expanded to float32 at byte ``at`` of the
    weights buffer; with ``row_order``, row ``i`` written is stored row ``row_order[i]``."""

    tensor: str
    type: int
    offset: int
    size: int
    rows: int
    cols: int
    at: int
    row_order: tuple[int, ...] | None = None
    form: str = "f32"  # "f32"; "i8" (int8 [rows, cols]) or "i8t" ([cols, rows]), with float32 scales per row;
    # "b8": uint8 [rows, blocks, 32] (rows zero-padded to whole blocks), float32 scales and uint8 zero
    # points per block ([rows * blocks]): value = (q - zero point) * scale
    scale_at: int = 0  # where the int8 forms' scales go
    zp_at: int = 0  # where the b8 form's zero points go


@dataclass
class DecoderGraph:
    """The graph's bytes, the weights the loader expands into :data:`WEIGHTS_FILE`, and the model."""

    model: bytes
    weights: list[Weight]
    weights_bytes: int
    spec: ModelSpec


def llama_row_order(rows: int, heads: int) -> tuple[int, ...]:
    """The row order undoing llama.cpp's permutation of Llama's q/k rows (transformers' reverse_permute)."""
    half = rows // heads // 2
    return tuple(h * 2 * half + 2 * i + j for h in range(heads) for j in (0, 1) for i in range(half))


class _Builder:
    def __init__(self, spec: ModelSpec, form: str) -> None:
        if form not in FORMS:
            raise ValueError(f"unknown weights form {form!r}: one of {', '.join(FORMS)}")
        self.spec = spec
        self.form = form
        self.int8 = form == "int8"
        self.g = Graph()
        self.made: dict[tuple[str, str], str] = {}  # (tensor, form) -> its initializer (a tied head reuses it)
        self.weights: list[Weight] = []
        self.at = 0
        self.ropes: dict[Rope, tuple[str, str]] = {}
        self.masks: dict[int | None, str] = {}

    # ---------------------------------------------------------------- weights

    def has(self, name: str) -> bool:
        return name in self.spec.tensors

    def _reserve(self, nbytes: int) -> int:
        at = self.at
        self.at += -(-nbytes // _ALIGN) * _ALIGN
        return at

    def weight(self, name: str, form: str = "f32") -> str:
        """The initializer(s) of GGUF tensor ``name``: float32 ``[rows, cols]`` (``[n]`` for a vector);
        int8 ``[rows, cols]`` (``i8``) or ``[cols, rows]`` (``i8t``) and its scales ``[rows]``: the
        name of the int8 one, ``<name>.<form>``, its scales ``<name>.<form>.scale``."""
        if (name, form) in self.made:
            return self.made[(name, form)]
        self.made[(name, form)] = out = self._weight(name, form)
        return out

    def _weight(self, name: str, form: str) -> str:
        t = self.spec.tensors.get(name)
        if t is None:
            raise GGUFModelError(f"the {self.spec.arch} file has no {name} tensor")
        cols = t.dims[0]
        rows = 1
        for d in t.dims[1:]:
            rows *= d
        order = None
        if self.spec.arch == "llama" and name.endswith(("attn_q.weight", "attn_k.weight")):
            heads = self.spec.heads if name.endswith("attn_q.weight") else self.spec.kv_heads
            order = llama_row_order(rows, heads)
        if form == "f32":
            at = self._reserve(rows * cols * 4)
            self.weights.append(Weight(name, t.type, t.offset, t.size, rows, cols, at, order))
            dims = [cols] if len(t.dims) == 1 else [rows, cols]
            self.g.external(name, FLOAT, dims, WEIGHTS_FILE, at, rows * cols * 4)
            return name
        out = f"{name}.{form}"
        if form == "b8":
            blocks = -(-cols // BLOCK)
            at, scale_at, zp_at = (self._reserve(rows * blocks * n) for n in (BLOCK, 4, 1))
            self.weights.append(Weight(name, t.type, t.offset, t.size, rows, cols, at, order, form, scale_at, zp_at))
            self.g.external(out, UINT8, [rows, blocks, BLOCK], WEIGHTS_FILE, at, rows * blocks * BLOCK)
            self.g.external(out + ".scale", FLOAT, [rows * blocks], WEIGHTS_FILE, scale_at, rows * blocks * 4)
            self.g.external(out + ".zp", UINT8, [rows * blocks], WEIGHTS_FILE, zp_at, rows * blocks)
            return out
        at, scale_at = self._reserve(rows * cols), self._reserve(rows * 4)
        self.weights.append(Weight(name, t.type, t.offset, t.size, rows, cols, at, order, form, scale_at))
        self.g.external(out, INT8, [rows, cols] if form == "i8" else [cols, rows], WEIGHTS_FILE, at, rows * cols)
        self.g.external(out + ".scale", FLOAT, [rows], WEIGHTS_FILE, scale_at, rows * 4)
        return out

    def linear(self, x: str, name: str) -> str:
        """``x @ W.T (+ b)``: W as the file stores it (``Gemm``), or int8 transposed."""
        bias = name.replace(".weight", ".bias")
        biases = [self.weight(bias)] if self.has(bias) else []
        if self.int8:
            w = self.weight(name, "i8t")
            return self.g.node("DynamicQuantizeMatMul", [x, w, w + ".scale", "", *biases], domain="com.microsoft")[0]
        if self.form == "nbits8":
            w = self.weight(name, "b8")
            t = self.spec.tensors[name]
            rows = t.dims[1] if len(t.dims) > 1 else 1
            y = self.g.op("MatMulNBits", x, w, w + ".scale", w + ".zp", domain="com.microsoft", K=t.dims[0], N=rows,
                          bits=8, block_size=BLOCK)
            return self.g.op("Add", y, biases[0]) if biases else y
        return self.g.node("Gemm", [x, self.weight(name), *biases], transB=1)[0]

    def embed(self) -> str:
        """The token embeddings ``[B, S, H]`` of ``input_ids``."""
        g = self.g
        if self.form == "nbits8":
            return self.embed_blocks()
        if not self.int8:
            return g.op("Gather", self.weight("token_embd.weight"), "input_ids", axis=0)
        table = self.weight("token_embd.weight", "i8")
        rows = g.op("Cast", g.op("Gather", table, "input_ids", axis=0), to=FLOAT)
        scales = g.op("Unsqueeze", g.op("Gather", table + ".scale", "input_ids", axis=0), g.ints([2]))
        return g.op("Mul", rows, scales)

    def embed_blocks(self) -> str:
        """The nbits8 form's embeddings: the tokens' rows of blocks, expanded (the LM head shares them)."""
        g, s = self.g, self.spec
        table = self.weight("token_embd.weight", "b8")
        blocks = -(-s.hidden // BLOCK)

        def per_block(name: str) -> str:  # [rows * blocks] -> the tokens' [B, S, blocks, 1] as float
            rows = g.op("Gather", g.op("Reshape", name, g.ints([-1, blocks])), "input_ids", axis=0)
            return g.op("Unsqueeze", g.op("Cast", rows, to=FLOAT), g.ints([3]))

        q = g.op("Cast", g.op("Gather", table, "input_ids", axis=0), to=FLOAT)
        values = g.op("Mul", g.op("Sub", q, per_block(table + ".zp")), per_block(table + ".scale"))
        flat = g.op("Reshape", values, g.ints([0, 0, blocks * BLOCK]))
        return flat if blocks * BLOCK == s.hidden else g.op("Slice", flat, g.ints([0]), g.ints([s.hidden]),
                                                             g.ints([2]))

    # ---------------------------------------------------------------- pieces

    def norm(self, x: str, name: str) -> str:
        """RMSNorm over the last axis (Gemma's ``1 + w`` is stored as such in the file)."""
        g = self.g
        mean = g.op("ReduceMean", g.op("Pow", x, self.two), axes=[-1], keepdims=1)
        inv = g.op("Div", self.one, g.op("Sqrt", g.op("Add", mean, self.eps)))
        return g.op("Mul", g.op("Mul", x, inv), self.weight(name))

    def rope_tables(self, rope: Rope) -> tuple[str, str]:
        if rope not in self.ropes:
            g = self.g
            pos = g.op("Unsqueeze", g.op("Cast", "position_ids", to=FLOAT), g.ints([2]))
            if rope.factors is None:
                inv_freq = g.floats(rope.inv_freq, "inv_freq")
            else:
                inv_freq = g.op("Div", self.one, g.op("Mul", self.weight(rope.factors), g.floats(rope.powers)))
            freqs = g.op("Mul", pos, inv_freq)
            emb = g.op("Concat", freqs, freqs, axis=-1)
            cos, sin = (g.op("Unsqueeze", g.op(op, emb), g.ints([1])) for op in ("Cos", "Sin"))
            if rope.scale != 1.0:
                scale = g.floats([rope.scale], scalar=True)
                cos, sin = g.op("Mul", cos, scale), g.op("Mul", sin, scale)
            self.ropes[rope] = (cos, sin)
        return self.ropes[rope]

    def rotate(self, t: str, rope: Rope) -> str:
        """HF's ``t * cos + rotate_half(t) * sin`` on the first ``rope.dims`` of each head."""
        g = self.g
        cos, sin = self.rope_tables(rope)
        d, r = self.spec.head_dim, rope.dims
        part = t if r == d else g.op("Slice", t, g.ints([0]), g.ints([r]), g.ints([-1]))
        x1 = g.op("Slice", part, g.ints([0]), g.ints([r // 2]), g.ints([-1]))
        x2 = g.op("Slice", part, g.ints([r // 2]), g.ints([r]), g.ints([-1]))
        half = g.op("Concat", g.op("Neg", x2), x1, axis=-1)
        out = g.op("Add", g.op("Mul", part, cos), g.op("Mul", half, sin))
        if r == d:
            return out
        return g.op("Concat", out, g.op("Slice", t, g.ints([r]), g.ints([d]), g.ints([-1])), axis=-1)

    def mask(self, window: int | None) -> str:
        """The additive mask ``[B, 1, 1, S, T]``: 0 where query i may see key j, float32's min elsewhere."""
        if window not in self.masks:
            g = self.g
            seq = g.op("Gather", g.op("Shape", "input_ids"), g.ints([1], scalar=True), axis=0)
            total = g.op("Gather", g.op("Shape", "attention_mask"), g.ints([1], scalar=True), axis=0)
            one, zero = g.ints([1], scalar=True), g.ints([0], scalar=True)
            q_idx = g.op("Unsqueeze", g.op("Range", g.op("Sub", total, seq), total, one), g.ints([1]))
            k_idx = g.op("Unsqueeze", g.op("Range", zero, total, one), g.ints([0]))
            allowed = g.op("LessOrEqual", k_idx, q_idx)
            if window is not None:
                near = g.op("Less", g.op("Sub", q_idx, k_idx), g.ints([window], scalar=True))
                allowed = g.op("And", allowed, near)
            pad = g.op("Unsqueeze", g.op("Cast", "attention_mask", to=BOOL), g.ints([1, 2, 3]))
            self.masks[window] = g.op("Where", g.op("And", allowed, pad), g.floats([0.0], scalar=True),
                                      g.floats([_F32_MIN], scalar=True))
        return self.masks[window]

    # ---------------------------------------------------------------- the decoder

    def heads(self, x: str, n: int) -> str:
        """``[N, n*D]`` -> ``[B, n, S, D]``."""
        g = self.g
        shape = g.op("Concat", g.op("Shape", "input_ids"), g.ints([n, self.spec.head_dim]), axis=0)
        return g.op("Transpose", g.op("Reshape", x, shape), perm=[0, 2, 1, 3])

    def attention(self, i: int, x: str) -> str:
        s, g = self.spec, self.g
        p = f"blk.{i}."
        if self.has(p + "attn_qkv.weight"):
            sizes = g.ints([s.heads * s.head_dim, s.kv_heads * s.head_dim, s.kv_heads * s.head_dim])
            q, k, v = g.node("Split", [self.linear(x, p + "attn_qkv.weight"), sizes], 3, axis=1)
        else:
            q, k, v = (self.linear(x, p + f"attn_{w}.weight") for w in "qkv")
        q, k, v = self.heads(q, s.heads), self.heads(k, s.kv_heads), self.heads(v, s.kv_heads)
        if self.has(p + "attn_q_norm.weight"):
            q, k = self.norm(q, p + "attn_q_norm.weight"), self.norm(k, p + "attn_k_norm.weight")
        q, k = self.rotate(q, s.rope[i]), self.rotate(k, s.rope[i])
        key = g.op("Concat", f"past_key_values.{i}.key", k, axis=2)
        value = g.op("Concat", f"past_key_values.{i}.value", v, axis=2)
        g.node("Identity", [key], [f"present.{i}.key"])
        g.node("Identity", [value], [f"present.{i}.value"])
        rep = s.heads // s.kv_heads
        q5 = g.op("Reshape", q, g.ints([0, s.kv_heads, rep, -1, s.head_dim]))
        kt = g.op("Transpose", g.op("Unsqueeze", key, g.ints([2])), perm=[0, 1, 2, 4, 3])
        scores = g.op("Mul", g.op("MatMul", q5, kt), g.floats([s.query_scale], scalar=True))
        probs = g.op("Softmax", g.op("Add", scores, self.mask(s.sliding[i])), axis=-1)
        out = g.op("MatMul", probs, g.op("Unsqueeze", value, g.ints([2])))
        out = g.op("Transpose", g.op("Reshape", out, g.ints([0, s.heads, -1, s.head_dim])), perm=[0, 2, 1, 3])
        return self.linear(g.op("Reshape", out, g.ints([-1, s.heads * s.head_dim])), p + "attn_output.weight")

    def mlp(self, i: int, x: str) -> str:
        s, g = self.spec, self.g
        p = f"blk.{i}."
        if self.has(p + "ffn_gate.weight"):
            gate, up = self.linear(x, p + "ffn_gate.weight"), self.linear(x, p + "ffn_up.weight")
        else:  # Phi-3: gate and up in one matrix, gate first
            gate, up = g.node("Split", [self.linear(x, p + "ffn_up.weight"), g.ints([s.ff, s.ff])], 2, axis=1)
        if s.arch == "gemma3":  # gelu_pytorch_tanh
            cube = g.op("Mul", g.op("Mul", gate, gate), gate)
            inner = g.op("Mul", g.op("Add", gate, g.op("Mul", cube, g.floats([0.044715], scalar=True))),
                         g.floats([0.7978845608028654], scalar=True))
            act = g.op("Mul", g.op("Mul", gate, g.floats([0.5], scalar=True)),
                       g.op("Add", g.op("Tanh", inner), self.one))
        else:
            act = g.op("Mul", gate, g.op("Sigmoid", gate))
        return self.linear(g.op("Mul", act, up), p + "ffn_down.weight")

    def build(self) -> DecoderGraph:
        s, g = self.spec, self.g
        self.one, self.two = g.floats([1.0], scalar=True), g.floats([2.0], scalar=True)
        self.eps = g.floats([s.eps], scalar=True)
        g.input("input_ids", INT64, ["batch_size", "sequence_length"])
        g.input("attention_mask", INT64, ["batch_size", "total_sequence_length"])
        g.input("position_ids", INT64, ["batch_size", "sequence_length"])
        cache: list[int | str] = ["batch_size", s.kv_heads, "past_sequence_length", s.head_dim]
        present: list[int | str] = ["batch_size", s.kv_heads, "total_sequence_length", s.head_dim]
        for i in range(s.layers):
            for kv in ("key", "value"):
                g.input(f"past_key_values.{i}.{kv}", FLOAT, cache)
        h = self.embed()
        if s.arch == "gemma3":
            h = g.op("Mul", h, g.floats([s.hidden ** 0.5], scalar=True))
        x = g.op("Reshape", h, g.ints([-1, s.hidden]))
        gemma = s.arch == "gemma3"
        for i in range(s.layers):
            p = f"blk.{i}."
            attn = self.attention(i, self.norm(x, p + "attn_norm.weight"))
            if gemma:
                attn = self.norm(attn, p + "post_attention_norm.weight")
            x = g.op("Add", x, attn)
            mlp = self.mlp(i, self.norm(x, p + "ffn_norm.weight"))
            if gemma:
                mlp = self.norm(mlp, p + "post_ffw_norm.weight")
            x = g.op("Add", x, mlp)
        x = self.norm(x, "output_norm.weight")
        head = "token_embd.weight" if s.tied else "output.weight"
        logits = self.linear(x, head)  # a tied head reuses the embedding's initializer
        if s.final_softcap:
            cap = g.floats([s.final_softcap], scalar=True)
            logits = g.op("Mul", g.op("Tanh", g.op("Div", logits, cap)), cap)
        shape = g.op("Concat", g.op("Shape", "input_ids"), g.ints([s.vocab]), axis=0)
        g.node("Reshape", [logits, shape], ["logits"])
        g.output("logits", FLOAT, ["batch_size", "sequence_length", s.vocab])
        for i in range(s.layers):
            for kv in ("key", "value"):
                g.output(f"present.{i}.{kv}", FLOAT, present)
        model = g.model({"": OPSET, "com.microsoft": 1} if self.form != "fp32" else {"": OPSET}, "csi-web gguf graph")
        return DecoderGraph(model, self.weights, self.at, s)


def decoder_graph(meta: Mapping[str, Any], tensors: Sequence[TensorInfo], form: str = "fp32") -> DecoderGraph:
    """The decoder graph of the GGUF whose metadata and tensor table are given, its weights in ``form``."""
    return _Builder(read_spec(meta, tensors), form).build()
