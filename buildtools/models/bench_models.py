"""Random-weight decoders of real shapes, for ``python3 build.py bench`` only (never for the tests).

Weights do not change speed; shapes do. Each model is a Hub-style repo (served to the bench by the
local Hub mirror) with a ChatML byte-level BPE tokenizer of exactly the model's vocabulary size: a
small trained vocabulary padded with byte strings no merge produces, so every id decodes to bytes.

- ``csi-bench/smollm2-135m-shape``: Llama, 30 layers x 576 (9 heads, 3 KV heads), vocab 49,152, fp32.
- ``csi-bench/qwen2.5-0.5b-shape``: Qwen2, 24 layers x 896 (14 heads, 2 KV heads), vocab 151,936,
  int8 weights (dynamic quantization of the MatMuls, as the Hub's ``model_quantized.onnx``): fp32
  would be a 2.5 GB file past ONNX's 2 GB protobuf limit, and q8 is what browsers load at this size.

Initialized as the originals are (std 0.02), so next-token distributions are flat: the worst case
for whole-vocabulary sampling.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import torch
from tokenizers import Tokenizer
from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

from .atomic_dir import replacing
from .onnx_decoder import CacheShape, export_decoder
from .tiny_gpt2 import train_byte_level_bpe
from .tiny_qwen2 import CHAT_TEMPLATE, EOS, SPECIALS

SEED = 31337
CORPUS_MODULES = ("textwrap", "string", "json.decoder", "argparse", "pathlib", "email.message", "csv")
TRAINED_VOCAB = 4096


@dataclass(frozen=True)
class Shape:
    repo_id: str
    arch: str
    vocab: int
    layers: int
    width: int
    heads: int
    kv_heads: int
    intermediate: int
    quantized: bool


SHAPES = (
    Shape("csi-bench/smollm2-135m-shape", "llama", 49_152, 30, 576, 9, 3, 1536, quantized=False),
    Shape("csi-bench/qwen2.5-0.5b-shape", "qwen2", 151_936, 24, 896, 14, 2, 4864, quantized=True),
)


def padded_tokenizer(vocab_size: int) -> Tokenizer:
    """The trained BPE, its vocabulary padded to ``vocab_size`` with unmerged printable byte strings."""
    spec = json.loads(train_byte_level_bpe(CORPUS_MODULES, TRAINED_VOCAB, SPECIALS).to_str())
    vocab: dict[str, int] = spec["model"]["vocab"]
    letters = [chr(c) for c in range(0x21, 0x7F)]
    next_id = max(vocab.values()) + 1

    def fillers():  # "Ġab", "ab", "Ġabc", ...: words of 2 then 3 printable characters
        for length in (2, 3):
            stack = [""]
            for _ in range(length):
                stack = [s + c for s in stack for c in letters]
            for word in stack:
                yield "Ġ" + word
                yield word

    for token in fillers():
        if next_id >= vocab_size:
            break
        if token not in vocab:
            vocab[token] = next_id
            next_id += 1
    tokenizer = Tokenizer.from_str(json.dumps(spec))
    assert tokenizer.get_vocab_size() == vocab_size, tokenizer.get_vocab_size()
    return tokenizer


def _write_tokenizer(tokenizer: Tokenizer, folder: Path, context: int) -> None:
    tokenizer.save(str(folder / "tokenizer.json"))
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": None, "eos_token": EOS, "pad_token": SPECIALS[0],
        "unk_token": None, "model_max_length": context, "clean_up_tokenization_spaces": False,
        "chat_template": CHAT_TEMPLATE,
        "added_tokens_decoder": {
            str(tokenizer.token_to_id(t)): {"content": t, "lstrip": False, "normalized": False, "rstrip": False,
                                            "single_word": False, "special": True} for t in SPECIALS},
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n")


def make_model(shape: Shape, eos: int, pad: int) -> torch.nn.Module:
    torch.manual_seed(SEED)
    common = dict(vocab_size=shape.vocab, hidden_size=shape.width, intermediate_size=shape.intermediate,
                  num_hidden_layers=shape.layers, num_attention_heads=shape.heads,
                  num_key_value_heads=shape.kv_heads, max_position_embeddings=8192, tie_word_embeddings=True,
                  initializer_range=0.02, bos_token_id=pad, eos_token_id=eos)
    model: torch.nn.Module
    if shape.arch == "llama":
        model = LlamaForCausalLM(LlamaConfig(**common, rope_theta=100_000.0, architectures=["LlamaForCausalLM"]))
    else:
        model = Qwen2ForCausalLM(Qwen2Config(**common, rope_theta=1_000_000.0, architectures=["Qwen2ForCausalLM"]))
    model.eval()
    model.generation_config = GenerationConfig(eos_token_id=[eos], bos_token_id=pad, pad_token_id=pad)
    return model


def build(shape: Shape, out_dir: Path) -> None:
    """Build ``shape``'s repo folder at ``out_dir`` (replacing it atomically)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with replacing(Path(out_dir).resolve()) as tmp:
        tokenizer = padded_tokenizer(shape.vocab)
        _write_tokenizer(tokenizer, tmp, 8192)
        model = make_model(shape, tokenizer.token_to_id(EOS), tokenizer.token_to_id(SPECIALS[0]))
        model.config.save_pretrained(tmp)
        model.generation_config.save_pretrained(tmp)
        config = json.loads((tmp / "config.json").read_text())
        config["transformers.js_config"] = {"dtype": "q8" if shape.quantized else "fp32"}
        (tmp / "config.json").write_text(json.dumps(config, indent=2) + "\n")
        cache = CacheShape(shape.layers, shape.kv_heads, shape.width // shape.heads)
        if not shape.quantized:
            export_decoder(model, cache, tmp / "onnx" / "model.onnx", SEED)
        else:
            work = tmp / "fp32"
            export_decoder(model, cache, work / "model.onnx", SEED)  # past 2 GB: external data
            del model
            (tmp / "onnx").mkdir()
            quantize_dynamic(str(work / "model.onnx"), str(tmp / "onnx" / "model_quantized.onnx"),
                             op_types_to_quantize=["MatMul"], weight_type=QuantType.QInt8,
                             extra_options={"MatMulConstBOnly": True})
            for f in work.iterdir():
                f.unlink()
            work.rmdir()
            onnx.checker.check_model(str(tmp / "onnx" / "model_quantized.onnx"))
        print(f"{shape.repo_id}: vocab {tokenizer.get_vocab_size()}, {shape.layers} x {shape.width}")


if __name__ == "__main__":
    for s in SHAPES:
        if s.repo_id.endswith(sys.argv[1]):
            build(s, Path(sys.argv[2]))
