"""The chat page (index.html) as a user drives it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.browser import LOCAL_PREFIXES

pytestmark = pytest.mark.browser


def open_page(browser: Any) -> tuple[Any, list[str]]:
    """A page in a context of its own, and every URL it requests."""
    context = browser.new_context()
    requests: list[str] = []
    context.on("request", lambda r: requests.append(r.url))
    page = context.new_page()
    page.set_default_timeout(180_000)
    return page, requests


def test_chat_page_streams_a_reply_and_stop_ends_it(browser, site_url):
    page, requests = open_page(browser)
    # 1. a reply that ends by itself; markup in the model's text must stay text
    page.goto(site_url + "index.html?model=tiny-chat&max_tokens=24&temperature=0")
    page.wait_for_selector("body[data-ready='true']")
    assert page.locator("#loading").is_hidden()
    page.fill("#prompt", "What does json.dumps do? <b>bold</b>")
    page.press("#prompt", "Enter")
    done = page.wait_for_selector(".message.assistant[data-done='true']")
    assert done.query_selector(".body").inner_text().strip()
    assert page.locator(".message.user .body").inner_text() == "What does json.dumps do? <b>bold</b>"
    assert page.locator(".message b").count() == 0
    assert "tokens/s" in page.locator("#stats").inner_text()

    # 2. a long reply, streamed, stopped by the Stop button
    page.goto(site_url + "index.html?model=tiny-chat&max_tokens=900&ignore_eos=1&temperature=0")
    page.wait_for_selector("body[data-ready='true']")
    page.click("#clear")  # the reload reopened the conversation above: start a new one
    page.fill("#prompt", "Tell me about the textwrap module.")
    page.click("#send")
    body = page.locator(".message.assistant .body")
    page.wait_for_function("() => document.querySelector('.message.assistant .body').textContent.length > 0")
    partial = body.inner_text()
    page.wait_for_function(
        "(n) => document.querySelector('.message.assistant .body').textContent.length > n", arg=len(partial))
    assert page.locator("#stop").is_enabled()
    page.click("#stop")
    msg = page.wait_for_selector(".message.assistant[data-done='true']")
    assert msg.get_attribute("data-finish") == "abort"
    assert page.locator("#send").is_enabled()
    assert [u for u in requests if not u.startswith(LOCAL_PREFIXES)] == []
    page.context.close()


PAGE_DOCS = {
    "json.txt": "The json module encodes Python objects as JSON text. json.dumps returns a string; "
                "json.loads parses a string back into Python objects.",
    "owls <b>night</b>.txt": "Owls are birds of prey that hunt at <b>night</b>. Their large eyes see well in the dark.",
}
PAGE_FILES = {
    "tea.txt": "Green tea is brewed with water at about eighty degrees for two minutes. "
               "Black tea wants boiling water and longer steeping.\n\n" * 12,
    "notes.md": "# Notes\n\nA list of things to buy: bread, milk, apples.",
}


def expected_chunks(text: str) -> int:
    """The index's chunking (all-minilm-l6-v2 tokens, 128 per chunk), by the text-splitter crate."""
    from semantic_text_splitter import TextSplitter
    from tokenizers import Tokenizer

    from tests.support.paths import MODELS

    tokenizer = Tokenizer.from_file(str(MODELS / "all-minilm-l6-v2" / "tokenizer.json"))
    return len(TextSplitter.from_huggingface_tokenizer(tokenizer, capacity=128).chunks(text))


def cpython_answer(question: str, max_tokens: int) -> dict:
    """The search-answer skill over the same documents and index in CPython."""
    from csi.local import local_csi
    from csi.skills.examples import search_answer
    from tests.support.faces import index as index_face
    from tests.support.paths import DIST

    index = {"namespace": "playground", "collection": "documents", "index": "default"}
    sa = search_answer.search_answer
    with local_csi(DIST, ["tiny-chat"]) as csi:
        csi._run(index_face.create(csi.index, {**index, "hybrid": True}))
        csi._run(index_face.put(csi.index, [
            {"path": {"namespace": "playground", "collection": "documents", "name": name}, "contents": [{"text": t}]}
            for name, t in {**PAGE_DOCS, **PAGE_FILES}.items()]))
        request = search_answer.Input(question=question, max_tokens=max_tokens, model="tiny-chat", **index)
        return sa(csi, request).model_dump(mode="json")


def test_documents_panel_adds_lists_searches_asks_and_deletes(browser, site_url):
    page, requests = open_page(browser)
    page.goto(site_url + "index.html?model=tiny-chat&max_tokens=24&temperature=0")
    page.wait_for_selector("body[data-ready='true']")
    page.click("#tab-documents")
    page.wait_for_selector("#doc-add:enabled")
    assert page.locator("#doc-list li").count() == 0
    page.evaluate("""() => {
        const node = document.getElementById('doc-ingest-text');
        window.ingestTexts = [];
        new MutationObserver(() => window.ingestTexts.push(node.textContent))
          .observe(node, {childList: true, characterData: true, subtree: true});
    }""")

    # 1. pasted texts, one at a time, then two files at once
    for name, text in PAGE_DOCS.items():
        page.fill("#doc-name", name)
        page.fill("#doc-text", text)
        page.click("#doc-add")
        page.wait_for_selector("#doc-add:enabled")
        assert page.locator("#doc-status").inner_text().startswith("Added 1 document"), \
            page.locator("#doc-status").inner_text()
    assert page.input_value("#doc-text") == ""
    page.set_input_files("#doc-files", [{"name": n, "mimeType": "text/plain", "buffer": t.encode()}
                                        for n, t in PAGE_FILES.items()])
    page.wait_for_selector("#doc-list li[data-name='tea.txt']")
    page.wait_for_selector("#doc-add:enabled")
    assert "Indexing 2 / 2 documents" in " ".join(page.evaluate("window.ingestTexts"))
    assert page.locator("#doc-ingest").is_hidden()
    listed = {li.get_attribute("data-name"): li.query_selector(".chunks").inner_text()
              for li in page.query_selector_all("#doc-list li")}
    everything = {**PAGE_DOCS, **PAGE_FILES}
    assert listed == {name: f"{n} chunk{'s' if n != 1 else ''}" for name, n in
                      ((name, expected_chunks(t)) for name, t in everything.items())}
    assert listed["tea.txt"] != "1 chunk"
    assert page.locator("#doc-count").inner_text() == "(4)"

    # 2. search: the expected document on top, with a score and an excerpt
    page.fill("#doc-query", "What does json.dumps return?")
    page.click("#doc-search")
    page.wait_for_selector("#doc-results li")
    page.wait_for_selector("#doc-search:enabled")
    top = page.locator("#doc-results li").first
    assert top.get_attribute("data-name") == "json.txt"
    assert 0 < float(top.locator(".score").inner_text()) <= 1
    assert "json.dumps returns a string" in top.locator(".excerpt").inner_text()

    # 3. ask: the search-answer skill's answer (as in CPython) and its sources
    page.click("#doc-ask")
    page.wait_for_selector("#doc-answer", state="visible")
    page.wait_for_selector("#doc-search:enabled")
    expected = cpython_answer("What does json.dumps return?", 24)
    assert page.locator("#doc-answer .answer").text_content() == expected["answer"]
    sources = page.locator("#doc-answer .sources li")
    assert [sources.nth(i).get_attribute("data-name") for i in range(sources.count())] == [
        s["name"] for s in expected["sources"]]
    assert sources.first.get_attribute("data-name") == "json.txt"
    assert page.locator("#doc-results li").count() == 0
    assert page.locator("#docs b").count() == 0  # the markup in a document stayed text
    assert "<b>night</b>" in page.locator("#doc-list").inner_text()

    # 4. delete one; the rest are still there after a reload (IndexedDB)
    page.click("#doc-list li[data-name='owls <b>night</b>.txt'] button.delete")
    page.wait_for_function("() => document.querySelectorAll('#doc-list li').length === 3")
    assert page.locator("#doc-status").inner_text() == "Deleted owls <b>night</b>.txt."
    page.reload()
    page.wait_for_selector("body[data-ready='true']")
    page.click("#tab-documents")
    page.wait_for_selector("#doc-add:enabled")
    assert {li.get_attribute("data-name") for li in page.query_selector_all("#doc-list li")} == {
        "json.txt", "tea.txt", "notes.md"}
    assert [u for u in requests if not u.startswith(LOCAL_PREFIXES)] == []
    page.context.close()


def test_playground_answers_in_json_and_runs_the_tools_the_model_calls(browser, site_url):
    import json

    import jsonschema

    page, requests = open_page(browser)
    page.goto(site_url + "index.html?model=tiny-chat&max_tokens=160&temperature=0.7")
    page.wait_for_selector("body[data-ready='true']")
    page.click("#structure summary")
    # 1. a JSON Schema typed into the panel: the reply validates against it
    page.select_option("#format", "schema")
    schema = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20},
                                               "sunny": {"type": "boolean"}}, "required": ["city", "sunny"]}
    page.fill("#schema", json.dumps(schema))
    page.fill("#prompt", "Describe the weather in Paris as JSON.")
    page.press("#prompt", "Enter")
    done = page.wait_for_selector(".message.assistant[data-done='true']")
    assert done.get_attribute("data-finish") == "stop"
    jsonschema.validate(json.loads(done.query_selector(".body").inner_text()), schema)

    # 2. tools: the model must call one; the page runs it and sends the result back
    page.click("#clear")
    page.select_option("#format", "off")
    page.check("#tools-on")
    page.select_option("#tool-choice", "required")
    page.fill("#prompt", "What is 17 plus 25?")
    page.press("#prompt", "Enter")
    tool = page.wait_for_selector(".message.tool")
    name, result = tool.inner_text().split(" → ", 1)
    assert name in ("get_time", "add", "word_count")
    assert isinstance(json.loads(result), dict)
    page.wait_for_function("() => document.querySelectorAll('.message.assistant[data-done=\"true\"]').length >= 2")
    final = page.locator(".message.assistant").last
    assert final.get_attribute("data-finish") in ("stop", "length")
    assert page.locator(".message.assistant .calls").first.inner_text().startswith(f"→ {name}(")
    assert [u for u in requests if not u.startswith(LOCAL_PREFIXES)] == []
    page.context.close()


INSIDES_PROMPT = "The json module encodes <img src=x onerror=alert(1)> objects. " * 10


def test_model_insides_view_draws_one_heatmap_row_per_token_and_the_top_k_bars(browser, site_url):
    from tests.support.insides_reference import reference_insides
    from tests.support.paths import ROOT

    page, requests = open_page(browser)
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.set_viewport_size({"width": 1000, "height": 1800})
    page.goto(site_url + "index.html?model=tiny-chat")
    page.wait_for_selector("body[data-ready='true']")
    page.click("#tab-insides")
    page.fill("#insides-prompt", INSIDES_PROMPT)
    page.fill("#insides-keep", "20")
    page.fill("#insides-top-k", "6")
    page.click("#insides-show")
    page.wait_for_selector("#insides-charts[data-tokens]")
    ref = reference_insides("tiny-chat", INSIDES_PROMPT)
    n = len(ref["ids"])
    assert page.get_attribute("#insides-charts", "data-tokens") == str(n)
    charts = page.evaluate(
        """async () => {
             const echarts = await import('/vendor/echarts/echarts.esm.min.mjs');
             const opt = (id) => echarts.getInstanceByDom(document.getElementById(id)).getOption();
             const heat = [0, 1, 2].map((i) => opt(`insides-${i}`)).map((o) => ({
               rows: o.yAxis[0].data.length, cols: o.xAxis[0].data.length, cells: o.series[0].data.length}));
             const bars = opt('insides-next');
             // hover the first cell of the hidden state heatmap
             const c = echarts.getInstanceByDom(document.getElementById('insides-2'));
             c.dispatchAction({type: 'showTip', seriesIndex: 0, dataIndex: 1});
             await new Promise((r) => setTimeout(r, 300));
             // the tooltip is text drawn on the canvas (no markup under the page's Trusted Types)
             const tips = c.getZr().storage.getDisplayList(true).map((e) => e.style?.text ?? '')
               .filter((t) => /position|dimension/.test(t)).join('|');
             return {heat, labels: bars.xAxis[0].data, values: bars.series[0].data, tips};
           }""")
    for h in charts["heat"]:
        assert h == {"rows": n, "cols": 20, "cells": n * 20}
    order = sorted(range(len(ref["logits"])), key=lambda i: -ref["logits"][i])[:6]
    assert len(charts["values"]) == 6
    assert all(abs(v - ref["probs"][i]) < 1e-5 for v, i in zip(charts["values"], order, strict=True))
    assert "dimension 1" in charts["tips"] and "The" in charts["tips"]
    assert dialogs == [] and page.locator("#insides img").count() == 0
    (ROOT / "test-results").mkdir(exist_ok=True)
    page.locator("#insides").screenshot(path=str(ROOT / "test-results" / "model-insides.png"))
    assert [u for u in requests if not u.startswith(LOCAL_PREFIXES)] == []
    page.context.close()
