"""A second onnxruntime session of a chat model whose graph also outputs the tensors the insides
view reads (``csi.core.insides.find_tensors``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort

from ...core.insides import GraphSummary, InsidesArrays, InsidesTensors, find_tensors, rotary_inv_freq
from .logits import token_logprobs


@dataclass
class InsidesSession:
    """The session with the extra outputs, and how to read positions from it."""

    session: ort.InferenceSession
    tensors: InsidesTensors
    inv_freq: np.ndarray | None
    """float32 RoPE frequencies when the positional embedding is the rotary table."""

    @classmethod
    def create(cls, folder: Path, config: dict[str, Any]) -> InsidesSession:
        """The model in ``folder`` with the extra outputs added to its graph."""
        import onnx  # only when insides are asked for

        model = onnx.load(str(folder / "onnx" / "model.onnx"))
        g = model.graph
        summary = GraphSummary(tuple(i.name for i in g.input), tuple(o.name for o in g.output),
                               tuple((n.op_type, tuple(n.input), tuple(n.output)) for n in g.node),
                               {i.name: tuple(i.dims) for i in g.initializer})
        tensors = find_tensors(summary, config)
        g.output.extend(onnx.ValueInfoProto(name=name) for name in tensors.extra_outputs())
        options = ort.SessionOptions()
        options.log_severity_level = 3
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        inv = None if tensors.positional else np.asarray(rotary_inv_freq(config), dtype=np.float32)
        return cls(session, tensors, inv)

    def run(self, feeds: dict[str, np.ndarray], fft: bool, keep: int, top_k: int) -> InsidesArrays:
        """The token, position and hidden vectors of every input token and the top-k next tokens."""
        t = self.tensors
        names = [t.logits, t.hidden, t.token_embedding] + ([t.positional] if t.positional else [])
        logits, hidden, token, *positional = (x[0] for x in self.session.run(names, feeds))
        if self.inv_freq is not None:
            angles = feeds["position_ids"][0].astype(np.float32)[:, None] * self.inv_freq[None, :]
            positions = np.concatenate([np.cos(angles.astype(np.float64)), np.sin(angles.astype(np.float64))], axis=1)
        else:
            positions = positional[0]

        def shown(v: np.ndarray) -> list[list[float]]:
            if fft:
                v = np.fft.fft(v.astype(np.float64), axis=1).real
            return np.asarray(v[:, :keep] if keep else v, dtype=np.float32).tolist()

        last = logits[-1]
        _, top = token_logprobs(last, 0, top_k)
        return InsidesArrays(shown(token), shown(positions), shown(hidden),
                          [(i, float(last[i]), math.exp(lp)) for i, lp in top])
