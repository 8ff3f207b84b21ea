"""A GGUF opened in the page on WebGPU (SwiftShader adapter in headless Chromium): a tiny Phi-3 file
(llama.cpp's converter; fused projections, partial rotary) gives the greedy ids torch gives on the
model it was made from. Tiny, so SwiftShader runs it in seconds."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from tests.browser.test_browser_gguf import gguf_site  # noqa: F401,F811 - a fixture
from tests.support.browser import CHROMIUM, CHROMIUM_ARGS, EnginePage, boot_engine, tracked_context
from tests.support.llama_convert import convert
from tests.support.prompts import PROMPTS
from tests.support.reference import hf_prompt_ids
from tests.support.smollm2_reference import one_torch_thread
from tests.support.tiny_families import make_family_model

pytestmark = [pytest.mark.browser, pytest.mark.webgpu]
TOKENS = 8
NEAR_TIE = 0.1
"""Logits this close may swap places under 8-bit blocks (their logprobs move by about 0.02-0.05)."""


@pytest.fixture(scope="module")
def webgpu_gguf_page(playwright: Any, gguf_site: tuple[str, Path]) -> Iterator[EnginePage]:  # noqa: F811
    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, "--enable-unsafe-webgpu"])
    context, requests = tracked_context(browser)
    page = context.new_page()
    page.set_default_timeout(600_000)
    boot_engine(page, gguf_site[0], ["tiny-chat"], "webgpu")
    yield EnginePage(page, requests)
    browser.close()


def test_a_gguf_runs_on_webgpu_with_the_ids_of_torch(webgpu_gguf_page: EnginePage,
                                                     gguf_site: tuple[str, Path],  # noqa: F811
                                                     tmp_path: Path) -> None:
    source = make_family_model("phi3", tmp_path / "tiny-phi3")
    (gguf_site[1] / "tiny-phi3.gguf").write_bytes(convert(tmp_path / "tiny-phi3").read_bytes())
    ep = webgpu_gguf_page
    assert ep.ok("return !!(navigator.gpu && await navigator.gpu.requestAdapter());")
    ep.ok("await engine.reload(arg);", "gguf/tiny-phi3.gguf", timeout=600_000)
    reply = ep.ok("return await engine.chat.completions.create(arg);",
                  {"model": "gguf/tiny-phi3.gguf", "messages": PROMPTS[0], "temperature": 0, "max_tokens": TOKENS,
                   "ignore_eos": True, "return_token_ids": True}, timeout=600_000)
    ids = hf_prompt_ids(PROMPTS[0])
    with torch.no_grad(), one_torch_thread():
        expected = source.generate(input_ids=torch.tensor([ids]), attention_mask=torch.ones_like(torch.tensor([ids])),
                                   max_new_tokens=TOKENS, do_sample=False, eos_token_id=None)[0, len(ids):].tolist()
    assert len(set(expected)) > 3  # a reply that says something
    assert reply["choices"][0]["token_ids"] == expected
    assert ep.foreign_requests() == []


def test_past_the_budget_webgpu_holds_8_bit_blocks_and_keeps_the_ids(webgpu_gguf_page: EnginePage,
                                                                    gguf_site: tuple[str, Path],  # noqa: F811
                                                                    tmp_path: Path) -> None:
    """With ``ggufMemoryBudget: 0`` a GGUF's matrices are held on WebGPU as 8-bit blocks run by
    ``MatMulNBits``'s shaders: torch's greedy ids still (but at a near-tie), and the logprobs onnxruntime's CPU kernel
    gives on the same blocks (numpy's requantization, held to the worker's elsewhere), not the float32
    run's."""
    import numpy as np

    from tests.support.gguf_graph import graph_folder, run_graph

    source = make_family_model("phi3", tmp_path / "tiny-phi3")
    gguf = convert(tmp_path / "tiny-phi3")
    (gguf_site[1] / "tiny-phi3-b8.gguf").write_bytes(gguf.read_bytes())
    request = {"model": "gguf/tiny-phi3-b8.gguf", "messages": PROMPTS[0], "temperature": 0, "max_tokens": TOKENS,
               "ignore_eos": True, "return_token_ids": True, "logprobs": True}
    ep = webgpu_gguf_page
    replies = ep.ok("""const { CreateWebWorkerEngine } = await import('/web/engine.js');
        const out = [];
        for (const budget of [undefined, 0]) {
          const worker = new Worker('/worker/worker.js', { type: 'module' });
          const e = await CreateWebWorkerEngine(worker, [arg.model], { device: 'webgpu', ggufMemoryBudget: budget });
          out.push(await e.chat.completions.create(arg));
          worker.terminate();
        }
        return out;""", request, timeout=600_000)
    ids = hf_prompt_ids(PROMPTS[0])
    with torch.no_grad(), one_torch_thread():
        expected = source.generate(input_ids=torch.tensor([ids]), attention_mask=torch.ones_like(torch.tensor([ids])),
                                   max_new_tokens=TOKENS, do_sample=False, eos_token_id=None)[0, len(ids):].tolist()
    exact, blocks = (r["choices"][0] for r in replies)
    assert exact["token_ids"] == expected
    graph_folder(gguf, tmp_path / "nbits8", "nbits8")
    tokens, logits = run_graph(tmp_path / "nbits8", ids, TOKENS)
    assert blocks["token_ids"] == tokens  # the ids onnxruntime's CPU kernel picks on the same blocks
    # and torch's, up to a step where torch's own choice is a near-tie that 8-bit rounding may flip
    # (a random tiny model's logits are close: 0.026 apart at one step with tiny-chat's tokenizer)
    split = next((i for i, (a, b) in enumerate(zip(tokens, expected, strict=True)) if a != b), None)
    if split is not None:
        with torch.no_grad(), one_torch_thread():
            top = source(torch.tensor([ids + expected])).logits[0, len(ids) - 1 + split].topk(2).values
        assert float(top[0] - top[1]) < NEAR_TIE, f"8-bit blocks left torch's clear choice at step {split}"
    logits = logits.astype(np.float64)
    cpu = logits[np.arange(TOKENS), tokens] - np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1)) \
        - logits.max(-1)
    gpu = np.array([c["logprob"] for c in blocks["logprobs"]["content"]])
    fp32 = np.array([c["logprob"] for c in exact["logprobs"]["content"]])
    print(f"nbits8 on WebGPU: logprobs within {np.abs(gpu - cpu).max():.1e} of onnxruntime CPU's on the same "
          f"blocks, {np.abs(gpu - fp32).max():.1e} from float32's")
    assert np.abs(gpu - cpu).max() < 5e-3  # float sums in another order
    assert np.abs(gpu - fp32).max() > 2e-2
    assert ep.foreign_requests() == []
