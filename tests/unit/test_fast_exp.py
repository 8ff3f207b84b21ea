"""worker/sampling/fast_exp.js against CPython's math.exp (the C library's): within two ulps on the
weighing loops' range, and exactly Math.exp's answer outside it (NaN, -Infinity, underflow)."""

from __future__ import annotations

import json
import math
import random
import subprocess

from tests.support.paths import ROOT


def _js(xs: list[float]) -> list[float | None]:
    script = (f'import {{ fastExp }} from "{ROOT / "worker" / "sampling" / "fast_exp.js"}";\n'
              'import { readFileSync } from "node:fs";\n'
              'const xs = JSON.parse(readFileSync(0, "utf8"))\n'
              '  .map((x) => x === null ? NaN : x === "-inf" ? -Infinity : x);\n'
              'const ys = xs.map((x) => fastExp(x)).map((y) => Number.isNaN(y) ? null : y);\n'
              'process.stdout.write(JSON.stringify(ys));')
    encoded = json.dumps([None if math.isnan(x) else "-inf" if x == -math.inf else x for x in xs])
    out = subprocess.run(["node", "--input-type=module", "-e", script], input=encoded, capture_output=True,
                         text=True, check=True, timeout=60)
    return json.loads(out.stdout)


def test_fast_exp_is_within_two_ulps_of_the_c_library() -> None:
    rng = random.Random(28)
    xs = [-rng.uniform(0, 40) for _ in range(20_000)] + [-rng.uniform(0, 708) for _ in range(20_000)]
    xs += [0.0, -0.0, -1e-300, -5e-324, -math.log(2) / 128, -math.log(2) / 64, -708.0, -707.9999, 0.5, 1.0, 700.0]
    got = _js(xs)
    worst = max(abs(g - math.exp(x)) / math.ulp(math.exp(x)) for x, g in zip(xs, got, strict=True) if g is not None)
    assert all(g is not None for g in got)
    assert worst <= 2.0, worst


def test_outside_the_range_it_is_the_c_library_exactly() -> None:
    xs = [-708.5, -745.0, -745.2, -746.0, -1000.0, -math.inf, math.nan]
    got = _js(xs)
    assert got[:-2] == [math.exp(x) for x in xs[:-2]]
    assert got[-2] == 0.0 and got[-1] is None  # -Infinity gives 0, NaN gives NaN
