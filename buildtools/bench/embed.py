"""Embeddings: csi-web's `embeddings.create` against transformers.js's `feature-extraction` pipeline
(mean pooling, normalized), the same model, texts and batch, in one browser run."""

from __future__ import annotations

import statistics
from typing import Any

from .text import english_text

EMBED_SCRIPT = """
async ([texts, batch, rounds]) => {
  const { CreateWebWorkerEngine } = await import('/web/engine.js');
  const model = 'all-minilm-l6-v2';
  const engine = await CreateWebWorkerEngine(new Worker('/worker/worker.js', {type: 'module'}), model,
                                             {device: 'wasm'});
  const tjs = new Worker('/bench/tjs_worker.js', {type: 'module'});
  const ask = (msg) => new Promise((resolve, reject) => {
    tjs.onmessage = ({data}) => data.ok ? resolve(data) : reject(new Error(data.error));
    tjs.postMessage(msg);
  });
  const batches = [];
  for (let i = 0; i < texts.length; i += batch) batches.push(texts.slice(i, i + batch));
  const ours = async () => {
    const t = performance.now();
    for (const b of batches) await engine.embeddings.create({input: b, model});
    return texts.length / ((performance.now() - t) / 1000);
  };
  const theirs = async () => {
    const t = performance.now();  // timed on the page, as ours: the texts go to the worker and back
    for (const b of batches) await ask({type: 'embed', model, texts: b});
    return texts.length / ((performance.now() - t) / 1000);
  };
  await ours(); await theirs();  // warm-up (their pipeline is made here)
  const r = {csi_web: [], transformers_js: []};
  for (let i = 0; i < rounds; i++) { r.csi_web.push(await ours()); r.transformers_js.push(await theirs()); }
  engine.terminate();
  tjs.terminate();
  return r;
}
"""


def bench_texts(count: int = 64) -> list[str]:
    """Sentences of stdlib docstrings, 5 to 40 words each."""
    words = english_text(200_000).split()
    out, i = [], 0
    while len(out) < count:
        n = 5 + (len(out) * 7) % 36
        out.append(" ".join(words[i:i + n]))
        i += n
    return out


def embed_bench(page: Any, batch: int = 16, rounds: int = 3) -> dict[str, Any]:
    texts = bench_texts()
    raw = page.evaluate(EMBED_SCRIPT, [texts, batch, rounds])
    ours, theirs = statistics.median(raw["csi_web"]), statistics.median(raw["transformers_js"])
    return {"model": "all-minilm-l6-v2", "device": "wasm", "texts": len(texts), "batch": batch,
            "texts_per_s": {"csi_web": ours, "transformers_js_feature_extraction": theirs, "ratio": ours / theirs}}
