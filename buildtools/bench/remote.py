"""Bench section ``remote``: what csi-web adds to a model on a server. The page streams the same
greedy chat from llama-cpp-python's server (SmolLM2's GGUF, on 127.0.0.1) twice per round: once
straight from the page with fetch (the server's own speed), once through a csi-web engine whose
`remotes` names the server (worker, Python, the OpenAI face). Reported: time to first token and
streamed pieces per second of each, and their ratios (median of the rounds)."""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path
from typing import Any

MESSAGES = [{"role": "user", "content": "Write a long story about a lighthouse keeper and a storm."}]
TOKENS = 128
ROUNDS = 5

SCRIPT = """
async ([base, model, messages, tokens, rounds]) => {
  const { CreateWebWorkerEngine } = await import('/web/engine.js');
  const engine = await CreateWebWorkerEngine(new Worker('/worker/worker.js', { type: 'module' }), ['bench-remote'],
    { remotes: [{ baseURL: base, models: [{ id: 'bench-remote', serverModel: model }] }] });
  const body = { model, messages, max_tokens: tokens, temperature: 0, stream: true };
  async function direct() {
    const t0 = performance.now();
    const res = await fetch(base + '/chat/completions', { method: 'POST', body: JSON.stringify(body),
                                                          headers: { 'content-type': 'application/json' } });
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let first = 0, pieces = 0, buffer = '', text = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buffer += value;
      const lines = buffer.split('\\n');
      buffer = lines.pop();
      for (const line of lines) {
        if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
        const piece = JSON.parse(line.slice(6)).choices[0]?.delta?.content;
        if (piece) { pieces += 1; text += piece; first ||= performance.now(); }
      }
    }
    return { ttft: first - t0, total: performance.now() - t0, pieces, text };
  }
  async function viaEngine() {
    const t0 = performance.now();
    let first = 0, pieces = 0, text = '';
    for await (const c of await engine.chat.completions.create({ ...body, model: 'bench-remote' })) {
      const piece = c.choices[0]?.delta?.content;
      if (piece) { pieces += 1; text += piece; first ||= performance.now(); }
    }
    return { ttft: first - t0, total: performance.now() - t0, pieces, text };
  }
  await direct(); await viaEngine();  // warm: the server's prompt cache, the engine's first call
  const out = [];
  for (let i = 0; i < rounds; i++) out.push({ direct: await direct(), engine: await viaEngine() });
  engine.terminate();
  return out;
}
"""


def remote_bench(page: Any) -> dict[str, Any]:
    """The figures of one page against a llama.cpp server started for the section."""
    from tests.support.llama_server import running_llama_server  # noqa: PLC0415 - a dev tool's import

    with tempfile.TemporaryDirectory() as tmp, running_llama_server(Path(tmp) / "server.log") as server:
        runs = page.evaluate(SCRIPT, [server.url + "/v1", server.model, MESSAGES, TOKENS, ROUNDS])

    def rate(r: dict[str, float]) -> float:
        return r["pieces"] / max((r["total"] - r["ttft"]) / 1000, 1e-9)

    def med(side: str, f: Any) -> float:
        return statistics.median(f(r[side]) for r in runs)

    same = all(r["direct"]["text"] == r["engine"]["text"] for r in runs)
    direct_rate, engine_rate = med("direct", rate), med("engine", rate)
    return {
        "model": "SmolLM2-135M-Instruct Q4_1 on llama-cpp-python (1 thread)",
        "tokens": TOKENS, "rounds": ROUNDS, "same_text": same,
        "direct": {"ttft_ms": med("direct", lambda r: r["ttft"]), "pieces_per_s": direct_rate},
        "engine": {"ttft_ms": med("engine", lambda r: r["ttft"]), "pieces_per_s": engine_rate},
        "ttft_added_ms": med("engine", lambda r: r["ttft"]) - med("direct", lambda r: r["ttft"]),
        "ratio_pieces_per_s": engine_rate / direct_rate,
    }
