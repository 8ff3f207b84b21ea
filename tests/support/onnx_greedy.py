"""Greedy decoding of an imported model folder by csi's CPython backend (onnxruntime)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from csi.backends.cpython import CPythonBackend
from tests.support.aio import run_async


def onnx_greedy(folder: Path, ids: list[int], steps: int) -> tuple[list[int], np.ndarray]:
    """A prefill, then one-token steps on the KV cache: the tokens and the logits each was chosen from."""
    backend = CPythonBackend(folder.parent)
    run_async(backend.load_model(folder.name, "cpu", None))
    logits = [backend.forward(folder.name, ids)]
    tokens = [int(np.argmax(logits[-1]))]
    for _ in range(steps - 1):
        logits.append(backend.forward(folder.name, [tokens[-1]]))
        tokens.append(int(np.argmax(logits[-1])))
    return tokens, np.array(logits)
