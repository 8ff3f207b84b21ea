"""The WebAssembly sampling kernel (worker/sampling/kernel*.js, kernel.wasm as build.py compiles it),
run by node, against a float64 numpy reference computed here: the same tokens for the same seeds and
log-probabilities within 1e-9, at vocabulary 151,936 on flat, normal and peaked logits, for each knob
(temperature, top-p, top-k, penalties, bias, log-probabilities) and for all of them at once."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from buildtools.site.kernel import build_kernel
from csi.backends.cpython.mulberry32 import Mulberry32
from tests.support.paths import ROOT
from tests.support.sampling_reference import log_softmax, reference_distribution

VOCAB = 151_936
STEPS = 4
SEEDS = [3, 2**33 + 7]

NODE = f"""
import {{ loadKernel, Sampler }} from "{ROOT}/worker/sampling/index.js";
import {{ readFileSync }} from "node:fs";
const kernel = await loadKernel(readFileSync(process.argv[3]));
const job = JSON.parse(readFileSync(process.argv[1], "utf8"));
const buf = readFileSync(process.argv[2]);
const all = new Float32Array(buf.buffer, buf.byteOffset, buf.byteLength / 4);
const out = job.map((c) => {{
  const logits = all.subarray(c.offset, c.offset + c.size);
  const sampler = new Sampler({{top_k: 0, top_p: 1, ...c.params}}, null, kernel);
  const sequence = [...c.sequence];
  const choices = [];
  for (let i = 0; i < c.steps; i++) {{
    const choice = sampler.choose(logits, sequence);
    choices.push(choice);
    sequence.push(choice.token);
  }}
  return {{path: sampler.path, choices}};
}});
console.log(JSON.stringify(out));
"""

KNOBS: dict[str, dict[str, Any]] = {
    "temperature": {"temperature": 0.8},
    "temperature_1": {"temperature": 1.0},
    "top_p": {"temperature": 0.7, "top_p": 0.9},
    "top_k": {"temperature": 0.8, "top_k": 40},
    "top_k_top_p": {"temperature": 1.2, "top_k": 2000, "top_p": 0.95},
    "cold": {"temperature": 0.05, "top_p": 0.999},
    "penalties": {"temperature": 1.0, "repetition_penalty": 1.3, "frequency_penalty": 0.5, "presence_penalty": 0.4},
    "bias": {"temperature": 0.9, "logit_bias": [[5, 3.0], [9, -100.0], [VOCAB - 1, 1.5]]},
    "logprobs": {"temperature": 0.7, "logprobs": True, "top_logprobs": 5},
    "greedy_logprobs": {"temperature": 0.0, "logprobs": True, "top_logprobs": 20},
    "everything": {"temperature": 0.7, "top_k": 0, "top_p": 0.9, "repetition_penalty": 1.1,
                   "frequency_penalty": 0.5, "presence_penalty": 0.3, "logit_bias": [[5, 2.0], [9, -100.0]],
                   "logprobs": True, "top_logprobs": 20},
}


def _shapes() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(41)
    normal = rng.standard_normal(VOCAB).astype(np.float32)
    peaked = normal.copy()
    peaked[rng.choice(VOCAB, 5, replace=False)] += np.float32(12)
    dominant = normal.copy()  # one logit alone within reach, as a logit processor's or a bias's +100 makes
    dominant[rng.integers(VOCAB)] = np.float32(100)
    return {"flat": (normal * 0.05).astype(np.float32), "normal": normal, "peaked": peaked, "dominant": dominant}


def _processed(logits: np.ndarray, k: dict[str, Any], sequence: list[int], generated: list[int]) -> np.ndarray:
    """Penalties and bias as the site applies them: in float64, each result stored as float32."""
    z = logits.astype(np.float32).copy()
    rep = k.get("repetition_penalty", 1.0)
    if rep != 1.0:
        for t in set(sequence):
            v = float(z[t])
            z[t] = np.float32(v / rep if v > 0 else v * rep)
    freq, pres = k.get("frequency_penalty", 0.0), k.get("presence_penalty", 0.0)
    for t in set(generated):
        z[t] = np.float32(float(z[t]) - (generated.count(t) * freq + pres))
    for t, b in k.get("logit_bias", []):
        z[t] = np.float32(float(z[t]) + b)
    return z


def _reference(logits: np.ndarray, k: dict[str, Any], seed: int, sequence: list[int]) -> list[dict[str, Any]]:
    """Each step's token (mulberry32 draws walking the kept tokens, most likely first) and logprobs."""
    g, sequence, generated, out = Mulberry32(seed), list(sequence), [], []
    for _ in range(STEPS):
        z = _processed(logits, k, sequence, generated)
        if k["temperature"] == 0:
            token = int(np.argmax(z))
        else:
            _, probs = reference_distribution(z, temperature=k["temperature"], top_k=k.get("top_k", 0),
                                              top_p=k.get("top_p", 1.0))
            ids = np.arange(VOCAB)
            order = np.lexsort((ids, -probs))
            order = order[probs[order] > 0]
            cum = np.cumsum(probs[order])
            token = int(order[min(int(np.searchsorted(cum, g.next(), side="right")), len(order) - 1)])
        step: dict[str, Any] = {"token": token}
        if k.get("logprobs"):
            lp = log_softmax(z.astype(np.float64))
            top = np.lexsort((np.arange(VOCAB), -lp))[: k["top_logprobs"]]
            step |= {"logprob": float(lp[token]), "top": [[int(t), float(lp[t])] for t in top]}
        out.append(step)
        sequence.append(token)
        generated.append(token)
    return out


def _run(cases: list[dict[str, Any]], logits: np.ndarray, tmp: Path) -> list[dict[str, Any]]:
    (tmp / "job.json").write_text(json.dumps(cases))
    logits.astype(np.float32).tofile(tmp / "logits.bin")
    out = subprocess.run(["node", "--input-type=module", "-e", NODE, str(tmp / "job.json"), str(tmp / "logits.bin"),
                          str(build_kernel())], capture_output=True, text=True, check=True, timeout=600)
    return json.loads(out.stdout)


@pytest.mark.parametrize("shape", ["flat", "normal", "peaked", "dominant"])
def test_the_kernel_draws_the_reference_tokens_and_logprobs(shape: str, tmp_path: Path) -> None:
    logits = _shapes()[shape]
    sequence = [(i * 7919) % VOCAB for i in range(64)]
    cases = [{"offset": 0, "size": VOCAB, "params": {**knob, "seed": seed}, "sequence": sequence, "steps": STEPS,
              "name": name} for name, knob in KNOBS.items() for seed in SEEDS]
    got = _run(cases, logits, tmp_path)
    for case, js in zip(cases, got, strict=True):
        where = f"{shape} {case['name']} seed {case['params']['seed']}"
        assert js["path"] == "wasm", where
        want = _reference(logits, KNOBS[case["name"]], case["params"]["seed"], sequence)
        assert [c["token"] for c in js["choices"]] == [w["token"] for w in want], where
        for c, w in zip(js["choices"], want, strict=True):
            if "logprob" in w:
                assert c["logprob"] == pytest.approx(w["logprob"], abs=1e-9), where
                assert [t for t, _ in c["top"]] == [t for t, _ in w["top"]], where
                np.testing.assert_allclose([v for _, v in c["top"]], [v for _, v in w["top"]], atol=1e-9,
                                           err_msg=where)


def test_the_kernel_is_built_from_its_sources_and_cached(tmp_path: Path) -> None:
    """build.py compiles the kernel with npm's AssemblyScript into a cache keyed by its inputs."""
    first = build_kernel(tmp_path)
    assert first.read_bytes()[:4] == b"\0asm" and first.parent == tmp_path
    mtime = first.stat().st_mtime_ns
    assert build_kernel(tmp_path) == first and first.stat().st_mtime_ns == mtime  # not compiled again
