"""GGUF blocks kept in an ONNX graph, with the nodes that expand them (``gguf_import`` uses these).

Two layouts:

- Q4_0, Q4_1 and Q8_0 are stored as their blocks are: packed values ``q``, fp16 scales ``d`` and
  (Q4_1) fp16 minimums ``m``; expanded as ``q * d (+ m)``.
- Q5_0, Q5_1 and the K-quants (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K) are unpacked at import time into
  *planes* and per-block integers, about the GGUF's size, so that one expansion serves them all::

      w = (q - offset) * (d * sc) + mn * msc

  ``q`` is the unsigned quantized value (2 to 6 bits), stored as 4-, 2- and 1-bit planes; in an
  ``n``-bit plane of a ``cols``-wide row, byte ``c`` holds columns ``c + k * cols * n / 8`` for
  ``k < 8 / n``, bits ``[k * n, (k + 1) * n)``, and the plane is shifted left by the bits of the
  planes before it. ``d`` (fp16) is the block's (K: super-block's) scale, ``sc`` the sub-block's
  integer scale (K-quants; int8 for Q3_K and Q6_K), ``mn`` (fp16) the block's minimum (Q5_1: ``m``;
  K-quants: ``-dmin``, so that adding it is gguf's subtraction) and ``msc`` the sub-block's integer
  minimum (Q2_K: ``sc`` and ``msc`` are 4-bit, kept in one byte, ``msc`` high). ``d * sc`` and
  ``mn * msc`` are exact in float32 (an 11-bit significand times an integer of at most 8 bits), and
  the remaining multiply and add round once each, in the order of ``gguf.quants``' dequantizers:
  every weight is bit for bit the reference's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

QK_K = 256
RAW_TYPES = ("Q4_0", "Q4_1", "Q8_0")
PLANE_TYPES = ("Q5_0", "Q5_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K")


def raw_blocks(kind: str, raw: np.ndarray) -> dict[str, np.ndarray]:
    """A Q4_0/Q4_1/Q8_0 tensor's parts, ``[rows, blocks, ...]``: values (``q``), fp16 scales (``d``)
    and, for Q4_1, fp16 minimums (``m``)."""
    rows = raw.shape[0]
    if kind == "Q8_0":
        b = raw.reshape(rows, -1, 34)
        return {"d": b[:, :, :2].copy().view(np.float16), "q": b[:, :, 2:].copy().view(np.int8)}
    if kind == "Q4_0":
        b = raw.reshape(rows, -1, 18)
        return {"d": b[:, :, :2].copy().view(np.float16), "q": b[:, :, 2:].copy()}
    if kind == "Q4_1":
        b = raw.reshape(rows, -1, 20)
        return {"d": b[:, :, :2].copy().view(np.float16), "m": b[:, :, 2:4].copy().view(np.float16),
                "q": b[:, :, 4:].copy()}
    raise AssertionError(kind)


@dataclass
class Planes:
    """A tensor unpacked for the planes layout (see the module docstring); per-block arrays are
    ``[rows, supers]`` (``d``, ``mn``) and ``[rows, supers, subs]`` (``sc``, ``msc``)."""

    q: np.ndarray  # uint8 [rows, cols], unsigned values of `bits` bits
    bits: int
    offset: int
    group: int  # values per sub-block (the whole block for Q5_*)
    d: np.ndarray
    sc: np.ndarray | None = None
    mn: np.ndarray | None = None
    msc: np.ndarray | None = None
    nibbles: bool = False  # sc and msc are 4-bit: stored in one byte (sc low, msc high), as Q2_K has them

    @property
    def shape(self) -> tuple[int, int, int]:
        """``(supers, subs, group)``: a row's values as blocks of sub-blocks."""
        supers = self.d.shape[1]
        return supers, self.q.shape[1] // supers // self.group, self.group


def _half(b: np.ndarray) -> np.ndarray:
    """Two bytes per block (last axis) as the block's fp16 value, ``[rows, blocks]``."""
    return np.ascontiguousarray(b).view(np.float16)[..., 0]


def _nibbles(qs: np.ndarray, width: int) -> np.ndarray:
    """Chunks of ``width`` bytes -> ``2 * width`` values: the chunk's low nibbles, then its high ones."""
    c = qs.reshape(*qs.shape[:-1], -1, width)
    return np.stack([c & 15, c >> 4], axis=-2).reshape(*qs.shape[:-1], -1)


def _crumbs(qs: np.ndarray, width: int, bits: int) -> np.ndarray:
    """Chunks of ``width`` bytes -> ``8 / bits`` runs of ``width`` values: bits 0.., then bits
    ``bits``.., of each byte."""
    c = qs.reshape(*qs.shape[:-1], -1, 1, width)
    shifts = np.arange(0, 8, bits, dtype=np.uint8).reshape(-1, 1)
    return ((c >> shifts) & ((1 << bits) - 1)).reshape(*qs.shape[:-1], -1)


def _k_scales(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Q4_K/Q5_K's 12 bytes of 6-bit scales and minimums -> 8 of each (ggml's ``get_scale_min_k4``)."""
    lo, mid, hi = s[..., 0:4], s[..., 4:8], s[..., 8:12]
    sc = np.concatenate([lo & 63, (hi & 15) | ((lo >> 6) << 4)], axis=-1)
    mins = np.concatenate([mid & 63, (hi >> 4) | ((mid >> 6) << 4)], axis=-1)
    return sc, mins


def unpack(kind: str, raw: np.ndarray) -> Planes:
    """The planes layout of a ``kind`` tensor's raw rows ``[rows, bytes]``."""
    rows = raw.shape[0]
    if kind in ("Q5_0", "Q5_1"):
        b = raw.reshape(rows, -1, 22 if kind == "Q5_0" else 24)
        at = 2 if kind == "Q5_0" else 4
        high = np.unpackbits(b[..., at:at + 4], axis=-1, bitorder="little")  # bit j of a little-endian uint32
        q = (_nibbles(b[..., at + 4:], 16) | (high << 4)).reshape(rows, -1)
        if kind == "Q5_0":
            return Planes(q, 5, 16, 32, _half(b[..., 0:2]))
        return Planes(q, 5, 0, 32, _half(b[..., 0:2]), mn=_half(b[..., 2:4]))
    if kind in ("Q4_K", "Q5_K"):
        b = raw.reshape(rows, -1, 144 if kind == "Q4_K" else 176)
        sc, mins = _k_scales(b[..., 4:16])
        if kind == "Q4_K":
            q, bits = _nibbles(b[..., 16:144], 32), 4
        else:
            high = (b[..., 16:48][..., None, :] >> np.arange(8, dtype=np.uint8).reshape(-1, 1)) & 1
            q, bits = _nibbles(b[..., 48:176], 32) | (high.reshape(rows, -1, QK_K) << 4), 5
        return Planes(q.reshape(rows, -1), bits, 0, 32, _half(b[..., 0:2]), sc, -_half(b[..., 2:4]), mins)
    if kind == "Q6_K":
        b = raw.reshape(rows, -1, 210)
        q = _nibbles(b[..., 0:128], 64) | (_crumbs(b[..., 128:192], 32, 2) << 4)
        return Planes(q.reshape(rows, -1), 6, 32, 16, _half(b[..., 208:210]), b[..., 192:208].view(np.int8))
    if kind == "Q2_K":
        b = raw.reshape(rows, -1, 84)
        s = b[..., 0:16]
        return Planes(_crumbs(b[..., 16:80], 32, 2).reshape(rows, -1), 2, 0, 16, _half(b[..., 80:82]), s & 15,
                      -_half(b[..., 82:84]), s >> 4, nibbles=True)
    if kind == "Q3_K":
        b = raw.reshape(rows, -1, 110)
        s = b[..., 96:108]
        low = np.concatenate([s[..., 0:8] & 15, s[..., 0:8] >> 4], axis=-1)
        sc = (low | (_crumbs(s[..., 8:12], 4, 2) << 4)).astype(np.int8) - np.int8(32)
        high = (b[..., 0:32][..., None, :] >> np.arange(8, dtype=np.uint8).reshape(-1, 1)) & 1
        q = _crumbs(b[..., 32:96], 32, 2) | (high.reshape(rows, -1, QK_K) << 2)  # value: q - 4
        return Planes(q.reshape(rows, -1), 3, 4, 16, _half(b[..., 108:110]), sc)
    raise AssertionError(kind)


def pack_plane(v: np.ndarray, bits: int) -> np.ndarray:
    """``[rows, cols]`` values below ``2 ** bits`` -> ``[rows, cols * bits / 8]`` bytes: byte ``c``
    holds columns ``c + k * width`` at bits ``k * bits``."""
    width = v.shape[1] * bits // 8
    out = np.zeros((v.shape[0], width), np.uint8)
    for k in range(8 // bits):
        out |= (v[:, k * width:(k + 1) * width] << (k * bits)).astype(np.uint8)
    return out


def _split_bits(bits: int) -> list[int]:
    """The planes a ``bits``-bit value is stored in, low bits first: 5 -> [4, 1], 3 -> [2, 1]."""
    out = []
    for n in (4, 2, 1):
        if bits >= n:
            out.append(n)
            bits -= n
    return out


class GraphEditor:
    """Adds initializers and nodes with unique names (all starting ``gguf/``) to a graph."""

    def __init__(self) -> None:
        self.initializers: list[onnx.TensorProto] = []
        self.nodes: list[onnx.NodeProto] = []
        self.count = 0
        self.scalars: dict[tuple[str, float], str] = {}

    def name(self, base: str) -> str:
        self.count += 1
        return f"gguf/{base}/{self.count}"

    def constant(self, base: str, array: np.ndarray) -> str:
        n = self.name(base)
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), n))
        return n

    def scalar(self, value: float, dtype: Any) -> str:
        key = (np.dtype(dtype).name, value)
        if key not in self.scalars:
            self.scalars[key] = self.constant("scalar", np.array(value, dtype))
        return self.scalars[key]

    def node(self, op: str, inputs: list[str], base: str, **attrs: Any) -> str:
        out = self.name(base)
        self.nodes.append(helper.make_node(op, inputs, [out], name=out + ":" + op, **attrs))
        return out

    def reshape(self, x: str, shape: tuple[int, ...] | list[int], out: str | None = None) -> str:
        out = out or self.name("reshaped")
        self.nodes.append(helper.make_node("Reshape", [x, self.constant("shape", np.array(shape, np.int64))], [out],
                                           name=self.name("reshape")))
        return out


def expand_raw(edit: GraphEditor, kind: str, parts: dict[str, np.ndarray], transposed: bool, out: str,
               shape: tuple[int, int]) -> dict[str, Any]:
    """Nodes that turn a Q4_0/Q4_1/Q8_0 tensor's blocks into the float32 initializer ``out`` of ``shape``.

    ``transposed``: ``out`` is ``[cols, rows]`` (a MatMul's weight). Its blocks are then stored
    with the row axis last, so the expansion ends in a plain reshape, never a transpose. Returns
    the expansion as ``gguf_import.BLOCKS_KEY`` lists it."""
    def lay(a: np.ndarray) -> np.ndarray:  # [rows, blocks, k] -> [blocks, k, rows] when transposed
        return a.transpose(1, 2, 0) if transposed else a

    block_axis = 1 if transposed else 2
    q = edit.constant(f"{kind}.q", lay(parts["q"]))
    d_init = edit.constant(f"{kind}.d", lay(parts["d"]))
    d = edit.node("Cast", [d_init], "d", to=TensorProto.FLOAT)
    if kind == "Q8_0":
        values = edit.node("Cast", [q], "q", to=TensorProto.FLOAT)
    else:
        four = edit.constant("four", np.array(4, np.uint8))
        high = edit.node("BitShift", [q, four], "high", direction="RIGHT")
        low = edit.node("BitShift", [edit.node("BitShift", [q, four], "shifted", direction="LEFT"), four], "low",
                        direction="RIGHT")
        # byte j of a block holds element j (low nibble) and element j + 16 (high nibble)
        values = edit.node("Cast", [edit.node("Concat", [low, high], "q", axis=block_axis)], "q", to=TensorProto.FLOAT)
        if kind == "Q4_0":
            values = edit.node("Sub", [values, edit.constant("eight", np.array(8, np.float32))], "q")
    w = edit.node("Mul", [values, d], "w")
    m = None
    if kind == "Q4_1":
        m = edit.constant("Q4_1.m", lay(parts["m"]))
        w = edit.node("Add", [w, edit.node("Cast", [m], "m", to=TensorProto.FLOAT)], "w")
    edit.reshape(w, shape, out)
    return {"out": out, "kind": kind, "q": q, "d": d_init, "m": m, "dims": list(shape), "transposed": transposed}


def expand_planes(edit: GraphEditor, kind: str, p: Planes, transposed: bool, out: str,
                  shape: tuple[int, int]) -> dict[str, Any]:
    """Nodes that turn a tensor in the planes layout into the float32 initializer ``out`` of
    ``shape`` (``transposed`` as in ``expand_raw``). Returns the expansion as listed in the model."""
    rows = p.q.shape[0]
    supers, subs, group = p.shape
    col_axis = 0 if transposed else 1

    def block(a: np.ndarray, per_sub: bool) -> str:  # [rows, supers(, subs)] -> 4-D, broadcasting on values
        a4 = a.reshape(rows, supers, subs if per_sub else 1, 1)
        return edit.constant(f"{kind}.block", a4.transpose(1, 2, 3, 0) if transposed else a4)

    def as_float(x: str) -> str:
        return edit.node("Cast", [x], "float", to=TensorProto.FLOAT)

    planes: list[list[Any]] = []
    values = None
    low = 0
    for n in _split_bits(p.bits):
        packed = pack_plane((p.q >> low) & ((1 << n) - 1), n)
        name = edit.constant(f"{kind}.q{n}", packed.T if transposed else packed)
        pieces = []
        for k in range(8 // n):
            x = name
            if 8 - (k + 1) * n:
                x = edit.node("BitShift", [x, edit.scalar(8 - (k + 1) * n, np.uint8)], "shl", direction="LEFT")
            pieces.append(edit.node("BitShift", [x, edit.scalar(8 - n, np.uint8)], "shr", direction="RIGHT"))
        plane = as_float(edit.node("Concat", pieces, "plane", axis=col_axis))
        if low:
            plane = edit.node("Mul", [plane, edit.scalar(float(1 << low), np.float32)], "plane")
        values = plane if values is None else edit.node("Add", [values, plane], "q")
        planes.append([name, n, low])
        low += n
    assert values is not None
    if p.offset:
        values = edit.node("Sub", [values, edit.scalar(float(p.offset), np.float32)], "q")
    values = edit.reshape(values, (supers, subs, group, rows) if transposed else (rows, supers, subs, group))
    d = block(p.d, False)
    scale = as_float(d)
    sc = msc = None
    sc_int = msc_int = ""
    if p.nibbles:
        assert p.sc is not None and p.msc is not None
        sc = msc = block(p.sc | (p.msc << 4), True)
        four = edit.scalar(4, np.uint8)
        shifted = edit.node("BitShift", [sc, four], "shl", direction="LEFT")
        sc_int = edit.node("BitShift", [shifted, four], "sc", direction="RIGHT")
        msc_int = edit.node("BitShift", [sc, four], "msc", direction="RIGHT")
    elif p.sc is not None:
        sc = sc_int = block(p.sc, True)
    if sc is not None:
        scale = edit.node("Mul", [scale, as_float(sc_int)], "scale")
    w = edit.node("Mul", [values, scale], "w")
    mn = None
    if p.mn is not None:
        mn = block(p.mn, False)
        m = as_float(mn)
        if p.msc is not None:
            if not p.nibbles:
                msc = msc_int = block(p.msc, True)
            m = edit.node("Mul", [m, as_float(msc_int)], "min")
        w = edit.node("Add", [w, m], "w")
    edit.reshape(w, shape, out)
    return {"out": out, "kind": kind, "dims": list(shape), "transposed": transposed, "planes": planes,
            "offset": p.offset, "shape": [supers, subs, group], "d": d, "sc": sc,
            "sc_signed": p.sc is not None and p.sc.dtype == np.int8, "mn": mn, "msc": msc, "nibbles": p.nibbles}
