"""The page's compressed forms of a GGUF tensor (worker/gguf_int8.js, run in node) against numpy's on
gguf-py's dequantization (tests/support/gguf_graph: int8_rows and block8_rows, what the CPython tests run
the graph with): int8 rows and 8-bit blocks, values and float32 scales bit for bit, rows reordered (and
for int8 transposed), a row of zeros given scale 1."""

from __future__ import annotations

import base64
import json
import subprocess

import numpy as np
import pytest
from gguf import GGMLQuantizationType
from gguf.quants import dequantize, quantize

from tests.support.gguf_graph import block8_rows, int8_rows
from tests.support.paths import ROOT

Q = GGMLQuantizationType
SCRIPT = """
const [module, job] = process.argv.slice(1);
const { requantizeInt8 } = await import(module);
const { type, src, rows, cols, order, transpose } = JSON.parse(job);
const bytes = Uint8Array.from(Buffer.from(src, "base64"));
const out = new Int8Array(rows * cols + 8).fill(99);
const scales = new Float32Array(rows + 2).fill(-1);
requantizeInt8(type, bytes, rows, cols, out, 4, scales, 1, { rowOrder: order ?? undefined, transpose });
console.log(JSON.stringify({ q: Array.from(out), s: Array.from(new Uint32Array(scales.buffer)) }));
"""


@pytest.mark.parametrize(("qtype", "transpose", "reorder"), [
    (Q.F32, False, False), (Q.Q8_0, True, False), (Q.Q4_K, True, True), (Q.Q6_K, False, True), (Q.Q4_0, True, False)])
def test_int8_rows_match_numpy(qtype: Q, transpose: bool, reorder: bool) -> None:
    rng = np.random.default_rng(int(qtype))
    rows, cols = 70, 256  # more rows than a tile
    values = (rng.standard_normal((rows, cols)) * rng.uniform(0.01, 3, (rows, 1))).astype(np.float32)
    values[5] = 0  # a row of zeros
    if qtype in (Q.F32, Q.Q8_0, Q.Q4_0):
        stored = quantize(values, qtype)
    else:  # gguf-py cannot quantize K-quants: random blocks with sane f16 scales
        from tests.unit.test_gguf_dequant import random_rows
        stored = random_rows(rng, qtype, rows, cols)
    order = [int(i) for i in rng.permutation(rows)] if reorder else None
    job = json.dumps({"type": int(qtype), "src": base64.b64encode(stored.tobytes()).decode(), "rows": rows,
                      "cols": cols, "order": order, "transpose": transpose})
    module = (ROOT / "worker" / "gguf_int8.js").as_uri()
    out = subprocess.run(["node", "--input-type=module", "-e", SCRIPT, module, job], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout)
    deq = dequantize(stored, qtype).astype(np.float32).reshape(rows, cols)
    if order is not None:
        deq = deq[order]
    q, scale = int8_rows(deq)
    expected_q = (q.T if transpose else q).ravel().tolist()
    assert got["q"][:4] == [99] * 4 and got["q"][4 + rows * cols:] == [99] * 4
    assert got["q"][4:4 + rows * cols] == expected_q
    assert got["s"][1:1 + rows] == scale.view(np.uint32).tolist()
    assert np.abs(q).max() == 127


BLOCKS_SCRIPT = """
const [module, job] = process.argv.slice(1);
const { requantizeBlocks8 } = await import(module);
const { type, src, rows, cols, order } = JSON.parse(job);
const bytes = Uint8Array.from(Buffer.from(src, "base64"));
const blocks = Math.ceil(cols / 32);
const out = new Uint8Array(4 + rows * blocks * 33 + 4).fill(99);
const scales = new Float32Array(rows * blocks + 2).fill(-1);
requantizeBlocks8(type, bytes, rows, cols, out, 4, scales, 1, 4 + rows * blocks * 32, { rowOrder: order ?? undefined });
console.log(JSON.stringify({ q: Array.from(out), s: Array.from(new Uint32Array(scales.buffer)) }));
"""


@pytest.mark.parametrize(("qtype", "cols", "reorder"), [
    (Q.F32, 80, False), (Q.Q8_0, 256, True), (Q.Q4_K, 256, True), (Q.Q4_1, 96, False)])
def test_8_bit_blocks_match_numpy(qtype: Q, cols: int, reorder: bool) -> None:
    """The nbits8 form's blocks (``requantizeBlocks8``) against numpy's (``block8_rows``): values, zero
    points and float32 scales bit for bit; a row not a whole number of blocks (80 columns) padded with
    zeros, a row of zeros given scale 1, rows of one sign."""
    rng = np.random.default_rng(int(qtype) + cols)
    rows = 70
    values = (rng.standard_normal((rows, cols)) * rng.uniform(0.01, 3, (rows, 1))).astype(np.float32)
    values[5] = 0
    values[6] = np.abs(values[6])
    values[7] = -np.abs(values[7])
    if qtype == Q.Q4_K:
        from tests.unit.test_gguf_dequant import random_rows
        stored = random_rows(rng, qtype, rows, cols)
    else:
        stored = quantize(values, qtype)
    order = [int(i) for i in rng.permutation(rows)] if reorder else None
    job = json.dumps({"type": int(qtype), "src": base64.b64encode(stored.tobytes()).decode(), "rows": rows,
                      "cols": cols, "order": order})
    module = (ROOT / "worker" / "gguf_int8.js").as_uri()
    out = subprocess.run(["node", "--input-type=module", "-e", BLOCKS_SCRIPT, module, job], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout)
    deq = dequantize(stored, qtype).astype(np.float32).reshape(rows, cols)
    if order is not None:
        deq = deq[order]
    q, scale, zp = block8_rows(deq)
    n = q.size
    assert got["q"][:4] == [99] * 4 and got["q"][4 + n + zp.size:] == [99] * 4
    assert got["q"][4:4 + n] == q.ravel().tolist()
    assert got["q"][4 + n:4 + n + zp.size] == zp.tolist()
    assert got["s"][1:1 + scale.size] == scale.view(np.uint32).tolist()
    assert got["s"][0] == got["s"][-1] == np.float32(-1).view(np.uint32)
    blocks = -(-cols // 32)
    back = ((q.astype(np.float32) - zp.reshape(rows, blocks, 1)) * scale.reshape(rows, blocks, 1)).reshape(rows, -1)
    step = scale.reshape(rows, blocks).repeat(32, axis=1)[:, :cols]
    assert (np.abs(back[:, :cols] - deq) <= step / 2 * 1.001).all()  # within half a step of each value
