"""Just enough of ONNX's protobuf encoding to write a decoder graph whose weights live outside it.

Messages are built as bytes, field by field (numbers from onnx.proto); weights are initializers
whose data is external (a name, an offset and a length in a buffer the loader hands onnxruntime),
so the graph itself stays a few hundred kilobytes whatever the model's size.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

FLOAT, UINT8, INT8, INT32, INT64, BOOL, FLOAT16 = 1, 2, 3, 6, 7, 9, 10
IR_VERSION = 8
_ATTR_FLOAT, _ATTR_INT, _ATTR_STRING, _ATTR_INTS = 1, 2, 3, 7


def _varint(n: int) -> bytes:
    if n < 0:
        n += 1 << 64  # two's complement, as protobuf writes negative int64
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(number: int, wire: int) -> bytes:
    return _varint(number << 3 | wire)


def _int(number: int, value: int) -> bytes:
    return _key(number, 0) + _varint(value)


def _bytes(number: int, value: bytes) -> bytes:
    return _key(number, 2) + _varint(len(value)) + value


def _str(number: int, value: str) -> bytes:
    return _bytes(number, value.encode())


def _attribute(name: str, value: int | float | str | Sequence[int]) -> bytes:
    out = _str(1, name)
    if isinstance(value, bool) or isinstance(value, int):
        return out + _int(3, int(value)) + _int(20, _ATTR_INT)
    if isinstance(value, float):
        return out + _key(2, 5) + struct.pack("<f", value) + _int(20, _ATTR_FLOAT)
    if isinstance(value, str):
        return out + _str(4, value) + _int(20, _ATTR_STRING)
    return out + b"".join(_int(8, v) for v in value) + _int(20, _ATTR_INTS)


def _value_info(name: str, elem_type: int, dims: Sequence[int | str]) -> bytes:
    shape = b"".join(_bytes(1, _int(1, d) if isinstance(d, int) else _str(2, d)) for d in dims)
    tensor_type = _int(1, elem_type) + _bytes(2, shape)
    return _str(1, name) + _bytes(2, _bytes(1, tensor_type))


@dataclass
class Graph:
    """A graph being written: nodes in order, initializers (inline or external), inputs, outputs."""

    nodes: list[bytes] = field(default_factory=list)
    initializers: list[bytes] = field(default_factory=list)
    inputs: list[bytes] = field(default_factory=list)
    outputs: list[bytes] = field(default_factory=list)
    _count: int = 0

    def fresh(self, hint: str) -> str:
        """A tensor name not used yet."""
        self._count += 1
        return f"{hint}_{self._count}"

    def node(self, op: str, inputs: Sequence[str], outputs: int | Sequence[str] = 1, domain: str = "",
             **attrs: int | float | str | Sequence[int]) -> list[str]:
        """Add node ``op``; returns its output names (fresh ones when ``outputs`` is a count)."""
        names = [self.fresh(op.lower()) for _ in range(outputs)] if isinstance(outputs, int) else list(outputs)
        body = b"".join(_str(1, i) for i in inputs) + b"".join(_str(2, o) for o in names)
        body += _str(3, self.fresh("n")) + _str(4, op)
        body += b"".join(_bytes(5, _attribute(k, v)) for k, v in attrs.items())
        if domain:
            body += _str(7, domain)
        self.nodes.append(body)
        return names

    def op(self, op: str, *inputs: str, domain: str = "", **attrs: int | float | str | Sequence[int]) -> str:
        """Add a node of one output and return its name."""
        return self.node(op, inputs, 1, domain, **attrs)[0]

    def constant(self, hint: str, elem_type: int, dims: Sequence[int], raw: bytes) -> str:
        """An initializer holding ``raw`` (little-endian values of ``elem_type``)."""
        name = self.fresh(hint)
        self.initializers.append(b"".join(_int(1, d) for d in dims) + _int(2, elem_type) + _str(8, name)
                                 + _bytes(9, raw))
        return name

    def ints(self, values: Iterable[int], hint: str = "i64", scalar: bool = False) -> str:
        vals = list(values)
        return self.constant(hint, INT64, [] if scalar else [len(vals)], struct.pack(f"<{len(vals)}q", *vals))

    def floats(self, values: Iterable[float], hint: str = "f32", scalar: bool = False) -> str:
        vals = list(values)
        return self.constant(hint, FLOAT, [] if scalar else [len(vals)], struct.pack(f"<{len(vals)}f", *vals))

    def external(self, name: str, elem_type: int, dims: Sequence[int], location: str, offset: int,
                 length: int) -> str:
        """An initializer whose data is ``length`` bytes at ``offset`` of the external file ``location``."""
        entries = (("location", location), ("offset", str(offset)), ("length", str(length)))
        body = b"".join(_int(1, d) for d in dims) + _int(2, elem_type) + _str(8, name)
        body += b"".join(_bytes(13, _str(1, k) + _str(2, v)) for k, v in entries) + _int(14, 1)
        self.initializers.append(body)
        return name

    def input(self, name: str, elem_type: int, dims: Sequence[int | str]) -> str:
        self.inputs.append(_value_info(name, elem_type, dims))
        return name

    def output(self, name: str, elem_type: int, dims: Sequence[int | str]) -> None:
        self.outputs.append(_value_info(name, elem_type, dims))

    def model(self, opsets: dict[str, int], producer: str, props: dict[str, str] | None = None) -> bytes:
        """The ModelProto's bytes."""
        graph = (b"".join(_bytes(1, n) for n in self.nodes) + _str(2, "main")
                 + b"".join(_bytes(5, i) for i in self.initializers)
                 + b"".join(_bytes(11, i) for i in self.inputs) + b"".join(_bytes(12, o) for o in self.outputs))
        out = _int(1, IR_VERSION) + _str(2, producer) + _bytes(7, graph)
        out += b"".join(_bytes(8, (_str(1, d) if d else b"") + _int(2, v)) for d, v in opsets.items())
        out += b"".join(_bytes(14, _str(1, k) + _str(2, v)) for k, v in (props or {}).items())
        return out
