"""In Chromium, the worker's Samplers choose tokens on the WebAssembly SIMD kernel: kernel.wasm comes
from the site, the worker's kernel is loaded, and a sampled request with log-probabilities ran on it
(its logits were loaded into the kernel's memory) with the same reply, for a seed, as the JS path gives."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.browser

REQUEST = {"messages": [{"role": "user", "content": "Name three colors."}], "max_tokens": 12, "seed": 11,
           "temperature": 0.9, "top_p": 0.95, "logprobs": True, "top_logprobs": 3, "frequency_penalty": 0.4,
           "return_token_ids": True}

WORKER_STATE = """async () => {
  const m = await import(new URL('sampling/index.js', self.location.href).href);
  const kernel = await m.kernelReady;
  return {simd: m.SIMD, loaded: kernel !== null, shared: m.sharedKernel() === kernel,
          path: new m.Sampler({temperature: 1, top_k: 0, top_p: 1, seed: 1}).path,
          vocab: kernel ? kernel.logits.length : 0};
}"""


def test_the_worker_samples_on_the_wasm_kernel(engine_page: Any) -> None:
    reply = engine_page.ok("return await engine.chat.completions.create(arg);", REQUEST)
    assert len(reply["choices"][0]["token_ids"]) > 0
    workers = [w for w in engine_page.page.workers if w.url.endswith("/worker/worker.js")]
    assert workers, [w.url for w in engine_page.page.workers]
    state = workers[0].evaluate(WORKER_STATE)
    assert state["simd"] and state["loaded"] and state["shared"] and state["path"] == "wasm", state
    assert state["vocab"] > 1000, state  # the request's logits went through the kernel's memory
    assert any(u.endswith("/worker/sampling/kernel.wasm") for u in engine_page.requests)
    assert not engine_page.foreign_requests()
    # the same request on the JS path (the kernel set aside) gives the same tokens and logprobs
    workers[0].evaluate("""async () => {
      const m = await import(new URL('sampling/index.js', self.location.href).href);
      self.__kernel = m.sharedKernel(); m.useKernel(null);
    }""")
    try:
        again = engine_page.ok("return await engine.chat.completions.create(arg);", REQUEST)
    finally:
        workers[0].evaluate("""async () => {
          const m = await import(new URL('sampling/index.js', self.location.href).href);
          m.useKernel(self.__kernel);
        }""")
    assert again["choices"][0]["token_ids"] == reply["choices"][0]["token_ids"]
    js, wasm = again["choices"][0]["logprobs"]["content"], reply["choices"][0]["logprobs"]["content"]
    for a, b in zip(js, wasm, strict=True):
        assert a["logprob"] == pytest.approx(b["logprob"], abs=1e-6)
        assert [t["token"] for t in a["top_logprobs"]] == [t["token"] for t in b["top_logprobs"]]
