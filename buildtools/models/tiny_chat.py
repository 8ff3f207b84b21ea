"""Build a tiny, deterministic Llama-architecture chat model for offline use.

The model is trained from scratch on chat turns synthesised from the docstrings
of the Python standard library, so no network access is needed.  The output
folder holds a Hugging Face checkpoint (``config.json`` + ``model.safetensors``),
a byte-level BPE tokenizer with a ChatML chat template, and a single-file fp32
ONNX export (``onnx/model.onnx``) in the decoder-with-KV-cache layout that
transformers.js loads.  The ONNX graph is checked against PyTorch before the
folder is published (atomically, via a temporary sibling directory).

The parts, in build order: ``tiny_chat_docs`` (docstrings mined), ``tiny_chat_corpus``
(conversations), ``tiny_chat_tokenizer``, ``tiny_chat_training``, ``tiny_chat_onnx`` (export and
check); ``tiny_chat_spec`` holds what they share.  This module runs them and checks the result.

Usage: ``python -m buildtools.models.tiny_chat OUT_DIR``
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import torch
from tokenizers import Tokenizer
from transformers import AutoTokenizer, GenerationConfig, LlamaForCausalLM

from .atomic_dir import replacing
from .tiny_chat_corpus import SYSTEM_PROMPTS, build_conversations
from .tiny_chat_docs import collect_doc_items
from .tiny_chat_onnx import export_onnx, verify_onnx
from .tiny_chat_spec import EOS_ID, NUM_THREADS, PAD_ID, render_chat
from .tiny_chat_tokenizer import encode_conversation, train_tokenizer, write_tokenizer_files
from .tiny_chat_training import BATCH_SIZE, LOG_EVERY, SEQ_LEN, TRAIN_STEPS, pack_rows, train_model

SAMPLE_QUESTIONS = (
    "What does json.dumps do?",
    "Tell me about the textwrap module.",
    "Explain os.path.join.",
)


def _verify_tokenizer_folder(folder: Path, tokenizer: Tokenizer) -> None:
    """Check transformers loads the tokenizer and its chat template matches training."""
    hf_tokenizer = AutoTokenizer.from_pretrained(str(folder))
    messages = [
        {"role": "system", "content": SYSTEM_PROMPTS[0]},
        {"role": "user", "content": "What does `json.dumps` do?"},
        {"role": "assistant", "content": "Serialize obj to a JSON formatted str."},
    ]
    rendered = hf_tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    if rendered != render_chat(messages, add_generation_prompt=True):
        raise RuntimeError(f"chat template renders differently: {rendered!r}")
    ids, _ = encode_conversation(tokenizer, messages)
    if hf_tokenizer(render_chat(messages))["input_ids"] != ids:
        raise RuntimeError("segment-wise training tokenization differs from full-string tokenization")
    if hf_tokenizer.eos_token_id != EOS_ID or hf_tokenizer.pad_token_id != PAD_ID:
        raise RuntimeError("tokenizer special token ids are wrong")


def _print_samples(model: LlamaForCausalLM, tokenizer: Tokenizer) -> None:
    for question in SAMPLE_QUESTIONS:
        prompt = tokenizer.encode(render_chat([{"role": "user", "content": question}], True)).ids
        with torch.no_grad():
            out = model.generate(
                input_ids=torch.tensor([prompt]),
                attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
                max_new_tokens=120,
                do_sample=False,
            )[0, len(prompt) :].tolist()
        stopped = "stopped at <|im_end|>" if EOS_ID in out else "no <|im_end|> within 120 tokens"
        text = tokenizer.decode(out, skip_special_tokens=True)
        print(f"  Q: {question}\n  A: {text!r}  [{len(out)} tokens, {stopped}]")


def build(out_dir: Path) -> None:
    """Build the tiny chat model folder at ``out_dir`` (replacing it atomically)."""
    out_dir = Path(out_dir).resolve()
    torch.set_num_threads(NUM_THREADS)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    started = time.monotonic()
    with replacing(out_dir) as tmp:
        items = collect_doc_items()
        conversations = build_conversations(items)
        corpus_chars = sum(len(render_chat(c)) for c in conversations)
        print(f"corpus: {len(items)} doc items, {len(conversations)} conversations, {corpus_chars / 1e6:.2f} MB")

        tokenizer = train_tokenizer(conversations)
        write_tokenizer_files(tokenizer, tmp)
        _verify_tokenizer_folder(tmp, tokenizer)
        rows, masks = pack_rows(tokenizer, conversations, SEQ_LEN + 1)
        print(
            f"packed {len(rows)} rows of {SEQ_LEN + 1} tokens ({int(masks.sum())} loss tokens); "
            f"training {TRAIN_STEPS} steps x {BATCH_SIZE} rows"
        )

        model, losses = train_model(rows, masks)
        model.generation_config = GenerationConfig(
            eos_token_id=[EOS_ID], pad_token_id=PAD_ID, bos_token_id=None, do_sample=False
        )
        model.save_pretrained(tmp, safe_serialization=True)

        reference = LlamaForCausalLM.from_pretrained(tmp, attn_implementation="eager", dtype=torch.float32)
        reference.eval()
        onnx_path = tmp / "onnx" / "model.onnx"
        export_onnx(reference, onnx_path)
        prompt = tokenizer.encode(render_chat([{"role": "user", "content": SAMPLE_QUESTIONS[0]}], True)).ids
        diffs, matched = verify_onnx(reference, onnx_path, prompt)
        print("ONNX vs torch max |logit diff|: " + ", ".join(f"{k}={v:.2e}" for k, v in diffs.items()))
        print(f"greedy generation, ORT loop == transformers generate(): {matched} tokens")
        _print_samples(reference, tokenizer)

    tail = sum(losses[-LOG_EVERY:]) / len(losses[-LOG_EVERY:])
    print(f"built {out_dir} in {time.monotonic() - started:.0f}s (final loss {tail:.3f})")


if __name__ == "__main__":
    build(Path(sys.argv[1]))
