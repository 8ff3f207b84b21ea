"""A GGUF file opened in the page with no build step (issue 40): the worker reads its header, Python
writes its graph and tokenizer (csi.gguf), the worker expands its weights and loads it. Held to
transformers' own reading of the same file (the real SmolLM2 Q4_1 GGUF), kept in the browser's
cache for the next visit, and hostile files refused with a typed error while the engine serves on."""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.browser import EnginePage, boot_engine, tracked_context
from tests.support.paths import DIST
from tests.support.smollm2_reference import GGUF, WHEEL, greedy_ids, hf_tokenizer

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
    """Progress in bytes of the file, then of the weights expanded; the same greedy replies as
    transformers' reading of the file; nothing asked of any other host."""
    ep = gguf_page
    size = (gguf_site[1] / Path(SMOLLM2).name).stat().st_size
    ep.ok("window.progress = []; await engine.reload(arg);", SMOLLM2, timeout=300_000)
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
