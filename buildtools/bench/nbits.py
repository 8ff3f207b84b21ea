"""Experiment (not part of ``build.py bench``): how a quantized model's weights can stay small in
browser memory. Decoders of real shapes with random weights (``tiny`` is a smoke test of this script),
in these forms:

- ``fp32``: every weight a float32 initializer, as csi-web runs an imported GGUF today (its blocks
  expanded to fp32 before the session is created; a tied LM head is a second, transposed copy);
- ``nbits``: every 2-D MatMul weight (the LM head included) a 4-bit ``com.microsoft::MatMulNBits``
  (blocks of 32 along K, a float32 scale and a uint8 zero point per block); the embedding fp32;
- ``nbits_gbq``: ``nbits`` with the embedding a 4-bit ``com.microsoft::GatherBlockQuantized``;
- ``q8``, for comparison: the fp32 form's MatMuls dynamically quantized to int8 by onnxruntime's
  ``quantize_dynamic`` (``MatMulInteger``, what transformers.js's ``model_quantized.onnx`` is);
- ``q8_gbq``: ``q8`` with the embedding as in ``nbits_gbq``;
- ``q8c_gbq``: every MatMul weight int8 per output column (symmetric) in one
  ``com.microsoft::DynamicQuantizeMatMul``, made straight from the export (no fp32 form: lean enough
  for a 1.5B), the embedding as in ``nbits_gbq``.

The first three compute the same function: the fp32 form's weights are the 4-bit ones dequantized,
so onnxruntime (CPython) checks the graph surgery by comparing logits (q8_gbq against q8 likewise).
Then each form runs in headless Chromium on onnxruntime-web directly (the WASM EP, the build and
thread count csi-web uses):
session creation, a 16-token prefill, greedy decoding on the KV cache, and the browser's peak
resident memory; optionally one functional run of ``nbits`` on WebGPU (SwiftShader here).

Usage: ``PYTHONPATH=py:. .venv/bin/python -m buildtools.bench.nbits [--shapes 135m,0.5b,1.5b]
[--forms ...] [--webgpu] [--info-log]`` (models are built once into ``--work``, default
``/tmp/csi-nbits``; a 1.5B's fp32 form and ``q8`` need ~15 GB of RAM to build: ``--forms
nbits_gbq,q8c_gbq`` does not). Figures of 2026-11 are in docs/testing.md, "Weights in memory".
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from .nbits_forms import ARGS, CHROMIUM, FORMS, ORT_DIST, PROMPT, SHAPES, Shape, build_forms, form_bytes, log
from .startup import peak_browser_rss

# ---------------------------------------------------------------------------------------------
# The check: the quantized forms against the fp32 form in onnxruntime (CPython)


def _feeds(shape: Shape, ids: list[int], start: int, past: list[np.ndarray]) -> dict[str, np.ndarray]:
    n = len(ids)
    feeds = {"input_ids": np.array([ids], np.int64), "attention_mask": np.ones((1, start + n), np.int64),
             "position_ids": np.arange(start, start + n, dtype=np.int64)[None]}
    for i in range(shape.layers):
        feeds[f"past_key_values.{i}.key"], feeds[f"past_key_values.{i}.value"] = past[2 * i], past[2 * i + 1]
    return feeds


def run_cpython(shape: Shape, path: Path, steps: int) -> tuple[list[np.ndarray], list[int]]:
    """The prefill's logits and each decode step's, greedy; and the tokens chosen."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    past = [np.zeros((1, shape.kv_heads, 0, shape.head_dim), np.float32)] * (2 * shape.layers)
    ids, start, logits_all, chosen = list(PROMPT), 0, [], []
    for _ in range(steps + 1):
        logits, *past = session.run(None, _feeds(shape, ids, start, past))
        logits_all.append(logits[0])
        start += len(ids)
        ids = [int(logits[0, -1].argmax())]
        chosen.append(ids[0])
    return logits_all, chosen


CHECK_STEPS = 3


def logits_check(shape: Shape, paths: dict[str, Path]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Each form's logits against those of the form it must equal (a prefill and CHECK_STEPS decode
    steps): the 4-bit forms against fp32, q8_gbq against q8; q8 against fp32 for information only (an
    int8 quantization of its own). And every form's run, for the browser's to be compared with."""
    runs = {form: run_cpython(shape, p, CHECK_STEPS) for form, p in paths.items() if p.exists()}
    out: dict[str, Any] = {}
    if "fp32" in runs:
        out["max_abs_logit_fp32"] = float(max(np.abs(r).max() for r in runs["fp32"][0]))
    for form, against in (("nbits", "fp32"), ("nbits_gbq", "fp32"), ("q8_gbq", "q8"), ("q8", "fp32"),
                          ("q8c_gbq", "fp32")):
        if form in runs and against in runs:
            (got, ids), (ref, ref_ids) = runs[form], runs[against]
            out[f"{form}_vs_{against}"] = {
                "max_abs_diff": float(max(np.abs(a - b).max() for a, b in zip(got, ref, strict=True))),
                "same_tokens": ids == ref_ids}
    return out, runs


def against_cpython(r: dict[str, Any], run: tuple[list[np.ndarray], list[int]] | None) -> None:
    """The browser's last-position logits and tokens against onnxruntime's (CPython) for the same form."""
    rows = r.pop("last_rows", None)
    if not rows or run is None:
        return
    logits, ids = run
    r["max_abs_diff_vs_cpython"] = float(max(np.abs(np.asarray(row, np.float32) - want[-1]).max()
                                             for row, want in zip(rows, logits, strict=False)))
    r["same_tokens_as_cpython"] = r["tokens"][:len(ids)] == ids


# ---------------------------------------------------------------------------------------------
# The browser: onnxruntime-web directly, in a page of a static server with COOP/COEP

PAGE_SCRIPT = """
async ([device, model, data, cfg]) => {
  const mod = device === 'webgpu' ? '/ort/ort.webgpu.min.mjs' : '/ort/ort.wasm.min.mjs';
  const ort = await import(mod);
  // csi-web's choice: the plain SIMD build on WASM, the asyncify one (WebGPU EP) on WebGPU
  const build = device === 'webgpu' ? 'ort-wasm-simd-threaded.asyncify' : 'ort-wasm-simd-threaded';
  ort.env.wasm.wasmPaths = {mjs: `/ort/${build}.mjs`, wasm: `/ort/${build}.wasm`};
  ort.env.wasm.numThreads = cfg.threads;
  if (cfg.info_log) ort.env.logLevel = 'info';
  const t0 = performance.now();
  const session = await ort.InferenceSession.create(model, {executionProviders: [device],
    externalData: [{path: data.split('/').at(-1), data}], extra: cfg.extra,
    ...(cfg.info_log ? {logSeverityLevel: 0} : {})});
  const create_s = (performance.now() - t0) / 1000;
  const {layers, kv_heads, head_dim} = cfg;
  const i64 = (xs) => BigInt64Array.from(xs.map((x) => BigInt(x)));
  let past = [];
  const empty = () => new ort.Tensor('float32', new Float32Array(0), [1, kv_heads, 0, head_dim]);
  for (let i = 0; i < 2 * layers; i++) past.push(empty());
  let start = 0;
  const step = async (ids) => {
    const n = ids.length;
    const feeds = {input_ids: new ort.Tensor('int64', i64(ids), [1, n]),
                   attention_mask: new ort.Tensor('int64', i64(new Array(start + n).fill(1)), [1, start + n]),
                   position_ids: new ort.Tensor('int64', i64(ids.map((_, j) => start + j)), [1, n])};
    for (let i = 0; i < layers; i++) {
      feeds[`past_key_values.${i}.key`] = past[2 * i];
      feeds[`past_key_values.${i}.value`] = past[2 * i + 1];
    }
    const out = await session.run(feeds, cfg.info_log ? {logSeverityLevel: 0, logVerbosityLevel: 0} : {});
    const logits = out.logits.data;
    const vocab = out.logits.dims[2];
    const last = logits.subarray((n - 1) * vocab, n * vocab);
    let best = 0;
    for (let v = 1; v < vocab; v++) if (last[v] > last[best]) best = v;
    past = [];
    for (let i = 0; i < layers; i++) past.push(out[`present.${i}.key`], out[`present.${i}.value`]);
    start += n;
    return {best, last};
  };
  const t1 = performance.now();
  const first = await step(cfg.prompt);
  const prefill_s = (performance.now() - t1) / 1000;
  const tokens = [first.best];
  const lastRows = [Array.from(first.last)];
  const t2 = performance.now();
  for (let i = 0; i < cfg.steps; i++) {
    const r = await step([tokens.at(-1)]);
    tokens.push(r.best);
    if (i < cfg.keep_rows - 1) lastRows.push(Array.from(r.last));
  }
  const decode_s = (performance.now() - t2) / 1000;
  let measured = null;
  if (self.crossOriginIsolated && performance.measureUserAgentSpecificMemory) {
    try { measured = (await performance.measureUserAgentSpecificMemory()).bytes; } catch (e) { measured = String(e); }
  }
  await session.release();
  return {create_s, prefill_s, decode_s, decode_tokens_per_s: cfg.steps / decode_s, tokens,
          last_rows: lastRows, measure_memory_bytes: measured};
}
"""

ADAPTER_SCRIPT = """
async () => {
  if (!navigator.gpu) return null;
  const a = await navigator.gpu.requestAdapter();
  if (!a) return null;
  const i = a.info ?? {};
  return {vendor: i.vendor, architecture: i.architecture, description: i.description,
          fallback: i.isFallbackAdapter ?? a.isFallbackAdapter ?? null};
}
"""


def _site(work: Path) -> Path:
    site = work / "site"
    site.mkdir(parents=True, exist_ok=True)
    for name, target in (("ort", ORT_DIST.resolve()), ("models", work.resolve())):
        link = site / name
        if not link.exists():
            link.symlink_to(target)
    (site / "index.html").write_text("<!doctype html><title>nbits</title>\n")
    return site


# what onnxruntime's CPU MatMulNBits logs (at INFO) when MLAS has no 4-bit kernel for the target:
# it then expands the whole B to fp32 in a temporary buffer on every call
UNPACKED = "Falling back to using unpacked compute mode"


def browser_run(playwright: Any, url: str, shape: Shape, model_url: str, device: str, steps: int,
                threads: int, keep_rows: int = 1, info_log: bool = False,
                extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """One form in a browser of its own (its peak memory is its own)."""
    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
    try:
        page = browser.new_page()
        console: list[str] = []
        page.on("console", lambda m: console.append(m.text) if UNPACKED in m.text else None)
        page.set_default_timeout(1_800_000)
        page.goto(url + "index.html")
        time.sleep(1.0)
        with peak_browser_rss() as before:
            time.sleep(0.3)
        cfg = {"layers": shape.layers, "kv_heads": shape.kv_heads, "head_dim": shape.head_dim, "prompt": PROMPT,
               "steps": steps, "threads": threads, "keep_rows": keep_rows, "info_log": info_log,
               "extra": extra or {}}
        t = time.perf_counter()
        with peak_browser_rss() as peak:
            try:
                r = page.evaluate(PAGE_SCRIPT, [device, model_url, model_url + ".data", cfg])
            except Exception as exc:  # an out-of-memory or a missing kernel is a result
                r = {"error": f"{type(exc).__name__}: {str(exc)[:400]}"}
        r["wall_s"] = time.perf_counter() - t
        if info_log:
            r["unpacked_fallback_logs"] = len(console)
        r["idle_browser_rss_mb"] = before["sum"] / 2**20
        r["peak_browser_rss_mb"] = peak["sum"] / 2**20
        r["peak_largest_process_rss_mb"] = peak["largest"] / 2**20
        return r
    finally:
        browser.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--shapes", default="135m,0.5b")
    ap.add_argument("--forms", default=",".join(FORMS))
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "csi-nbits")
    ap.add_argument("--steps", type=int, default=16, help="decode steps timed after the prefill")
    ap.add_argument("--accuracy-level", type=int, default=0, help="MatMulNBits accuracy_level (0: fp32 compute)")
    ap.add_argument("--threads", type=int, default=max(1, min(4, (os.cpu_count() or 2) - 1)),
                    help="ORT-web WASM threads (csi-web: hardwareConcurrency - 1, 1 to 4)")
    ap.add_argument("--webgpu", action="store_true", help="also one functional run of nbits on WebGPU")
    ap.add_argument("--no-check", action="store_true", help="skip the CPython logits check")
    ap.add_argument("--no-browser", action="store_true")
    ap.add_argument("--info-log", action="store_true", help="ORT INFO logs: count MatMulNBits' fp32 fallbacks")
    ap.add_argument("--lut-gemm", action="store_true", help="session config mlas.use_lut_gemm=1")
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    from ..site.serve import serve_in_thread

    forms = args.forms.split(",")
    result: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cpus": os.cpu_count(),
                              "threads": args.threads, "accuracy_level": args.accuracy_level, "lut_gemm": args.lut_gemm,
                              "shapes": {}}
    site = _site(args.work)
    server, url = serve_in_thread(site)
    try:
        for key in args.shapes.split(","):
            shape = SHAPES[key]
            sub = f"{key}-acc{args.accuracy_level}"
            paths = build_forms(shape, args.work / sub, args.accuracy_level, forms)
            entry: dict[str, Any] = {"shape": shape.__dict__,
                                     "file_mb": {f: form_bytes(p) / 2**20 for f, p in paths.items() if p.exists()}}
            result["shapes"][key] = entry
            runs: dict[str, Any] = {}
            if not args.no_check:
                log(f"{key}: logits check (CPython onnxruntime)")
                entry["logits_check"], runs = logits_check(shape, paths)
                log(f"{key}: {json.dumps(entry['logits_check'])}")
            if args.no_browser:
                continue
            entry["wasm"] = {}
            with sync_playwright() as p:
                for form in forms:
                    log(f"{key}: {form} on WASM")
                    r = browser_run(p, url, shape, f"/models/{sub}/{form}/model.onnx", "wasm", args.steps,
                                    args.threads, keep_rows=CHECK_STEPS + 1, info_log=args.info_log,
                                    extra={"mlas": {"use_lut_gemm": "1"}} if args.lut_gemm else None)
                    against_cpython(r, runs.get(form))
                    entry["wasm"][form] = r
                    log(f"{key}: {form}: {json.dumps(r)}")
                if args.webgpu:
                    b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
                    pg = b.new_page()
                    pg.goto(url + "index.html")
                    entry["webgpu_adapter"] = pg.evaluate(ADAPTER_SCRIPT)
                    b.close()
                    log(f"{key}: nbits on WebGPU ({entry['webgpu_adapter']})")
                    r = browser_run(p, url, shape, f"/models/{sub}/nbits/model.onnx", "webgpu", CHECK_STEPS,
                                    args.threads, keep_rows=CHECK_STEPS + 1)
                    against_cpython(r, runs.get("nbits") or run_cpython(shape, paths["nbits"], CHECK_STEPS))
                    entry["webgpu_nbits"] = r
                    log(f"{key}: webgpu: {json.dumps(r)}")
    finally:
        server.shutdown()
        print(json.dumps(result, indent=2), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
