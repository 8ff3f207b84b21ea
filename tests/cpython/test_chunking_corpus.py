"""csi.text.chunking against semantic-text-splitter (the text-splitter crate Pharia Kernel chunks with),
same tokenizer, capacity and overlap, over a varied corpus: chunks and offsets must be identical."""

from __future__ import annotations

import random

import pytest
from semantic_text_splitter import TextSplitter
from tokenizers import Tokenizer

from csi.errors import InvalidInputError
from csi.text.chunking import chunk_text
from tests.support.paths import MODELS

CORPUS = {
    "prose": ("The engine runs in the browser. It never talks to a server! Does it cache models? Yes: "
              "the browser keeps them. Mr. Smith, aged 42, said \"fine.\" Then he left...\n") * 6,
    "paragraphs": "First paragraph line one.\nLine two.\n\nSecond paragraph.\n\n\n\nAfter a wide gap.\n" * 5,
    "crlf": "Windows lines.\r\nMore text here.\r\n\r\nNew paragraph after CRLF.\r\n" * 6,
    "list": "Shopping:\n- apples and pears\n- bread\n  - rye\n  - wheat\n1. first\n2. second\n\n" * 5,
    "code": "def f(x):\n    if x > 1:\n        return x * 2\n    return 0\n\n\nclass A:\n    pass\n" * 5,
    "cjk": "東京は日本の首都です。人口はとても多いです。京都には古いお寺がたくさんあります。北京是中国的首都。" * 4,
    "korean": "안녕하세요. 저는 학생입니다. 오늘 날씨가 좋네요! " * 8,
    "thai": "ไม่มีอะไรที่เป็นไปไม่ได้ สวัสดีครับ วันนี้อากาศดีมาก " * 6,
    "emoji": "Family 👩‍👩‍👧‍👦 and flags 🇩🇪🇫🇷🇯🇵, thumbs 👍🏽👍🏿, keycap 1️⃣. Done! " * 6,
    "long_words": "Supercalifragilisticexpialidocious " * 4 + "x" * 300 + " Donaudampfschifffahrtsgesellschaft." * 3,
    "whitespace": "a    b\t\t\tc\n \n \n d     \n\n\n\n\n   e   " * 8,
    "combining": "Cafe\u0301 na\u0308ive re\u0301sume\u0301 \u1100\u1161\u11a8 " * 10,
    "rtl": "مرحبا بالعالم. هذه جملة عربية. שלום עולם, זה משפט. " * 6,
    "mixed": "English text. Deutscher Text mit Umlauten: äöü ß. Русский текст. 中文文本。 😀\n\n" * 4,
    "empty": "",
    "blank": "   \n\n\t  ",
}
SETTINGS = [(1, 0), (2, 1), (5, 0), (5, 4), (16, 3), (64, 8), (256, 32)]


@pytest.fixture(scope="module", params=["all-minilm-l6-v2", "tiny-chat"])
def tokenizer(request) -> Tokenizer:
    path = MODELS / request.param / "tokenizer.json"
    if not path.exists():
        pytest.fail(f"{path} is missing: run `python3 build.py test`")
    return Tokenizer.from_file(str(path))


def counter(tokenizer: Tokenizer):
    def count(texts: list[str]) -> list[int]:
        return [len(e.ids) for e in tokenizer.encode_batch(texts, add_special_tokens=False)]

    return count


def check(text: str, ours: list[tuple[int, str]], reference: list[tuple[int, str]]) -> None:
    assert ours == reference
    for offset, chunk in ours:
        assert text[offset:offset + len(chunk)] == chunk


@pytest.mark.parametrize("name", sorted(CORPUS))
@pytest.mark.parametrize(("capacity", "overlap"), SETTINGS)
def test_tokens_equal_text_splitter(tokenizer, name, capacity, overlap):
    text = CORPUS[name]
    splitter = TextSplitter.from_huggingface_tokenizer(tokenizer, capacity=capacity, overlap=overlap)
    check(text, chunk_text(text, capacity, overlap, counter(tokenizer)), list(splitter.chunk_indices(text)))


@pytest.mark.parametrize("name", sorted(CORPUS))
@pytest.mark.parametrize(("capacity", "overlap"), [(1, 0), (3, 2), (10, 0), (40, 7), (200, 50)])
def test_characters_equal_text_splitter(name, capacity, overlap):
    text = CORPUS[name]
    splitter = TextSplitter(capacity, overlap)

    def chars(texts: list[str]) -> list[int]:
        return [len(t) for t in texts]

    check(text, chunk_text(text, capacity, overlap, chars), list(splitter.chunk_indices(text)))


def test_overlap_is_a_maximum_shared_by_neighbours():
    # "123456", 3 characters, overlap 2: the crate (0.33) gives 123, 234, 345, 456 (an older release's
    # docs show 12, 23, 34, 456); we follow the crate
    reference = TextSplitter(3, 2).chunk_indices("123456")
    assert chunk_text("123456", 3, 2, lambda ts: [len(t) for t in ts]) == list(reference)


def test_random_mixtures_equal_text_splitter(tokenizer):
    rng = random.Random(4)
    pieces = [p for text in CORPUS.values() for p in text.split(" ") if p]
    for _ in range(20):
        text = " ".join(rng.choice(pieces) for _ in range(rng.randint(5, 120)))
        capacity = rng.randint(1, 40)
        overlap = rng.randint(0, capacity - 1)
        splitter = TextSplitter.from_huggingface_tokenizer(tokenizer, capacity=capacity, overlap=overlap)
        check(text, chunk_text(text, capacity, overlap, counter(tokenizer)), list(splitter.chunk_indices(text)))


def test_validation_names_the_field(tokenizer):
    with pytest.raises(InvalidInputError) as err:
        chunk_text("some text", 4, 4, counter(tokenizer))
    assert err.value.param == "overlap"
    with pytest.raises(InvalidInputError) as err:
        chunk_text("some text", 0, 0, counter(tokenizer))
    assert err.value.param == "max_tokens"
