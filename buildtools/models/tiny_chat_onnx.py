"""Export tiny chat to a single-file fp32 ONNX decoder with KV cache, and check the graph against
PyTorch: logits in prefill, decode, chunked and left-padded batches, and greedy generation."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from .tiny_chat_spec import EOS_ID, NUM_THREADS, PAD_ID, SEED, VOCAB_SIZE
from .traceable_decoder import OnnxDecoder

ONNX_OPSET = 17
MAX_LOGIT_DIFF = 1e-3


def _num_layers(config: LlamaConfig) -> int:
    return int(config.num_hidden_layers)


def onnx_io_names(config: LlamaConfig) -> tuple[list[str], list[str]]:
    """Input and output names in the transformers.js decoder-with-past layout."""
    inputs = ["input_ids", "attention_mask", "position_ids"]
    outputs = ["logits"]
    for i in range(_num_layers(config)):
        inputs += [f"past_key_values.{i}.key", f"past_key_values.{i}.value"]
        outputs += [f"present.{i}.key", f"present.{i}.value"]
    return inputs, outputs


def _dummy_inputs(config: LlamaConfig, batch: int, seq: int, past: int) -> tuple[torch.Tensor, ...]:
    generator = torch.Generator().manual_seed(SEED)
    input_ids = torch.randint(3, VOCAB_SIZE, (batch, seq), generator=generator)
    attention_mask = torch.ones(batch, past + seq, dtype=torch.long)
    position_ids = torch.arange(past, past + seq).unsqueeze(0).expand(batch, -1).contiguous()
    shape = (batch, config.num_key_value_heads, past, config.head_dim)
    pasts = [torch.randn(shape, generator=generator) for _ in range(2 * _num_layers(config))]
    return (input_ids, attention_mask, position_ids, *pasts)


def export_onnx(model: LlamaForCausalLM, path: Path) -> None:
    """Export with KV cache, tracing a general shape (past 3, seq 2) so no 1-token branch is baked in."""
    config = model.config
    input_names, output_names = onnx_io_names(config)
    dynamic_axes: dict[str, dict[int, str]] = {
        "input_ids": {0: "batch_size", 1: "sequence_length"},
        "attention_mask": {0: "batch_size", 1: "total_sequence_length"},
        "position_ids": {0: "batch_size", 1: "sequence_length"},
        "logits": {0: "batch_size", 1: "sequence_length"},
    }
    for name in input_names[3:]:
        dynamic_axes[name] = {0: "batch_size", 2: "past_sequence_length"}
    for name in output_names[1:]:
        dynamic_axes[name] = {0: "batch_size", 2: "total_sequence_length"}
    path.parent.mkdir(parents=True, exist_ok=True)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            OnnxDecoder(model).eval(),
            _dummy_inputs(config, batch=1, seq=2, past=3),
            str(path),
            dynamo=False,
            opset_version=ONNX_OPSET,
            input_names=input_names,
            output_names=output_names,
            dynamic_axes=dynamic_axes,
            do_constant_folding=True,
        )
    onnx.checker.check_model(str(path))
    extra = sorted(p.name for p in path.parent.iterdir() if p != path)
    if extra:
        raise RuntimeError(f"unexpected external data files next to {path.name}: {extra}")


class _OrtDecoder:
    """Minimal KV-cache driver for the exported graph (batch 1)."""

    def __init__(self, path: Path, config: LlamaConfig) -> None:
        options = ort.SessionOptions()
        options.intra_op_num_threads = NUM_THREADS
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.input_names, self.output_names = onnx_io_names(config)
        self.kv_shape = (config.num_key_value_heads, config.head_dim)

    def empty_past(self, batch: int = 1) -> list[np.ndarray]:
        shape = (batch, self.kv_shape[0], 0, self.kv_shape[1])
        return [np.zeros(shape, dtype=np.float32) for _ in self.input_names[3:]]

    def step(
        self, ids: np.ndarray, mask: np.ndarray, positions: np.ndarray, past: list[np.ndarray]
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        feeds = dict(zip(self.input_names, [ids, mask, positions, *past], strict=True))
        logits, *present = self.session.run(self.output_names, feeds)
        return logits, present

    def run_chunk(self, ids: list[int], past: list[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
        past_len = past[0].shape[2]
        total = past_len + len(ids)
        return self.step(
            np.array([ids], dtype=np.int64),
            np.ones((1, total), dtype=np.int64),
            np.arange(past_len, total, dtype=np.int64)[None, :],
            past,
        )

    def greedy(self, prompt: list[int], max_new_tokens: int, min_new_tokens: int = 0) -> list[int]:
        """Greedy decoding; like transformers, EOS is suppressed until ``min_new_tokens``."""
        logits, past = self.run_chunk(prompt, self.empty_past())
        generated: list[int] = []
        for _ in range(max_new_tokens):
            scores = logits[0, -1].copy()
            if len(generated) < min_new_tokens:
                scores[EOS_ID] = -np.inf
            token = int(scores.argmax())
            generated.append(token)
            if token == EOS_ID:
                break
            logits, past = self.run_chunk([token], past)
        return generated


def _max_diff(ort_logits: np.ndarray, torch_logits: torch.Tensor) -> float:
    return float(np.abs(ort_logits - torch_logits.numpy()).max())


def verify_onnx(model: LlamaForCausalLM, onnx_path: Path, prompt_ids: list[int]) -> tuple[dict[str, float], list[int]]:
    """Compare ORT with PyTorch; raise on mismatch.

    Returns the max abs logit difference per scenario (the reference is one full
    no-cache forward pass) and the lengths of the greedy generations that matched.
    """
    config = model.config
    runner = _OrtDecoder(onnx_path, config)
    generator = torch.Generator().manual_seed(SEED + 1)
    sequence = torch.randint(3, VOCAB_SIZE, (18,), generator=generator).tolist()
    with torch.no_grad():
        reference = model(input_ids=torch.tensor([sequence])).logits[0]
    diffs: dict[str, float] = {}

    logits, past = runner.run_chunk(sequence[:9], runner.empty_past())
    diffs["prefill_9_past_0"] = _max_diff(logits[0], reference[:9])
    prefill_past = past
    decode = 0.0
    for pos in range(9, 14):
        logits, past = runner.run_chunk([sequence[pos]], past)
        decode = max(decode, _max_diff(logits[0], reference[pos : pos + 1]))
    diffs["decode_5_steps"] = decode
    logits, _ = runner.run_chunk(sequence[9:13], prefill_past)
    diffs["chunk_4_past_9"] = _max_diff(logits[0], reference[9:13])

    # Batch of two with left padding, as transformers.js would feed it.
    short = sequence[:5]
    ids = np.array([[PAD_ID] * 4 + short, sequence[:9]], dtype=np.int64)
    mask = np.array([[0] * 4 + [1] * 5, [1] * 9], dtype=np.int64)
    positions = np.array([[1] * 4 + list(range(5)), list(range(9))], dtype=np.int64)
    logits, _ = runner.step(ids, mask, positions, runner.empty_past(batch=2))
    diffs["batch_2_left_padded"] = max(_max_diff(logits[0, 4:], reference[:5]), _max_diff(logits[1], reference[:9]))

    for name, value in diffs.items():
        if not value < MAX_LOGIT_DIFF:
            raise RuntimeError(f"ONNX/torch logits mismatch in {name}: max abs diff {value:.3g}")

    # Greedy generation as a chat client would run it (stops at EOS), and forced to 30 tokens.
    matched: list[int] = []
    for min_new_tokens in (0, 30):
        with torch.no_grad():
            expected = model.generate(
                input_ids=torch.tensor([prompt_ids]),
                attention_mask=torch.ones(1, len(prompt_ids), dtype=torch.long),
                max_new_tokens=30,
                min_new_tokens=min_new_tokens,
                do_sample=False,
            )[0, len(prompt_ids) :].tolist()
        got = runner.greedy(prompt_ids, 30, min_new_tokens)
        if got != expected:
            raise RuntimeError(f"greedy mismatch: ORT {got} vs torch {expected}")
        matched.append(len(got))
    return diffs, matched
