"""The normalizer, pre-tokenizer and decoder (``tokenizer.json`` pieces) of each kind of GGUF
tokenizer, as transformers' GGUF reader (``integrations/gguf/gguf_tokenizer_mapping.py``) and
csi-web's importer set them."""

from __future__ import annotations

from typing import Any

Step = dict[str, Any]

_LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
           r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
_QWEN2 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
          r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
_QWEN35 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}"
           r"| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
_TEKKEN = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
           r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"
           r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")
_GPT4O = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
          r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
          r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")

# llama.cpp's name of a byte-level vocabulary's split (tokenizer.ggml.pre) -> the regex its merges
# were learned on; any other name keeps GPT-2's split (ByteLevel's own regex)
SPLITS: dict[str, str] = {
    **dict.fromkeys(("llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2",
                     "jina-v5-nano", "dbrx", "smaug-bpe"), _LLAMA3),
    "tekken": _TEKKEN,
    **dict.fromkeys(("qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "megrez"), _QWEN2),
    "qwen35": _QWEN35,
    **dict.fromkeys(("gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"), _GPT4O),
}


def _byte_level(use_regex: bool, add_prefix_space: bool = False) -> Step:
    return {"type": "ByteLevel", "add_prefix_space": add_prefix_space, "trim_offsets": True, "use_regex": use_regex}


def byte_level_pre_tokenizer(pre: str) -> Step:
    """The pre-tokenizer of a byte-level vocabulary whose ``tokenizer.ggml.pre`` is ``pre``."""
    if pre == "smollm":  # SmolLM splits every digit first; transformers' reader leaves that out (the importer's fix)
        return {"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": True},
                                                      _byte_level(True)]}
    split = SPLITS.get(pre)
    if split is None:
        return _byte_level(True)
    return {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": split}, "behavior": "Isolated", "invert": False},
        _byte_level(False)]}


BYTE_LEVEL_DECODER = _byte_level(True, add_prefix_space=True)


def _replace(pattern: str, content: str) -> Step:
    return {"type": "Replace", "pattern": {"String": pattern}, "content": content}


def sentencepiece_steps(builder: str) -> tuple[Step | None, Step | None, Step]:
    """``(normalizer, pre_tokenizer, decoder)`` of a sentencepiece-style vocabulary built as
    ``builder`` (``"llama"``, ``"phi3"`` or ``"gemma"``) builds it."""
    decoders: list[Step] = [_replace("\u2581", " "), {"type": "ByteFallback"}, {"type": "Fuse"}]
    if builder == "gemma":  # spaces become ▁ and each piece ends after one; no prefix space
        return (_replace(" ", "\u2581"),
                {"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithPrevious", "invert": False},
                {"type": "Sequence", "decoders": decoders})
    decoders.append({"type": "Strip", "content": " ", "start": 1, "stop": 0})
    decoder = {"type": "Sequence", "decoders": decoders}
    if builder == "phi3":  # the prefix space from a normalizer, which keeps a leading space's ▁ as well
        prefix = {"type": "Prepend", "prepend": "\u2581"}
        return {"type": "Sequence", "normalizers": [prefix, _replace(" ", "\u2581")]}, None, decoder
    return None, {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": False}, decoder
