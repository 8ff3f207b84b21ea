"""CSI chunking and language selection in the worker, against the CPython references
(semantic-text-splitter = the text-splitter crate; lingua 2.x), and a skill using the whole CSI
giving the same output in the browser and in CPython."""

from __future__ import annotations

import pytest
from lingua import IsoCode639_3, LanguageDetectorBuilder
from semantic_text_splitter import TextSplitter
from tokenizers import Tokenizer

from csi.local import local_csi
from csi.skills.registry import load_skill_source
from tests.support.paths import DIST, MODELS
from tests.support.skill_sources import CSI_TOUR, TOUR_TEXT

pytestmark = pytest.mark.browser

TEXTS = [
    "The quick brown fox jumps over the lazy dog. " * 12,
    "# Title\n\nFirst paragraph, with a list:\n- one\n- two\n\n\n\nAfter three blank lines.\r\nWindows line.",
    "def f(x):\n    return x * 2\n\n\nclass A:\n    pass\n" * 4,
    "東京は日本の首都です。人口は非常に多い。京都には古い寺がたくさんあります。" * 3,
    "Emoji 👩‍👩‍👧‍👦 family, flags 🇩🇪🇫🇷, skin 👍🏽 tones.   Spaces   and\ttabs. " * 5,
    "Supercalifragilisticexpialidocious" * 6 + " end.",
    "  \n\n  leading and trailing whitespace  \n\n ",
    "",
]
CASES = [(t, model, cap, ov) for t in TEXTS for model, cap, ov in
         [("all-minilm-l6-v2", 16, 0), ("all-minilm-l6-v2", 7, 3), ("tiny-chat", 24, 8), ("tiny-chat", 5, 1)]]


def reference_chunks(text: str, model: str, capacity: int, overlap: int) -> list[tuple[int, str]]:
    tokenizer = Tokenizer.from_file(str(MODELS / model / "tokenizer.json"))
    splitter = TextSplitter.from_huggingface_tokenizer(tokenizer, capacity=capacity, overlap=overlap)
    return list(splitter.chunk_indices(text))  # character offsets, as Python indexes


def test_chunking_equals_text_splitter(engine_page):
    requests = [{"text": t, "params": {"model": m, "max_tokens": c, "overlap": o}} for t, m, c, o in CASES]
    plain = engine_page.ok("return await engine.csi.chunk(arg);", requests)
    offsets = engine_page.ok("return await engine.csi.chunkWithOffsets(arg);", requests)
    for (text, model, cap, ov), chunks, with_offsets in zip(CASES, plain, offsets, strict=True):
        expected = reference_chunks(text, model, cap, ov)
        assert chunks == [c for _, c in expected], (model, cap, ov, text[:40])
        assert [(c["character_offset"], c["text"]) for c in with_offsets] == expected
        for c in with_offsets:
            assert text[c["character_offset"]:].startswith(c["text"])
            assert text.encode()[c["byte_offset"]:].startswith(c["text"].encode())


def test_chunking_errors(engine_page):
    err = engine_page.call("return await engine.csi.chunk(arg);", [
        {"text": "a b c", "params": {"model": "tiny-chat", "max_tokens": 4, "overlap": 1}},
        {"text": "a b c", "params": {"model": "tiny-chat", "max_tokens": 4, "overlap": 4}}])["error"]
    assert err["name"] == "InvalidInputError" and err["param"] == "requests[1].params.overlap"
    err = engine_page.call("return await engine.csi.chunk(arg);", [
        {"text": "a", "params": {"model": "no-such-model", "max_tokens": 4, "overlap": 0}}])["error"]
    assert err["name"] == "ModelNotSupportedError" and err["param"] == "requests[0].params.model"
    err = engine_page.call("return await engine.csi.chunk(arg);", [
        {"text": "a", "params": {"model": "tiny-chat", "max_tokens": 0, "overlap": 0}}])["error"]
    assert err["name"] == "InvalidInputError" and err["param"] == "requests[0].params.max_tokens"
    assert engine_page.ok("return await engine.csi.chunk(arg);", [
        {"text": "still working", "params": {"model": "tiny-chat", "max_tokens": 64, "overlap": 0}}]) == [
        ["still working"]]


LANGUAGE_CASES = [
    ("Die Katze schläft auf dem warmen Sofa.", ["eng", "deu", "fra"]),
    ("The weather is lovely today, isn't it?", ["eng", "deu", "nld", "afr", "fra"]),
    ("Je pense, donc je suis.", ["fra", "spa", "ita", "por", "cat"]),
    ("Добрый день, как ваши дела?", ["rus", "ukr", "bel", "bul", "mkd", "srp"]),
    ("東京は日本の首都です。", ["jpn", "zho", "kor"]),
    ("Hvordan går det med deg i dag?", ["nob", "nno", "dan", "swe"]),
    ("Saya suka makan nasi goreng.", ["ind", "msa"]),
    ("Hello", ["eng", "deu"]),
    ("", ["eng", "deu"]),
    ("12345 !!! ???", ["eng", "deu"]),
    ("Ein kurzer Satz.", ["deu"]),
    ("Ein kurzer Satz.", ["deu", "deu", "eng", "eng"]),
    ("Bonjour tout le monde", ["eng", "spa"]),
]


def test_select_language_equals_lingua(engine_page):
    got = engine_page.ok("return await engine.csi.selectLanguage(arg);",
                         [{"text": t, "languages": langs} for t, langs in LANGUAGE_CASES])
    expected = []
    for text, langs in LANGUAGE_CASES:
        iso = [getattr(IsoCode639_3, code.upper()) for code in sorted(set(langs))]
        detector = LanguageDetectorBuilder.from_iso_codes_639_3(*iso).with_minimum_relative_distance(0.5).build()
        found = detector.detect_language_of(text)
        expected.append(None if found is None else found.iso_code_639_3.name.lower())
    assert got == expected
    assert None in got and "deu" in got
    err = engine_page.call("return await engine.csi.selectLanguage(arg);",
                           [{"text": "x", "languages": ["eng"]}, {"text": "x", "languages": ["eng", "xxx"]}])["error"]
    assert err["name"] == "InvalidInputError" and err["param"] == "requests[1].languages[1]"
    err = engine_page.call("return await engine.csi.selectLanguage(arg);", [{"text": "x", "languages": []}])["error"]
    assert err["name"] == "InvalidInputError" and err["param"] == "requests[0].languages"


def test_a_skill_using_chat_chunk_and_select_language_agrees_with_cpython(engine_page):
    engine_page.ok("return await engine.skills.register(arg);", {"name": "tour", "source": CSI_TOUR})
    browser = engine_page.ok("return await engine.skills.run('tour', arg);", {"text": TOUR_TEXT})
    tour = load_skill_source("tour", CSI_TOUR)
    with local_csi(DIST, ["tiny-chat"]) as csi:
        cpython = tour.func(csi, tour.input_model(text=TOUR_TEXT)).model_dump(mode="json")
    assert browser == cpython
    assert browser["language"] == "deu" and len(browser["chunks"]) > 1 and browser["reply"]
    assert engine_page.foreign_requests() == []


EXAMPLE_INPUTS = {
    "summarize": {"text": "JSON is a lightweight data format. It is easy to read. " * 12, "chunk_tokens": 32,
                  "model": "tiny-chat"},
    "reply-in-language": {"message": "Wie spät ist es heute in Berlin?", "model": "tiny-chat"},
    "language-sections": {"text": "The cat sleeps on the sofa all day long. " * 2
                          + "Le chat dort sur le canapé toute la journée. " * 2,
                          "languages": ["eng", "fra", "deu"], "max_tokens": 16},
}


def test_example_skills_run_alike_in_the_browser_and_in_cpython(engine_page):
    from csi.skills.examples import language_sections, reply_in_language, summarize
    from csi.skills.registry import EXAMPLES

    skills = {"summarize": summarize, "reply-in-language": reply_in_language, "language-sections": language_sections}
    # search-answer: tests/test_browser_skills.py; stream-answer: tests/test_browser_sdk_skills.py
    assert set(skills) == set(EXAMPLES) - {"search-answer", "stream-answer"}
    browser = {name: engine_page.ok("return await engine.skills.run(arg[0], arg[1]);", [name, data])
               for name, data in EXAMPLE_INPUTS.items()}
    with local_csi(DIST, ["tiny-chat", "all-minilm-l6-v2"]) as csi:
        for name, data in EXAMPLE_INPUTS.items():
            mod = skills[name]
            skill = getattr(mod, name.replace("-", "_"))
            assert browser[name] == skill(csi, mod.Input(**data)).model_dump(mode="json"), name
    assert browser["reply-in-language"]["language"] == "deu"
    assert [s["language"] for s in browser["language-sections"]["sections"]] == ["eng", "eng", "fra", "fra"]
    assert browser["summarize"]["chunks"] > 1
