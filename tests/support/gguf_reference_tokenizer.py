"""transformers' reading of a GGUF's tokenizer (its GGUF converter), with the fix-ups csi-web's
importer once applied to it: the reference ``csi.gguf.tokenizer`` is held to."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from buildtools.models.gguf_import import read_header

# Families whose transformers tokenizer class redoes its pipeline over the one built from the file
# (Qwen's split regex, Gemma's sentencepiece steps and <mask>): a byte-level BPE file of theirs keeps
# the file's own (its tokenizer.ggml.pre split), saved with the generic class.
FILE_TOKENIZER_FAMILIES = ("qwen3", "gemma3", "phi3")


def _pre_tokenizer(pre: str) -> dict[str, Any] | None:
    """The Hugging Face pre-tokenizer of llama.cpp's named BPE pre-tokenizer, where transformers'
    GGUF converter leaves a step out (``None``: keep the converter's)."""
    if pre == "smollm":  # SmolLM's tokenizer splits every digit before the byte-level step
        return {"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": True},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]}
    return None


def write_reference_tokenizer(path: Path, out: Path) -> dict[str, Any]:
    """``tokenizer.json`` and ``tokenizer_config.json`` of the GGUF at ``path`` written to ``out`` by
    transformers; returns the tokenizer config."""
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    meta, _ = read_header(path)
    arch = str(meta.get("general.architecture", ""))
    generic = meta.get("tokenizer.ggml.model") == "gpt2" and arch in FILE_TOKENIZER_FAMILIES
    loader = PreTrainedTokenizerFast if generic else AutoTokenizer
    tok = loader.from_pretrained(str(path.parent), gguf_file=path.name)
    tok.save_pretrained(str(out))
    for extra in ("chat_template.jinja", "special_tokens_map.json"):
        (out / extra).unlink(missing_ok=True)
    spec = json.loads((out / "tokenizer.json").read_text())
    pre = _pre_tokenizer(str(meta.get("tokenizer.ggml.pre", "")))
    if pre is not None:
        spec["pre_tokenizer"] = pre
    (out / "tokenizer.json").write_text(json.dumps(spec, ensure_ascii=False, indent=1) + "\n")
    config = json.loads((out / "tokenizer_config.json").read_text())
    template = meta.get("tokenizer.chat_template")
    if template:
        config["chat_template"] = template  # transformers.js reads it from here only
    config["model_max_length"] = int(meta.get(f"{arch}.context_length", 2048))
    config["clean_up_tokenization_spaces"] = False
    if generic:
        config["tokenizer_class"] = "PreTrainedTokenizerFast"  # the name transformers.js knows as well
    (out / "tokenizer_config.json").write_text(json.dumps(config, ensure_ascii=False, indent=2) + "\n")
    return config
