"""Build ``csi-test/tiny-qwen2``: a Hub-style model that is *not* built into the site.

The tests serve it from a local mirror in the Hub's URL layout, to load a model the way a user
loads ``org/name``: through transformers.js's download path, its browser cache and its progress
events. It is a Qwen2-architecture decoder (grouped-query attention, q/k/v biases, tied
embeddings, ChatML template) with random (seeded) weights and its own byte-level BPE tokenizer,
trained on other text than ``tiny-gpt2``'s. The tests compare it against PyTorch, not its prose.

Output folder, as a Hub repo holds it: ``config.json`` (with ``transformers.js_config`` naming
fp32 weights, as ONNX repos on the Hub do), ``generation_config.json``, ``model.safetensors``
(the torch reference), the tokenizer files and ``onnx/model.onnx``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from tokenizers import Tokenizer
from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

from .atomic_dir import replacing
from .onnx_decoder import CacheShape, export_decoder, verify_decoder
from .tiny_gpt2 import train_byte_level_bpe

REPO_ID = "csi-test/tiny-qwen2"
SEED = 2718
VOCAB_SIZE = 1024
CONTEXT_LENGTH = 1024
LAYERS, HEADS, KV_HEADS, WIDTH = 2, 4, 2, 96
SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
EOS = "<|im_end|>"
INIT_STD = 0.25  # larger than Qwen2's 0.02, so greedy decoding has clear winners (no near-ties)
CORPUS_MODULES = ("email.message", "http.client", "csv", "calendar", "difflib", "shlex")
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] "
    "+ '<|im_end|>' + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}"
    "{% endif %}"
)


def train_tokenizer() -> Tokenizer:
    """Byte-level BPE with Qwen2's three special tokens first."""
    return train_byte_level_bpe(CORPUS_MODULES, VOCAB_SIZE, SPECIALS)


def write_tokenizer_files(tokenizer: Tokenizer, folder: Path) -> None:
    tokenizer.save(str(folder / "tokenizer.json"))
    config = {
        "tokenizer_class": "Qwen2Tokenizer",
        "bos_token": None,
        "eos_token": EOS,
        "pad_token": SPECIALS[0],
        "unk_token": None,
        "model_max_length": CONTEXT_LENGTH,
        "clean_up_tokenization_spaces": False,
        "chat_template": CHAT_TEMPLATE,
        "added_tokens_decoder": {
            str(tokenizer.token_to_id(t)): {"content": t, "lstrip": False, "normalized": False, "rstrip": False,
                                            "single_word": False, "special": True}
            for t in SPECIALS
        },
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n")


def make_model(tokenizer: Tokenizer) -> Qwen2ForCausalLM:
    torch.manual_seed(SEED)
    eos, pad = tokenizer.token_to_id(EOS), tokenizer.token_to_id(SPECIALS[0])
    config = Qwen2Config(vocab_size=tokenizer.get_vocab_size(), hidden_size=WIDTH, intermediate_size=2 * WIDTH,
                         num_hidden_layers=LAYERS, num_attention_heads=HEADS, num_key_value_heads=KV_HEADS,
                         max_position_embeddings=CONTEXT_LENGTH, tie_word_embeddings=True,
                         initializer_range=INIT_STD, bos_token_id=pad, eos_token_id=eos,
                         architectures=["Qwen2ForCausalLM"])
    model = Qwen2ForCausalLM(config).eval()
    model.generation_config = GenerationConfig(eos_token_id=[eos, pad], bos_token_id=pad, pad_token_id=pad)
    return model


def build(out_dir: Path) -> None:
    """Build the repo folder at ``out_dir`` (replacing it atomically)."""
    with replacing(Path(out_dir).resolve()) as tmp:
        tokenizer = train_tokenizer()
        write_tokenizer_files(tokenizer, tmp)
        model = make_model(tokenizer)
        model.save_pretrained(tmp, safe_serialization=True)
        config = json.loads((tmp / "config.json").read_text())
        config["transformers.js_config"] = {"dtype": "fp32"}
        (tmp / "config.json").write_text(json.dumps(config, indent=2) + "\n")
        shape = CacheShape(LAYERS, KV_HEADS, WIDTH // HEADS)
        export_decoder(model, shape, tmp / "onnx" / "model.onnx", SEED)
        worst = verify_decoder(model, shape, tmp / "onnx" / "model.onnx", model.config.vocab_size, SEED + 1)
        print(f"{REPO_ID}: vocab {tokenizer.get_vocab_size()}, ONNX vs torch max |logit diff| {worst:.2e}")


if __name__ == "__main__":
    build(Path(sys.argv[1]))
