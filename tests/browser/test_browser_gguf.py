"""A GGUF file opened in the page with no build step (issue 40): the worker reads its header, Python
writes its graph and tokenizer (csi.gguf), the worker expands its weights and loads it. Held to
transformers' own reading of the same file (the real SmolLM2 Q4_1 GGUF), kept in the browser's
cache for the next visit, and hostile files refused with a typed error while the engine serves on."""

from __future__ import annotations

import os
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.browser import EnginePage, boot_engine, tracked_context
from tests.support.paths import DIST
from tests.support.prompts import PROMPTS
from tests.support.smollm2_reference import GGUF, MODEL, WHEEL, greedy_ids, hf_tokenizer
from tests.support.tiny_families import FAMILIES, make_family_model

pytestmark = pytest.mark.browser

SMOLLM2 = "gguf/SmolLM2-135M-Instruct.Q4_1.gguf"
QUESTIONS = ["What is the capital of France?", "Name three primary colors."]


@pytest.fixture(scope="module")
def gguf_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The built site with a ``gguf/`` folder of files beside it, served by the site's own server."""
    from buildtools.deps.deps import ensure_pypi_file
    from buildtools.site.serve import serve_in_thread

    root = tmp_path_factory.mktemp("gguf-site")
    for entry in DIST.iterdir():
        (root / entry.name).symlink_to(entry)
    folder = root / "gguf"
    folder.mkdir()
    with zipfile.ZipFile(ensure_pypi_file(WHEEL)) as z:
        (folder / Path(GGUF).name).write_bytes(z.read(GGUF))
    server, url = serve_in_thread(root)
    yield url, folder
    server.shutdown()


@pytest.fixture(scope="module")
def gguf_page(browser: Any, gguf_site: tuple[str, Path]) -> Iterator[EnginePage]:
    context, requests = tracked_context(browser)
    page = context.new_page()
    page.on("console", lambda m: print(f"[console.{m.type}] {m.text}") if m.type in ("error", "warning") else None)
    page.set_default_timeout(300_000)
    boot_engine(page, gguf_site[0], ["tiny-chat"], "wasm")
    yield EnginePage(page, requests)
    context.close()


def answer(ep: EnginePage, model: str, question: str, max_tokens: int = 24) -> dict[str, Any]:
    return ep.call("""const r = await engine.chat.completions.create({model: arg.model, max_tokens: arg.n,
                        temperature: 0, messages: [{role: 'user', content: arg.q}]});
                      return {text: r.choices[0].message.content, finish: r.choices[0].finish_reason};""",
                   {"model": model, "q": question, "n": max_tokens}, timeout=300_000)


def test_a_gguf_url_opens_in_the_page_and_answers_as_transformers_reads_the_file(
        gguf_page: EnginePage, gguf_site: tuple[str, Path]) -> None:
    """The header read by byte ranges first (the site's server answers them), then the file
    downloaded; progress in bytes of the file, then of the weights expanded; the same greedy replies
    as transformers' reading of the file; nothing asked of any other host."""
    ep = gguf_page
    size = (gguf_site[1] / Path(SMOLLM2).name).stat().st_size
    asked: list[str | None] = []
    ep.page.context.on("request", lambda r: asked.append(r.headers.get("range")) if r.url.endswith(SMOLLM2) else None)
    ep.ok("window.progress = []; await engine.reload(arg);", SMOLLM2, timeout=300_000)
    assert asked[0] == "bytes=0-4194303" and asked[-1] is None, asked  # the header's range, then the whole file
    progress = ep.page.evaluate("window.progress")
    stages = {p.get("stage") for p in progress}
    downloads = [p for p in progress if p.get("file") == Path(SMOLLM2).name and p.get("stage") == "progress"]
    assert downloads and downloads[-1]["loaded"] == downloads[-1]["total"] == size, progress[:5]
    assert "expand" in stages and "ready" in stages, stages
    for question in QUESTIONS:
        out = answer(ep, SMOLLM2, question)
        assert out.get("ok"), out
        expected = hf_tokenizer().decode(greedy_ids([{"role": "user", "content": question}], 24),
                                         skip_special_tokens=True)
        assert out["value"]["text"] == expected, (question, out["value"], expected)
    assert ep.foreign_requests() == []


def test_the_next_visit_reads_the_file_from_the_browsers_cache(gguf_page: EnginePage,
                                                              gguf_site: tuple[str, Path]) -> None:
    """A reload of the page (a new worker): the GGUF is not downloaded again, and answers the same."""
    ep = gguf_page
    first = answer(ep, SMOLLM2, QUESTIONS[0])
    if not first.get("ok"):  # this test alone: the first visit downloads it
        ep.ok("await engine.reload(arg);", SMOLLM2, timeout=300_000)
        first = answer(ep, SMOLLM2, QUESTIONS[0])
    boot_engine(ep.page, gguf_site[0], ["tiny-chat"], "wasm")
    before = len(ep.requests)
    ep.ok("await engine.reload(arg);", SMOLLM2, timeout=300_000)
    assert not [u for u in ep.requests[before:] if u.endswith(".gguf")], ep.requests[before:]
    again = answer(ep, SMOLLM2, QUESTIONS[0])
    assert again == first


def hostile_files(folder: Path) -> dict[str, tuple[bytes, str]]:
    """Broken GGUFs: name -> (bytes, what the error must say)."""
    from tests.support.gguf_files import write_foreign_gguf

    good = (folder / Path(SMOLLM2).name).read_bytes()
    write_foreign_gguf(folder / "mamba.gguf", "mamba")
    # cut at 20 points: in the header (magic, counts, keys, the vocabulary, the tensor table) and in the weights
    cuts = [3, 7, 15, 23, 40, 200, 1_099, 5_000, 40_000, 400_000, 900_000, 1_500_000, 1_990_000,
            2_010_000, 2_050_000, 3_000_000, 10_000_000, 40_000_000, 90_000_000, len(good) - 1]
    truncated = {f"cut-at-{n}.gguf": (good[:n], "") for n in cuts}
    return {**truncated,
        "empty.gguf": (b"", "truncated"),
        "not-gguf.gguf": (b"<html>not found</html>" * 10, "not a GGUF file"),
        "cut-in-header.gguf": (good[:40_000], "left in the file"),
        "cut-in-weights.gguf": (good[:len(good) // 2], "past its end"),
        "mamba.gguf": ((folder / "mamba.gguf").read_bytes(), "unsupported architecture 'mamba'"),
    }


def test_broken_files_are_refused_with_a_typed_error_and_the_engine_serves_on(
        gguf_page: EnginePage, gguf_site: tuple[str, Path]) -> None:
    ep = gguf_page
    for name, (data, says) in hostile_files(gguf_site[1]).items():
        (gguf_site[1] / name).write_bytes(data)
        out = ep.call("await engine.reload(arg); return 'loaded';", f"gguf/{name}", timeout=120_000)
        assert not out["ok"], name
        assert out["error"]["name"] == "ModelLoadError", (name, out["error"])
        assert says.lower() in out["error"]["message"].lower(), (name, out["error"])
        assert "InternalError" not in out["error"]["message"]
    ep.ok("await engine.reload('tiny-chat');")
    assert ep.greedy()
    assert ep.foreign_requests() == []


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_each_family_opens_in_the_page_with_torchs_ids_and_logprobs(
        family: str, gguf_page: EnginePage, gguf_site: tuple[str, Path], tmp_path: Path) -> None:
    """A tiny model of each family (Qwen2's biases, Qwen3's q/k norms, Gemma 3's windows and
    soft-capping, Phi-3's fused projections and LongRoPE), made by transformers and converted by
    llama.cpp's converter, opened in the page on WASM: the greedy ids of the model it was made from,
    each token's logprob within 1e-3 of torch's."""
    import numpy as np
    import torch

    from tests.support.llama_convert import convert
    from tests.support.reference import hf_prompt_ids
    from tests.support.smollm2_reference import one_torch_thread

    source = make_family_model(family, tmp_path / family)
    name = f"tiny-{family}.gguf"
    (gguf_site[1] / name).write_bytes(convert(tmp_path / family).read_bytes())
    ep = gguf_page
    ep.ok("await engine.reload(arg);", f"gguf/{name}", timeout=300_000)
    reply = ep.ok("return await engine.chat.completions.create(arg);",
                  {"model": f"gguf/{name}", "messages": PROMPTS[0], "temperature": 0, "max_tokens": 8,
                   "ignore_eos": True, "return_token_ids": True, "logprobs": True}, timeout=300_000)
    ids = hf_prompt_ids(PROMPTS[0])
    choice = reply["choices"][0]
    tokens = choice["token_ids"]
    with torch.no_grad(), one_torch_thread():
        logits = source(torch.tensor([ids + tokens[:-1]])).logits[0, len(ids) - 1:].double()
    expected = torch.log_softmax(logits, -1)
    assert tokens == expected.argmax(-1).tolist()
    ours = np.array([c["logprob"] for c in choice["logprobs"]["content"]])
    theirs = expected[torch.arange(len(tokens)), torch.tensor(tokens)].numpy()
    assert np.abs(ours - theirs).max() < 1e-3, (ours, theirs)
    assert ep.foreign_requests() == []
    ep.ok("await engine.reload('tiny-chat');")


# The published bounds (docs/models.md, "Opening a GGUF in the page"): onnxruntime's WebAssembly memory
# with a random-weight Qwen2.5-shaped Q4_K_M file loaded (0.5B: 397 MB, 1.5B: 985 MB; their float32
# weights, ~2 and ~6 GB, pass the budget, so they are held as int8). The suite runs the 0.5B shape;
# `build.py soak` the 1.5B one too (CSI_BIG_GGUF_SHAPES), whose load takes about a minute.
ORT_BOUNDS = {"0.5b": 1_000_000_000, "1.5b": 2_400_000_000}
BIG_SHAPES = os.environ.get("CSI_BIG_GGUF_SHAPES", "0.5b").split(",")


@pytest.mark.parametrize("shape", BIG_SHAPES)
def test_a_big_q4_k_m_file_loads_within_the_memory_bound_and_decodes(
        shape: str, gguf_page: EnginePage, gguf_site: tuple[str, Path]) -> None:
    from tests.support.big_gguf import big_gguf

    path = big_gguf(shape)
    name = f"qwen-{shape}-shape.gguf"
    (gguf_site[1] / name).unlink(missing_ok=True)
    (gguf_site[1] / name).symlink_to(path)
    ep = gguf_page
    ep.ok("await engine.reload(arg);", f"gguf/{name}", timeout=900_000)
    out = ep.ok("""const r = await engine.chat.completions.create({model: arg, max_tokens: 8, temperature: 0,
                     messages: [{role: 'user', content: 'Hello'}]});
                   return r.usage;""", f"gguf/{name}", timeout=300_000)
    assert out["completion_tokens"] == 8 and out["prompt_tokens"] > 5
    stats = ep.ok("return await engine.memoryStats({jsHeap: true});")
    print(f"{shape}-shape Q4_K_M memory:", {k: v for k, v in stats.items() if k.endswith("bytes")})
    assert stats["ort_wasm_bytes"] < ORT_BOUNDS[shape], stats
    ep.ok("await engine.reload('tiny-chat');")


def test_the_file_held_as_int8_drafts_for_the_built_in_model(gguf_page: EnginePage) -> None:
    """The same SmolLM2 file twice: built in (float32) and opened in the page under a budget of 0 (int8,
    its logits a little off). The int8 copy drafts (`extra_body.draft_model`) and the float32 model
    checks: the reply is plain decoding's, some drafts kept and some rejected."""
    ep = gguf_page
    ep.ok("engine.config.ggufMemoryBudget = 0; await engine.reload(arg);", [MODEL, SMOLLM2], timeout=600_000)
    try:
        question = "Write a haiku about the sea, then explain it in two sentences."
        replies = [ep.ok("""return await engine.chat.completions.create({model: arg.model, max_tokens: 48,
                             temperature: 0, return_token_ids: true, messages: [{role: 'user', content: arg.q}],
                             extra_body: arg.extra});""",
                         {"model": MODEL, "q": question, "extra": extra}, timeout=300_000)
                   for extra in ({"speculative": False}, {"draft_model": SMOLLM2})]
        plain, drafted = replies
        assert drafted["choices"][0]["token_ids"] == plain["choices"][0]["token_ids"]
        extra = drafted["usage"]["extra"]
        print("int8 drafts for float32:", extra)
        assert extra["draft_tokens"] > extra["accepted_draft_tokens"] > 0
    finally:
        ep.ok("engine.config.ggufMemoryBudget = undefined; await engine.reload('tiny-chat');")


@pytest.fixture()
def playground(browser: Any, gguf_site: tuple[str, Path]) -> Iterator[tuple[Any, list[str]]]:
    context, requests = tracked_context(browser)
    page = context.new_page()
    page.set_default_timeout(300_000)
    page.goto(gguf_site[0] + "index.html?model=tiny-chat#models")
    page.wait_for_selector("body[data-ready='true']")
    page.wait_for_selector("#models-state[data-state='ready']")
    yield page, requests
    context.close()


def ask(page: Any, question: str) -> Any:
    page.click("#tab-chat")
    page.fill("#prompt", question)
    page.click("#send")
    return page.wait_for_selector(".message.assistant[data-done='true']")


def test_the_playground_opens_a_picked_gguf_file(playground: tuple[Any, list[str]],
                                                  gguf_site: tuple[str, Path]) -> None:
    """"Open a GGUF…": the file from disk, nothing uploaded; the chat answers with it."""
    page, requests = playground
    path = gguf_site[1] / Path(SMOLLM2).name
    page.set_input_files("#models-gguf-file", str(path))
    assert page.locator("#models-gguf-choice").is_checked()
    page.wait_for_function("() => document.querySelector('#models-plan').textContent.includes('on your disk')")
    page.click("#models-load")
    page.wait_for_selector("#models-state[data-state='ready']", timeout=300_000)
    assert page.locator("#models-state").inner_text() == f"{path.name} is ready in this browser (wasm)."
    reply = ask(page, "What is the capital of France?")
    assert "error" not in (reply.get_attribute("class") or "") and reply.inner_text().strip()
    assert not [u for u in requests if u.endswith(".gguf")]  # read from disk, not asked of any server
    assert not [u for u in requests if not u.startswith(("http://127.0.0.1:", "blob:", "data:"))]


def test_the_playground_cancels_a_gguf_download_and_loads_another(playground: tuple[Any, list[str]],
                                                                  gguf_site: tuple[str, Path]) -> None:
    """A link to a big GGUF, cancelled while its bytes come; then a link to SmolLM2's, which answers."""
    from tests.support.big_gguf import big_gguf

    page, _ = playground
    big = gguf_site[1] / "cancel-me.gguf"
    if not big.exists():
        big.symlink_to(big_gguf("0.5b"))
    page.fill("#models-gguf-url", "gguf/cancel-me.gguf")
    assert page.locator("#models-gguf-choice").is_checked()
    page.click("#models-load")
    page.wait_for_function("() => Number(document.querySelector('#models-progress').dataset.bytesLoaded) > 0")
    page.click("#models-cancel")
    page.wait_for_selector("#models-state[data-state='cancelled']")
    assert page.locator("#models-state").inner_text() == "Cancelled loading gguf/cancel-me.gguf: no model is loaded."
    kept = page.evaluate("async () => (await (await caches.open('csi-gguf')).keys()).map((r) => r.url)")
    assert not [u for u in kept if u.endswith("cancel-me.gguf")]  # a cut download is never kept
    page.fill("#models-gguf-url", SMOLLM2)
    page.click("#models-load")
    page.wait_for_selector("#models-state[data-state='ready']", timeout=300_000)
    reply = ask(page, "Name three primary colors.")
    assert "error" not in (reply.get_attribute("class") or "") and reply.inner_text().strip()
