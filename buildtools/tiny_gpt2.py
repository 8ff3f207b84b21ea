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
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import GenerationConfig, GPT2Config, GPT2LMHeadModel

from .atomic_dir import replacing
from .tiny_chat import OnnxDecoder

SEED = 4321
VOCAB_SIZE = 2048
CONTEXT_LENGTH = 512
LAYERS, HEADS, WIDTH = 2, 4, 128
EOS = "<|endoftext|>"
ONNX_OPSET = 17
MAX_LOGIT_DIFF = 1e-4
# Training text for the tokenizer: Python's own sources, read from this interpreter.
CORPUS_MODULES = ("textwrap", "string", "json.decoder", "json.encoder", "argparse", "pathlib")


def _corpus() -> list[str]:
    import importlib
    import inspect

    return [inspect.getsource(importlib.import_module(m)) for m in CORPUS_MODULES]


def train_tokenizer() -> Tokenizer:
    """GPT-2's tokenizer recipe: byte-level BPE, ``<|endoftext|>`` as id 0, no tokens added."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, special_tokens=[AddedToken(EOS, special=True)],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train_from_iterator(_corpus(), trainer)
    return tokenizer


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


def _io_names() -> tuple[list[str], list[str]]:
    inputs = ["input_ids", "attention_mask", "position_ids"]
    outputs = ["logits"]
    for i in range(LAYERS):
        inputs += [f"past_key_values.{i}.key", f"past_key_values.{i}.value"]
        outputs += [f"present.{i}.key", f"present.{i}.value"]
    return inputs, outputs


def _inputs(ids: list[int], past: list[np.ndarray] | list[torch.Tensor]) -> tuple[torch.Tensor, ...]:
    start = past[0].shape[2] if past else 0
    n = len(ids)
    return (torch.tensor([ids]), torch.ones(1, start + n, dtype=torch.long),
            torch.arange(start, start + n)[None], *(torch.as_tensor(p) for p in past))


def export_onnx(model: GPT2LMHeadModel, path: Path) -> None:
    """Export with KV cache, traced at past 3, seq 2 (no one-token branch baked in)."""
    input_names, output_names = _io_names()
    axes: dict[str, dict[int, str]] = {
        "input_ids": {1: "sequence_length"}, "attention_mask": {1: "total_sequence_length"},
        "position_ids": {1: "sequence_length"}, "logits": {1: "sequence_length"},
    }
    for name in input_names[3:]:
        axes[name] = {2: "past_sequence_length"}
    for name in output_names[1:]:
        axes[name] = {2: "total_sequence_length"}
    head_dim = WIDTH // HEADS
    generator = torch.Generator().manual_seed(SEED)
    past = [torch.randn(1, HEADS, 3, head_dim, generator=generator) for _ in range(2 * LAYERS)]
    path.parent.mkdir(parents=True, exist_ok=True)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(OnnxDecoder(model).eval(), _inputs([5, 6], past), str(path), dynamo=False,
                          opset_version=ONNX_OPSET, input_names=input_names, output_names=output_names,
                          dynamic_axes=axes, do_constant_folding=True)
    onnx.checker.check_model(str(path))


def verify_onnx(model: GPT2LMHeadModel, path: Path) -> float:
    """ORT against PyTorch: a prefill, then three one-token steps on the cache. Raise on mismatch."""
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    generator = torch.Generator().manual_seed(SEED + 1)
    ids = torch.randint(1, model.config.vocab_size, (12,), generator=generator).tolist()
    with torch.no_grad():
        reference = model(input_ids=torch.tensor([ids])).logits[0].numpy()
    input_names, _ = _io_names()
    past: list[np.ndarray] = [np.zeros((1, HEADS, 0, WIDTH // HEADS), np.float32)] * (2 * LAYERS)
    worst, done = 0.0, 0
    for chunk in (ids[:9], ids[9:10], ids[10:11], ids[11:12]):
        feeds = {name: np.asarray(t) for name, t in zip(input_names, _inputs(chunk, past), strict=True)}
        logits, *past = session.run(None, feeds)
        worst = max(worst, float(np.abs(logits[0] - reference[done:done + len(chunk)]).max()))
        done += len(chunk)
    if not worst < MAX_LOGIT_DIFF:
        raise RuntimeError(f"ONNX/torch logits mismatch: max abs diff {worst:.3g}")
    return worst


def build(out_dir: Path) -> None:
    """Build the tiny-gpt2 folder at ``out_dir`` (replacing it atomically)."""
    with replacing(Path(out_dir).resolve()) as tmp:
        tokenizer = train_tokenizer()
        write_tokenizer_files(tokenizer, tmp)
        model = make_model(tokenizer.get_vocab_size())
        model.generation_config = GenerationConfig(eos_token_id=0, bos_token_id=0, pad_token_id=0)
        model.save_pretrained(tmp, safe_serialization=True)
        export_onnx(model, tmp / "onnx" / "model.onnx")
        worst = verify_onnx(model, tmp / "onnx" / "model.onnx")
        print(f"tiny-gpt2: vocab {tokenizer.get_vocab_size()}, ONNX vs torch max |logit diff| {worst:.2e}")


if __name__ == "__main__":
    build(Path(sys.argv[1]))
