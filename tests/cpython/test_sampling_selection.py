"""worker/sampling/ draws by selection, not by sorting: the same tokens, kept sets and log-probabilities
as the sorting reference (csi.backends.cpython.logits, numpy), for the same seed, at real vocabulary sizes and
on the distributions that used to be slow (flat), with ties, masks and every knob."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from csi.backends.cpython.logits import candidates, sample, token_logprobs
from csi.backends.cpython.mulberry32 import Mulberry32
from csi.core.backend import SamplingParams
from tests.support.paths import ROOT

DRAWS = 8
SEEDS = [0, 7, 2**33 + 5]

NODE = f"""
import {{ makeRng, sample, candidates, logprobs, Sampler }} from "{ROOT}/worker/sampling/index.js";
import {{ readFileSync }} from "node:fs";
const job = JSON.parse(readFileSync(process.argv[1], "utf8"));
const buf = readFileSync(process.argv[2]);
const all = new Float32Array(buf.buffer, buf.byteOffset, buf.byteLength / 4);
const out = job.cases.map((c) => {{
  const logits = all.subarray(c.offset, c.offset + c.size);
  const draws = c.seeds.map((seed) => {{
    const rng = makeRng(seed);
    return Array.from({{length: c.draws}}, () => sample(logits, c.params, rng));
  }});
  const kept = c.candidates ? candidates(logits, c.params) : null;
  const sampler = new Sampler({{...c.params, logprobs: true, top_logprobs: 5, seed: c.seeds[0]}});
  const choice = sampler.choose(logits, []);
  return {{draws, ids: kept && Array.from(kept.ids), probs: kept && Array.from(kept.probs),
          choice: {{token: choice.token, logprob: choice.logprob, top: choice.top}}}};
}});
console.log(JSON.stringify(out));
"""


def _shapes(size: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    normal = rng.standard_normal(size).astype(np.float32)
    peaked = normal.copy()
    peaked[rng.choice(size, 5, replace=False)] += np.float32(12)
    ties = np.round(normal * 2) / 2
    masked = np.where(rng.random(size) < 0.9, -np.inf, normal).astype(np.float32)
    one = np.full(size, -np.inf, dtype=np.float32)
    one[size // 3] = 0.5
    flat = (normal * 0.05).astype(np.float32)
    outlier = flat.copy()  # one far-off token (a -100 bias) must not coarsen the order of the rest
    outlier[size // 5] -= np.float32(100)
    return {"flat": flat, "normal": normal, "peaked": peaked, "ties": ties.astype(np.float32),
            "masked": masked, "one": one, "outlier": outlier, "constant": np.full(size, 0.25, dtype=np.float32)}


PARAMS = [SamplingParams(1.0), SamplingParams(0.7, 0, 0.9), SamplingParams(1.3, 0, 0.5),
          SamplingParams(1.0, 40, 1.0), SamplingParams(0.8, 1000, 0.95), SamplingParams(0.5, 0, 0.999),
          SamplingParams(2.0, 3000, 1.0), SamplingParams(1.0, 0, 0.05), SamplingParams(0.05, 0, 0.999),
          SamplingParams(0.3, 2000, 0.99)]


def _run(cases: list[dict], logits: np.ndarray, tmp: Path) -> list[dict]:
    (tmp / "job.json").write_text(json.dumps({"cases": cases}))
    logits.astype(np.float32).tofile(tmp / "logits.bin")
    out = subprocess.run(["node", "--input-type=module", "-e", NODE, str(tmp / "job.json"), str(tmp / "logits.bin")],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


@pytest.mark.parametrize("size", [151_936, 4_096])
def test_selection_draws_the_tokens_the_sorting_reference_draws(size, tmp_path):
    rng = np.random.default_rng(size)
    shapes = _shapes(size, rng)
    cases, blocks, expected = [], [], []
    offset = 0
    for name, logits in shapes.items():
        blocks.append(logits)
        for params in PARAMS:
            cases.append({"offset": offset, "size": size, "params": params.to_dict(), "seeds": SEEDS,
                          "draws": DRAWS, "candidates": True, "name": name})
            want = []
            for seed in SEEDS:
                g = Mulberry32(seed)
                want.append([sample(logits, params, g) for _ in range(DRAWS)])
            expected.append((name, params, logits, want))
        offset += size
    got = _run(cases, np.concatenate(blocks), tmp_path)
    for (name, params, logits, want), js in zip(expected, got, strict=True):
        where = f"{name} {params}"
        assert js["draws"] == want, where
        ids, probs = candidates(logits, params)
        assert js["ids"] == ids.tolist(), where
        np.testing.assert_allclose(js["probs"], probs, rtol=1e-9, err_msg=where)
        g = Mulberry32(SEEDS[0])
        assert js["choice"]["token"] == sample(logits, params, g), where
        logprob, top = token_logprobs(logits, js["choice"]["token"], 5)
        assert js["choice"]["logprob"] == pytest.approx(logprob, abs=1e-9), where
        assert [t for t, _ in js["choice"]["top"]] == [t for t, _ in top], where
        np.testing.assert_allclose([v for _, v in js["choice"]["top"]], [v for _, v in top], atol=1e-9)


def test_flat_distributions_draw_across_the_kept_set(tmp_path):
    """A flat distribution keeps most of the vocabulary under top-p 0.9; draws must spread over it
    with the reference's frequencies (not cluster at the front of the order)."""
    size = 49_152
    logits = (np.random.default_rng(1).standard_normal(size) * 0.01).astype(np.float32)
    params = SamplingParams(1.0, 0, 0.9)
    got = _run([{"offset": 0, "size": size, "params": params.to_dict(), "seeds": [42], "draws": 400,
                 "candidates": False}], logits, tmp_path)[0]["draws"][0]
    g = Mulberry32(42)
    assert got == [sample(logits, params, g) for _ in range(400)]
    assert len(set(got)) > 380  # ~44k tokens kept: repeats are rare
