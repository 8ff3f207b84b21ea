"""`python3 build.py soak [--minutes N]`: mixed traffic against one engine for N minutes (default 30)
with memory and pending calls sampled each minute, then N/3 minutes of traffic with interrupts
(interrupts.py), then the index fault test at 10 kill points, skill time limits in 30 fresh workers
and a 1.5B-shaped GGUF loaded in the page within its memory bound.
Prints JSON: calls by outcome, untyped errors, hangs, pending, memory per minute and its slope."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from ..site.serve import serve_in_thread
from .interrupts import healthy, interrupt_traffic

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--no-first-run", "--disable-quic", "--enable-blink-features=ForceEagerMeasureMemory"]

TRAFFIC = """
async ([minutes]) => {
  const { CreateWebWorkerEngine } = await import('/web/engine.js');
  const engine = await CreateWebWorkerEngine(new Worker('/worker/worker.js', {type: 'module'}),
                                             ['tiny-chat', 'all-minilm-l6-v2'], {device: 'wasm'});
  const ns = {namespace: 'soak', collection: 'c'};
  await engine.index.createIndex({...ns, index: 'i', model: 'all-minilm-l6-v2', max_tokens: 64});
  const typed = new Set(['InvalidInputError', 'ModelNotSupportedError', 'ContextWindowExceededError',
                         'ModelLoadError', 'NotFoundError', 'SkillError']);
  let seed = 1;
  const rnd = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
  const user = (t) => [{role: 'user', content: t}];
  const ops = {
    chat: () => engine.chat.completions.create({messages: user('What does json.dumps do?'), max_tokens: 24}),
    stream_cancelled: async () => {
      const s = await engine.chat.completions.create({messages: user('Tell me about textwrap.'), stream: true,
                                                      max_tokens: 200});
      const stopAfter = Math.floor(rnd() * 10);
      let n = 0;
      for await (const _ of s) if (n++ >= stopAfter) break;
    },
    completion: () => engine.completions.create({prompt: 'The os module', max_tokens: 16, temperature: 0.8}),
    embeddings: () => engine.embeddings.create({input: ['soak test', 'more text'], model: 'all-minilm-l6-v2'}),
    chunk: () => engine.csi.chunk([{text: 'a sentence. '.repeat(200), params: {model: 'all-minilm-l6-v2',
                                                                              max_tokens: 32}}]),
    put: () => engine.index.put([{path: {...ns, name: `d${Math.floor(rnd() * 50)}`},
                                  contents: [{text: 'soak document '.repeat(30)}], metadata: {t: Date.now()}}]),
    delete: () => engine.index.delete([{...ns, name: `d${Math.floor(rnd() * 50)}`}]),
    search: () => engine.csi.search([{index_path: {...ns, index: 'i'}, query: 'soak', max_results: 3}]),
    skill: () => engine.skills.run('summarize', {text: 'Soak tests run for a long time. '.repeat(5)}),
    bad: () => engine.chat.completions.create({messages: 'not a list'}),
  };
  const names = Object.keys(ops);
  const outcomes = {}; const untyped = []; let hangs = 0;
  const samples = [];
  const sample = async (minute) => {
    const m = await performance.measureUserAgentSpecificMemory();
    const worker = m.breakdown.filter((b) => b.attribution.some((a) => a.scope === 'DedicatedWorkerGlobalScope'))
      .reduce((a, b) => a + b.bytes, 0);
    samples.push({minute, total_bytes: m.bytes, worker_bytes: worker, page_bytes: m.bytes - worker,
                  pending: engine.pendingCount});
  };
  const t0 = performance.now();
  await sample(0);
  let next = 1;
  while (performance.now() - t0 < minutes * 60000) {
    const name = names[Math.floor(rnd() * names.length)];
    const timeout = new Promise((r) => setTimeout(() => r('hang'), 60000));
    const r = await Promise.race([timeout, ops[name]().then(() => 'ok', (e) => e?.name ?? 'Error')]);
    if (r === 'hang') hangs++;
    else if (r !== 'ok' && !typed.has(r)) untyped.push([name, r]);
    outcomes[`${name}:${r}`] = (outcomes[`${name}:${r}`] ?? 0) + 1;
    if (performance.now() - t0 >= next * 60000) await sample(next++);
  }
  await sample(next);
  return {outcomes, untyped: untyped.slice(0, 20), untyped_count: untyped.length, hangs, samples,
          pending_at_end: engine.pendingCount};
}
"""


def _slope(xs: list[float], ys: list[float]) -> float:
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den if den else 0.0


def run_soak(dist: Path, minutes: float) -> int:
    from playwright.sync_api import sync_playwright

    server, url = serve_in_thread(dist)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page()
            page.set_default_timeout(int((minutes + 10) * 60_000))
            page.goto(url + "web/engine.js")
            out = page.evaluate(TRAFFIC, [minutes])
            page.goto(url + "web/engine.js")  # a fresh worker for the interrupt traffic
            out["interrupts"] = interrupt_traffic(page, minutes / 3)
            browser.close()
    finally:
        server.shutdown()
    samples = out["samples"][1:]  # after the first minute: models and caches are warm
    if len(samples) >= 2:
        xs = [s["minute"] for s in samples]
        out["memory_slope_bytes_per_minute"] = {k: _slope(xs, [s[k] for s in samples])
                                                for k in ("worker_bytes", "page_bytes", "total_bytes")}
    root = Path(__file__).resolve().parents[2]
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "faults.jsonl"
        env = {**os.environ, "CSI_FAULT_POINTS": "10", "CSI_KILL_POINTS": "10", "CSI_FAULT_REPORT": str(report),
               "PYTHONPATH": os.pathsep.join([str(root / "py"), str(root)])}
        faults = subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:warnings",
                                  "tests/browser/test_browser_index_faults.py"], cwd=root, env=env)
        out["index_faults_10_points_passed"] = faults == 0
        fresh = subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:warnings",
                                 "tests/browser/test_browser_interrupts.py::"
                                 "test_a_skill_waiting_on_csi_calls_stops_at_its_time_limit_in_fresh_workers"],
                                cwd=root, env={**env, "CSI_FRESH_WORKERS": "30"})
        out["time_limits_in_30_fresh_workers_passed"] = fresh == 0
        big = subprocess.call([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:warnings",
                               "tests/browser/test_browser_gguf.py", "-k", "big_q4_k_m"],
                              cwd=root, env={**env, "CSI_BIG_GGUF_SHAPES": "1.5b"})
        out["gguf_1_5b_shape_within_its_bound_passed"] = big == 0
        out["index_faults"] = ([json.loads(line) for line in report.read_text().splitlines()]
                               if report.exists() else [])
    print(json.dumps(out, indent=2))
    ok = (faults == 0 and fresh == 0 and big == 0 and not out["untyped_count"] and not out["hangs"]
          and not out["pending_at_end"] and healthy(out["interrupts"]))
    return 0 if ok else 1
