"""Build ``tiny-gpt2``: a small GPT-2-architecture model with random (seeded) weights.

It exists for what ``tiny-chat`` (Llama: rotary positions) cannot show: learned absolute position
embeddings (``wpe``), LayerNorm with bias, tied input/output embeddings and GPT-2's byte-level BPE
tokenizer class. Weights are untrained: the tests compare it against PyTorch, not its prose.

Output folder: ``config.json``, ``generation_config.json``, ``model.safetensors`` (the torch
reference), the tokenizer files, and ``onnx/model.onnx`` in the transformers.js decoder-with-past
layout (inputs ``input_ids``, ``attention_mask``, ``position_ids``, ``past_key_values.*``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import GenerationConfig, GPT2Config, GPT2LMHeadModel

from .atomic_dir import replacing
from .onnx_decoder import CacheShape, export_decoder, verify_decoder

SEED = 4321
VOCAB_SIZE = 2048
CONTEXT_LENGTH = 512
LAYERS, HEADS, WIDTH = 2, 4, 128
EOS = "<|endoftext|>"
# Training text for the tokenizer: Python's own sources, read from this interpreter.
CORPUS_MODULES = ("textwrap", "string", "json.decoder", "json.encoder", "argparse", "pathlib")


def train_byte_level_bpe(modules: tuple[str, ...], vocab_size: int, specials: tuple[str, ...]) -> Tokenizer:
    """Byte-level BPE (GPT-2's recipe) trained on the sources of these standard-library modules, read
    from this interpreter, with ``specials`` as the first ids."""
    import importlib
    import inspect

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[AddedToken(t, special=True) for t in specials],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train_from_iterator([inspect.getsource(importlib.import_module(m)) for m in modules], trainer)
    return tokenizer


def train_tokenizer() -> Tokenizer:
    """GPT-2's tokenizer: ``<|endoftext|>`` as id 0, no tokens added."""
    return train_byte_level_bpe(CORPUS_MODULES, VOCAB_SIZE, (EOS,))


def write_tokenizer_files(tokenizer: Tokenizer, folder: Path) -> None:
    tokenizer.save(str(folder / "tokenizer.json"))
    config = {
        "tokenizer_class": "GPT2Tokenizer",
        "bos_token": EOS,
        "eos_token": EOS,
        "unk_token": EOS,
        "add_bos_token": False,
        "add_prefix_space": False,
        "model_max_length": CONTEXT_LENGTH,
        "clean_up_tokenization_spaces": False,
        "added_tokens_decoder": {"0": {"content": EOS, "lstrip": False, "normalized": False, "rstrip": False,
                                       "single_word": False, "special": True}},
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n")
    (folder / "special_tokens_map.json").write_text(
        json.dumps({"bos_token": EOS, "eos_token": EOS, "unk_token": EOS}, indent=2) + "\n")


def make_model(vocab_size: int) -> GPT2LMHeadModel:
    torch.manual_seed(SEED)
    config = GPT2Config(vocab_size=vocab_size, n_positions=CONTEXT_LENGTH, n_embd=WIDTH, n_layer=LAYERS,
                        n_head=HEADS, bos_token_id=0, eos_token_id=0, tie_word_embeddings=True,
                        architectures=["GPT2LMHeadModel"])
    model = GPT2LMHeadModel(config).eval()
    with torch.no_grad():  # untrained position rows are all alike at init scale: make them distinct
        model.transformer.wpe.weight.normal_(0.0, 0.2)
    return model


def build(out_dir: Path) -> None:
    """Build the tiny-gpt2 folder at ``out_dir`` (replacing it atomically)."""
    with replacing(Path(out_dir).resolve()) as tmp:
        tokenizer = train_tokenizer()
        write_tokenizer_files(tokenizer, tmp)
        model = make_model(tokenizer.get_vocab_size())
        model.generation_config = GenerationConfig(eos_token_id=0, bos_token_id=0, pad_token_id=0)
        model.save_pretrained(tmp, safe_serialization=True)
        shape = CacheShape(LAYERS, HEADS, WIDTH // HEADS)
        export_decoder(model, shape, tmp / "onnx" / "model.onnx", SEED)
        worst = verify_decoder(model, shape, tmp / "onnx" / "model.onnx", model.config.vocab_size, SEED + 1)
        print(f"tiny-gpt2: vocab {tokenizer.get_vocab_size()}, ONNX vs torch max |logit diff| {worst:.2e}")


if __name__ == "__main__":
    build(Path(sys.argv[1]))
