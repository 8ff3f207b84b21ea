"""Flat memory: many generations, load/unload cycles and model switches in one worker, with
``engine.memoryStats({jsHeap: true})`` at each step; then whether each figure came back to its
baseline (or stopped growing) within the bounds stated in ``BOUNDS``.

WebAssembly memories grow and never shrink, so for them "flat" means a plateau: once each phase
has been through one round, another round does not make them grow. The JS heap outside the wasm
memories, the objects Python tracks and the GPU buffers can fall again, so they must come back
near their baseline."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

MIB = 1 << 20

MEMORY_SCRIPT = """
async ([device, plan]) => {
  const { CreateWebWorkerEngine } = await import('/web/engine.js');
  const engine = await CreateWebWorkerEngine(new Worker('/worker/worker.js', {type: 'module'}), plan.model,
                                             {device});
  const t0 = performance.now();
  const steps = [];
  const snap = async (phase, step, model) => {
    const s = await engine.memoryStats({jsHeap: true});
    steps.push({phase, step, model, t_s: (performance.now() - t0) / 1000, ...s});
  };
  const finishes = {};
  const ask = (model, i) => [{role: 'user', content: `Question ${i}: what does json.dumps do?`}];
  // the kinds of request, in turn: greedy; sampling with logprobs; a stop sequence; a stream whose
  // AbortSignal fires after its fifth chunk; a JSON schema of its own (a grammar compiled, cached,
  // and evicted from the cache later)
  const schema = (i) => ({type: 'json_schema', json_schema: {name: 'answer', schema: {type: 'object',
    properties: {[`n_${i}`]: {type: 'integer'}}, required: [`n_${i}`]}}});
  const kinds = [
    async (model, i) => (await engine.chat.completions.create({model, messages: ask(model, i), temperature: 0,
      max_tokens: plan.tokens})).choices[0].finish_reason,
    async (model, i) => (await engine.chat.completions.create({model, messages: ask(model, i), temperature: 0.8,
      top_p: 0.9, seed: i, logprobs: true, top_logprobs: 5, max_tokens: plan.tokens})).choices[0].finish_reason,
    async (model, i) => (await engine.chat.completions.create({model, messages: ask(model, i), temperature: 0.7,
      seed: i, stop: ['.', '\\n'], max_tokens: plan.tokens})).choices[0].finish_reason,
    async (model, i) => {
      const ctrl = new AbortController();
      const s = await engine.chat.completions.create({model, messages: ask(model, i), temperature: 0,
        ignore_eos: true, max_tokens: 4 * plan.tokens, stream: true}, {signal: ctrl.signal});
      let n = 0, finish = null;
      for await (const c of s) {
        if (++n === 5) ctrl.abort();
        finish = c.choices[0]?.finish_reason ?? finish;
      }
      return finish;
    },
    async (model, i) => (await engine.chat.completions.create({model, messages: ask(model, i), temperature: 0,
      max_tokens: plan.tokens, response_format: schema(i)})).choices[0].finish_reason,
  ];
  const generate = async (model, i) => {
    const kind = i % kinds.length;
    const finish = await kinds[kind](model, i);
    const key = `${['greedy', 'sampling_logprobs', 'stop', 'stream_abort', 'json_schema'][kind]}:${finish}`;
    finishes[key] = (finishes[key] ?? 0) + 1;
  };
  // warm-up: each kind once, so what is made on first use is made before the baseline
  for (let i = 0; i < kinds.length; i++) await generate(plan.model, i);
  await snap('baseline', 0, plan.model);
  for (let i = 1; i <= plan.generations; i++) {
    await generate(plan.model, i);
    if (i % plan.every === 0 || i === plan.generations) await snap('generations', i, plan.model);
  }
  for (let c = 1; c <= plan.cycles; c++) {
    await engine.unload();
    await snap('unloaded', c, null);
    await engine.reload(plan.model);
    await generate(plan.model, c);
    await snap('reloaded', c, plan.model);
  }
  for (let s = 1; s <= plan.switches; s++) {
    const model = s % 2 ? plan.other : plan.model;
    await engine.reload(model);
    await generate(model, s);
    await snap('switched', s, model);
  }
  await engine.unload();
  await snap('end_unloaded', 0, null);
  engine.terminate();
  return {steps, finishes};
}
"""


@dataclass(frozen=True)
class Plan:
    """How much the run does: ``generations`` on ``model`` (a snapshot every ``every``), ``cycles``
    unload + reload, ``switches`` reloads alternating ``other`` and ``model``."""

    model: str = "tiny-chat"
    other: str = "smollm2-135m-instruct"
    generations: int = 200
    every: int = 20
    cycles: int = 20
    switches: int = 10
    tokens: int = 24


# The bounds (bytes, or tracked objects), each with its reason:
BOUNDS = {
    # a wasm memory grows by whole pages, often by a large step: any growth once a phase has gone
    # through its first half is a leak, however small it is on the heap
    "wasm_growth_over_last_half": 0,
    # the JS heap outside the wasm memories (the worker's and the page's), measured on live objects
    # only: what a model used once leaves in shared caches (code compiled for its paths, transformers.js's
    # own) stays; 2.1 MiB after SmolLM2 came and went, here (2026-11)
    "js_heap_over_baseline": 8 * MIB,
    # objects Python's collector tracks: caches of bounded size (per model id) fill on first use;
    # they move by 19 over the whole run, here
    "python_objects_over_baseline": 2_000,
    # GPU buffers: every buffer of a model is destroyed (or collected) once it is unloaded
    "gpu_buffer_bytes_after_unload": 0,
}

WASM_KEYS = ("pyodide_wasm_bytes", "ort_wasm_bytes", "other_wasm_bytes")


def _wasm(step: dict[str, Any]) -> int:
    return sum(step.get(k) or 0 for k in WASM_KEYS)


def js_heap_outside_wasm(step: dict[str, Any]) -> int | None:
    """The page's and its workers' JS heap less the wasm memories (which the browser counts in it)."""
    heap = step.get("js_heap")
    if not heap:
        return None
    return int(heap["workers_bytes"] + heap["page_bytes"] - _wasm(step))


def _series(steps: list[dict[str, Any]], key: str) -> list[int]:
    return [s[key] for s in steps if s.get(key) is not None]


def _plateau(steps: list[dict[str, Any]], key: str) -> dict[str, Any]:
    """Growth of ``key`` over the last half of ``steps`` (which all have the same state)."""
    values = _series(steps, key)
    if len(values) < 2:
        return {"growth_over_last_half": None}
    half = values[(len(values) - 1) // 2:]
    return {"first": values[0], "mid": half[0], "last": values[-1], "max": max(values),
            "growth_over_last_half": half[-1] - half[0]}


def judge(steps: list[dict[str, Any]]) -> dict[str, Any]:
    """Baseline, max and end of every figure, and each bound's check (``ok`` is all of them)."""
    for s in steps:
        s["js_heap_outside_wasm_bytes"] = js_heap_outside_wasm(s)
    base = steps[0]
    model = base["model"]
    phase = {name: [s for s in steps if s["phase"] == name] for name in ("generations", "unloaded", "reloaded")}
    switched = [s for s in steps if s["phase"] == "switched"]
    keys = (*WASM_KEYS, "js_heap_outside_wasm_bytes", "python_objects", "gpu_buffer_bytes", "models")
    figures = {k: {"baseline": base.get(k), "max": max(_series(steps, k), default=None),
                   "end_on_model": [s for s in steps if s["model"] == model][-1].get(k),
                   "end_unloaded": steps[-1].get(k)} for k in keys}
    checks: dict[str, dict[str, Any]] = {}
    # wasm memories: a plateau within each phase, and across the switches (each model's state
    # compared with the same model's state)
    for key in WASM_KEYS:
        for name, group in (("generations", phase["generations"]), ("load_unload", phase["reloaded"]),
                            *((f"switches_to_{m}", [s for s in switched if s["model"] == m])
                              for m in sorted({s["model"] for s in switched}))):
            p = _plateau(group, key)
            if p["growth_over_last_half"] is not None:
                checks[f"{key}:{name}"] = {**p, "bound": BOUNDS["wasm_growth_over_last_half"],
                                           "ok": p["growth_over_last_half"] <= BOUNDS["wasm_growth_over_last_half"]}
    # JS heap and Python objects: every step with the baseline's model loaded, or none, stays near
    # the baseline
    on_model = [s for s in steps if s["model"] in (model, None)]
    for key, bound in (("js_heap_outside_wasm_bytes", BOUNDS["js_heap_over_baseline"]),
                       ("python_objects", BOUNDS["python_objects_over_baseline"])):
        values = _series(on_model, key)
        if values and base.get(key) is not None:
            worst = max(values) - base[key]
            checks[key] = {"baseline": base[key], "max": max(values), "end": values[-1], "over_baseline": worst,
                           "bound": bound, "ok": worst <= bound}
    # nothing loaded: no model, no GPU buffer left
    unloaded = [s for s in steps if s["model"] is None]
    checks["models_after_unload"] = {"values": sorted({s["models"] for s in unloaded}),
                                     "ok": all(s["models"] == 0 for s in unloaded)}
    gpu = _series(unloaded, "gpu_buffer_bytes")
    if gpu:
        checks["gpu_buffer_bytes_after_unload"] = {"max": max(gpu), "bound": BOUNDS["gpu_buffer_bytes_after_unload"],
                                                   "ok": max(gpu) <= BOUNDS["gpu_buffer_bytes_after_unload"]}
    return {"figures": figures, "checks": checks, "ok": all(c["ok"] for c in checks.values())}


def memory_run(page: Any, device: str, plan: Plan) -> dict[str, Any]:
    """One run of ``plan`` on ``device`` in ``page`` (a page of the site): every step, and the judgement."""
    raw = page.evaluate(MEMORY_SCRIPT, [device, asdict(plan)])
    return {"device": device, "plan": asdict(plan), "finish_reasons": raw["finishes"], **judge(raw["steps"]),
            "steps": raw["steps"]}


def memory_bench(playwright: Any, url: str, chromium: str, args: list[str]) -> dict[str, Any]:
    """The bench section: the full plan on WASM, and a short one on WebGPU (SwiftShader here), in a
    browser of their own that measures the JS heap at once (not at its next garbage collection)."""
    browser = playwright.chromium.launch(executable_path=chromium, args=[
        *args, "--enable-blink-features=ForceEagerMeasureMemory", "--enable-unsafe-webgpu"])
    try:
        out: dict[str, Any] = {"bounds": BOUNDS}

        def run(device: str, plan: Plan) -> dict[str, Any]:
            page = browser.new_page()
            page.set_default_timeout(1_800_000)
            page.goto(url + "web/engine.js")
            try:
                return memory_run(page, device, plan)
            finally:
                page.close()

        out["wasm"] = run("wasm", Plan())
        out["webgpu"] = run("webgpu", Plan(generations=12, every=4, cycles=3, switches=0, tokens=8))
        return out
    finally:
        browser.close()
