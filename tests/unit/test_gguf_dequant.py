"""The worker's GGUF dequantizer (worker/gguf_dequant.js), run in node, against gguf-py's
``gguf.quants.dequantize``: bit for bit (float32 as uint32) for every type it takes, on random
blocks (finite random f16 scales, random quants; F32/F16/BF16 values any bit pattern but signalling
NaNs) and on blocks gguf-py's ``quantize`` makes, several shapes (more rows than the transposed path's
tile too), with and without a row order and transposed, from sources at odd byte offsets into
outputs at an offset (the floats around them untouched). Unsupported types, ragged rows, short
sources and small outputs throw errors naming the type. One node process runs every case."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType
from gguf.quants import dequantize, quantize

from tests.support.paths import ROOT

SCRIPT = ROOT / "tests" / "support" / "gguf_dequant.mjs"
Q = GGMLQuantizationType
TYPES = [Q.F32, Q.F16, Q.Q4_0, Q.Q4_1, Q.Q5_0, Q.Q5_1, Q.Q8_0, Q.Q2_K, Q.Q3_K, Q.Q4_K, Q.Q5_K, Q.Q6_K, Q.BF16]
# where each block keeps its f16 scales (d, dmin, m), made finite in random blocks
HALF_FIELDS = {Q.Q4_0: [0], Q.Q4_1: [0, 2], Q.Q5_0: [0], Q.Q5_1: [0, 2], Q.Q8_0: [0], Q.Q2_K: [80, 82],
               Q.Q3_K: [108], Q.Q4_K: [0, 2], Q.Q5_K: [0, 2], Q.Q6_K: [208]}
QUANTIZABLE = {Q.F32, Q.F16, Q.BF16, Q.Q4_0, Q.Q4_1, Q.Q5_0, Q.Q5_1, Q.Q8_0}
SENTINEL = 0x7FBADBAD


@dataclass
class Case:
    qtype: Q
    stored: np.ndarray  # (stored rows, bytes per row) uint8
    rows: int
    cols: int
    order: list[int] | None
    transpose: bool
    out_offset: int
    got: np.ndarray | None = None  # uint32, the whole output with the margins

    def expected(self) -> np.ndarray:
        values = dequantize(self.stored, self.qtype).astype(np.float32, copy=False).reshape(-1, self.cols)
        if self.order is not None:
            values = values[self.order]
        if self.transpose:
            values = values.T
        return np.ascontiguousarray(values).ravel().view(np.uint32)


def finite_halves(rng: np.random.Generator, n: int) -> np.ndarray:
    h = rng.integers(0, 0x10000, n, dtype=np.uint16)
    return np.where((h & 0x7C00) == 0x7C00, h & 0x83FF, h).astype(np.uint16)


def random_rows(rng: np.random.Generator, qtype: Q, rows: int, cols: int) -> np.ndarray:
    block, size = GGML_QUANT_SIZES[qtype]
    raw = rng.integers(0, 256, (rows, cols // block * size), dtype=np.uint8)
    if qtype == Q.F16:  # any bits but signalling NaNs (a conversion in hardware may quiet them)
        h = raw.view(np.uint16)
        h[...] = np.where((h & 0x7C00) == 0x7C00, h | 0x0200, h)
    blocks = raw.reshape(-1, size)
    for at in HALF_FIELDS.get(qtype, []):
        blocks[:, at:at + 2] = finite_halves(rng, len(blocks)).view(np.uint8).reshape(-1, 2)
    return raw


def quantized_rows(rng: np.random.Generator, qtype: Q, rows: int, cols: int) -> np.ndarray:
    values = (rng.standard_normal((rows, cols)) * 10.0 ** rng.uniform(-3, 2)).astype(np.float32)
    return np.ascontiguousarray(quantize(values, qtype)).view(np.uint8).reshape(rows, -1)


def make_cases() -> list[Case]:
    rng = np.random.default_rng(7)
    cases = []
    for qtype in TYPES:
        block = GGML_QUANT_SIZES[qtype][0]
        shapes = [(r, block * b) for r, b in [(1, 1), (2, 3), (5, 2), (7, 1), (37, 2)]] if block > 1 else \
            [(1, 1), (3, 17), (7, 40), (4, 1), (40, 33)]
        makers = [random_rows, quantized_rows] if qtype in QUANTIZABLE else [random_rows]
        for make in makers:
            for rows, cols in shapes:
                for ordered in (False, True):
                    for transpose in (False, True):
                        stored_rows = rows + 2 if ordered else rows
                        stored = make(rng, qtype, stored_rows, cols)
                        order = [int(i) for i in rng.permutation(stored_rows)[:rows]] if ordered else None
                        cases.append(Case(qtype, stored, rows, cols, order, transpose, int(rng.integers(0, 5))))
    return cases


ERRORS: list[tuple[dict[str, Any], str]] = [
    (dict(type=Q.Q8_1, rows=1, cols=32, srcLen=40, outLen=32), "Q8_1"),
    (dict(type=Q.Q8_K, rows=1, cols=256, srcLen=292, outLen=256), "Q8_K"),
    (dict(type=Q.IQ4_NL, rows=1, cols=32, srcLen=18, outLen=32), "IQ4_NL"),
    (dict(type=99, rows=1, cols=32, srcLen=18, outLen=32), "99"),
    (dict(type=Q.Q4_K, rows=1, cols=100, srcLen=144, outLen=256), "Q4_K"),
    (dict(type=Q.Q8_0, rows=2, cols=64, srcLen=4 * 34 - 1, outLen=128), "Q8_0"),
    (dict(type=Q.F32, rows=3, cols=5, srcLen=59, outLen=15), "F32"),
    (dict(type=Q.Q6_K, rows=1, cols=256, srcLen=210, outLen=255), "Q6_K"),
    (dict(type=Q.Q4_0, rows=2, cols=32, srcLen=36, outLen=64, rowOrder=[0, 2]), "Q4_0"),
    (dict(type=Q.Q5_1, rows=2, cols=32, srcLen=48, outLen=64, rowOrder=[1]), "Q5_1"),
]
SIZES = [(int(t), 3, GGML_QUANT_SIZES[t][0] * 4) for t in Q]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Case], dict[str, Any]]:
    """Every case, its output read back from one node process, and the errors' and sizes' answers."""
    tmp: Path = tmp_path_factory.mktemp("dequant")
    cases = make_cases()
    blob = bytearray()
    specs = []
    for i, c in enumerate(cases):
        blob += bytes(1 + i % 3)  # sources at byte offsets of every remainder mod 4
        start = len(blob)
        blob += c.stored.tobytes() + bytes(i % 2 * 5)
        specs.append(dict(type=int(c.qtype), rows=c.rows, cols=c.cols, srcStart=start, srcLen=len(blob) - start,
                          rowOrder=c.order, transpose=c.transpose, outOffset=c.out_offset,
                          outLen=c.out_offset + c.rows * c.cols + 3))
    (tmp / "blob").write_bytes(bytes(blob))
    job = dict(blob=str(tmp / "blob"), out=str(tmp / "out"), cases=specs,
               errors=[{"rowOrder": None, **e} for e, _ in ERRORS], sizes=SIZES)
    (tmp / "job.json").write_text(json.dumps(job))
    proc = subprocess.run(["node", str(SCRIPT), str(tmp / "job.json")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = np.fromfile(tmp / "out", dtype=np.uint32)
    at = 0
    for c, spec in zip(cases, specs, strict=True):
        c.got = out[at:at + spec["outLen"]]
        at += spec["outLen"]
    assert at == len(out)
    answers: dict[str, Any] = json.loads(proc.stdout)
    return cases, answers


@pytest.mark.parametrize("qtype", TYPES, ids=lambda t: t.name)
def test_dequantizes_bit_for_bit_as_gguf_py(run: tuple[list[Case], dict[str, Any]], qtype: Q) -> None:
    cases = [c for c in run[0] if c.qtype == qtype]
    assert len(cases) >= 20
    for c in cases:
        label = f"{qtype.name} {c.rows}x{c.cols} order={c.order} transpose={c.transpose}"
        got = c.got
        assert got is not None
        n = c.rows * c.cols
        assert (got[:c.out_offset] == SENTINEL).all() and (got[c.out_offset + n:] == SENTINEL).all(), label
        want = c.expected()
        bad = np.flatnonzero(got[c.out_offset:c.out_offset + n] != want)
        assert not len(bad), f"{label}: {len(bad)} differ, first at {bad[0]}: " \
            f"{got[c.out_offset + bad[0]]:#010x} != {want[bad[0]]:#010x}"


def test_the_cases_reach_the_values_extremes(run: tuple[list[Case], dict[str, Any]]) -> None:
    """The blocks' values are not all small numbers: some are large, some tiny, some negative zero."""
    values = np.concatenate([c.expected().view(np.float32) for c in run[0] if c.qtype in HALF_FIELDS])
    assert np.abs(values).max() > 1e5 and (np.abs(values[values != 0]).min() < 1e-5)
    assert (values.view(np.uint32) == 0x80000000).any()


def test_unsupported_types_ragged_rows_and_short_sources_throw(run: tuple[list[Case], dict[str, Any]]) -> None:
    messages = run[1]["errors"]
    for (spec, name), message in zip(ERRORS, messages, strict=True):
        assert message is not None and name in message, (spec, message)


def test_tensor_bytes_are_gguf_pys(run: tuple[list[Case], dict[str, Any]]) -> None:
    from gguf.quants import quant_shape_to_byte_shape

    for (t, rows, cols), got in zip(SIZES, run[1]["sizes"], strict=True):
        assert got == rows * quant_shape_to_byte_shape([cols], Q(t))[0], Q(t).name
