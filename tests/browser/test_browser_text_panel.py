"""The Text panel as a user drives it: the chunks it highlights are semantic-text-splitter's for the
same tokenizer and settings, in order, at their places in the text; the language it picks is
lingua's among the same candidates; hostile text stays text."""

from __future__ import annotations

import pytest
from lingua import IsoCode639_3, LanguageDetectorBuilder
from semantic_text_splitter import TextSplitter
from tokenizers import Tokenizer

from tests.support.browser import LOCAL_PREFIXES
from tests.support.paths import MODELS, ROOT

pytestmark = pytest.mark.browser

TEXT = ("<img src=x onerror=alert(1)> Die Stadt liegt an einem großen Fluss. Im Sommer fahren viele Boote "
        "über das Wasser 🚣‍♀️, und am Ufer sitzen Menschen in der Sonne.\n\nIm Winter ist es still; der Nebel "
        "bleibt oft bis zum Mittag. Straße, Brücke, Kirche — 東京 ist weit weg. <b>fett</b>\n") * 3
SETTINGS = [("all-minilm-l6-v2", 12, 3), ("tiny-chat", 24, 0)]
LANGUAGES = ["eng", "deu", "fra"]


def reference(model: str, capacity: int, overlap: int) -> list[tuple[int, str]]:
    tokenizer = Tokenizer.from_file(str(MODELS / model / "tokenizer.json"))
    splitter = TextSplitter.from_huggingface_tokenizer(tokenizer, capacity=capacity, overlap=overlap)
    return list(splitter.chunk_indices(TEXT))  # code-point offsets


def lingua_language(text: str, languages: list[str]) -> str | None:
    iso = [getattr(IsoCode639_3, code.upper()) for code in sorted(set(languages))]
    detector = LanguageDetectorBuilder.from_iso_codes_639_3(*iso).with_minimum_relative_distance(0.5).build()
    found = detector.detect_language_of(text)
    return None if found is None else found.iso_code_639_3.name.lower()


def utf16(code_points: int) -> int:
    return len(TEXT[:code_points].encode("utf-16-le")) // 2


SHOWN = """() => {
  const view = document.getElementById('text-chunks');
  let at = 0;
  const marks = [];
  for (const node of view.childNodes) {
    const text = node.textContent;
    if (node.nodeType === 1) marks.push({chunks: node.dataset.chunks.split(' ').map(Number), at, text,
                                         cls: node.className});
    at += text.length;
  }
  return {whole: view.textContent, marks, count: document.getElementById('text-chunk-count').textContent,
          language: document.getElementById('text-language').dataset.code};
}"""


def test_text_panel_shows_the_reference_chunks_and_language(browser, site_url):
    context = browser.new_context()
    requests: list[str] = []
    context.on("request", lambda r: requests.append(r.url))
    page = context.new_page()
    page.set_default_timeout(180_000)
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(site_url + "index.html?model=tiny-chat")
    page.wait_for_selector("body[data-ready='true']")
    page.click("#tab-text")
    page.wait_for_selector("#text-run:enabled")
    page.fill("#text-input", TEXT)
    page.fill("#text-languages", ", ".join(LANGUAGES))
    for model, capacity, overlap in SETTINGS:
        page.select_option("#text-model", model)
        page.fill("#text-max-tokens", str(capacity))
        page.fill("#text-overlap", str(overlap))
        page.evaluate("document.getElementById('text-chunks').removeAttribute('data-chunks')")
        page.click("#text-run")
        page.wait_for_selector("#text-chunks[data-chunks]")
        shown = page.evaluate(SHOWN)
        want = reference(model, capacity, overlap)
        assert len(want) > 3
        assert shown["count"] == f"{len(want)} chunks."
        assert shown["whole"] == TEXT  # the original text, whole, as text
        for i, (start, chunk) in enumerate(want):
            mine = [m for m in shown["marks"] if i in m["chunks"]]
            assert "".join(m["text"] for m in mine) == chunk, (model, i)
            assert mine[0]["at"] == utf16(start), (model, i)  # highlighted where the chunk is
            tint = "odd" if i % 2 else "even"
            assert any(tint in m["cls"].split() for m in mine)
        starts = [next(m["at"] for m in shown["marks"] if i in m["chunks"]) for i in range(len(want))]
        assert starts == sorted(starts) and len(set(starts)) == len(starts)  # in order
        assert any(len(m["chunks"]) > 1 for m in shown["marks"]) == (overlap > 0)
        assert shown["language"] == lingua_language(TEXT, LANGUAGES) == "deu"
        assert page.locator("#text-language").text_content().strip() == "Language: deu."
    assert page.locator("#panel-text img, #panel-text b").count() == 0 and dialogs == []
    (ROOT / "test-results").mkdir(exist_ok=True)
    page.locator("#panel-text").screenshot(path=str(ROOT / "test-results" / "text-panel.png"))

    # a bad setting is named, and the panel goes on
    page.fill("#text-overlap", "30")
    page.click("#text-run")
    page.wait_for_selector("#text-status.error")
    assert "overlap" in page.locator("#text-status").inner_text()
    assert [u for u in requests if not u.startswith(LOCAL_PREFIXES)] == []
    context.close()
