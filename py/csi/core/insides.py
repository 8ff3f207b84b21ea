"""What a model's insides are made of, and where to find them in its ONNX graph.

RemoteLLM's ``GenerationalGuts`` asks for each prompt token's input embedding, positional
embedding and last hidden state, and for the next-token candidates. A decoder export has only
``logits`` and the KV cache as outputs; the tensors wanted are inside the graph. ``find_tensors``
names them from a summary of the graph (both backends list it from the model file), and the
backends run a second session of the same model with those tensors as extra outputs.

Positions: learned absolute ones (GPT-2 family) are the rows of the position embedding matrix,
read from the graph like the token embeddings. Rotary models have no such vector; for them the
positional embedding is the rotary table of that position, ``cos(p * f_i)`` for each frequency
``f_i`` of the model's RoPE, then ``sin(p * f_i)`` (``rotary_dim`` values, the ``cos``/``sin`` halves
HF's rotary embedding computes), from the frequencies ``rotary_inv_freq`` derives from the config.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import ModelNotSupportedError

LEARNED_POSITIONS = frozenset({"gpt2", "gpt_neo", "gpt_bigcode"})
"""Model types whose positions are a learned embedding matrix added to the token embeddings."""

LM_HEAD_OPS = frozenset({"MatMul", "Gemm", "MatMulNBits", "FusedMatMul", "DynamicQuantizeLinear"})
"""Ops whose first input is the hidden state the LM head projects (``DynamicQuantizeLinear``:
the quantizer in front of an 8-bit ``MatMulInteger`` head)."""

INDEX_PASSTHROUGH = frozenset({"Cast", "Reshape", "Unsqueeze", "Squeeze", "Identity", "Flatten"})
EMBEDDING_OPS = frozenset({"Gather", "GatherBlockQuantized"})


@dataclass(frozen=True)
class GraphSummary:
    """The main graph of an ONNX model: inputs, outputs, nodes as (op_type, inputs, outputs), and
    the shape of each initializer."""

    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    nodes: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...]
    initializers: dict[str, tuple[int, ...]] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> GraphSummary:
        return cls(tuple(data["inputs"]), tuple(data["outputs"]),
                   tuple((str(op), tuple(ins), tuple(outs)) for op, ins, outs in data["nodes"]),
                   {k: tuple(v) for k, v in data["initializers"].items()})


@dataclass(frozen=True)
class InsidesTensors:
    """Graph tensors to read: the final-norm hidden states, the token embeddings and, for learned
    positions, the position embeddings (each ``[1, tokens, hidden]``)."""

    hidden: str
    token_embedding: str
    positional: str | None = None
    logits: str = "logits"

    def extra_outputs(self) -> list[str]:
        return [n for n in (self.hidden, self.token_embedding, self.positional) if n is not None]


@dataclass(frozen=True)
class InsidesPlan:
    """One insides request as a backend runs it."""

    tensors: InsidesTensors
    rotary_inv_freq: tuple[float, ...] | None
    """The RoPE frequencies when the positional embedding is the rotary table, else ``None``."""
    fft: bool
    keep: int
    """Values kept of each vector, after the FFT if any (0: all)."""
    top_k: int

    def to_json(self) -> dict[str, Any]:
        return {"hidden": self.tensors.hidden, "token_embedding": self.tensors.token_embedding,
                "positional": self.tensors.positional, "logits": self.tensors.logits,
                "rotary_inv_freq": self.rotary_inv_freq, "fft": self.fft, "keep": self.keep, "top_k": self.top_k}


@dataclass
class InsidesArrays:
    """What a backend returns: three ``tokens x width`` matrices (rows as lists) and the top-k
    next tokens as (id, logit, probability), most likely first."""

    token_embedding: list[list[float]]
    positional_embedding: list[list[float]]
    hidden_state: list[list[float]]
    top: list[tuple[int, float, float]]


PositionKind = Literal["learned", "rotary"]


def position_kind(config: dict[str, Any]) -> PositionKind:
    """How the model encodes positions; refuse models that do it another way."""
    model_type = str(config.get("model_type", ""))
    if model_type in LEARNED_POSITIONS:
        return "learned"
    if _rope_parameters(config) is not None:
        return "rotary"
    raise ModelNotSupportedError(
        f"model type {model_type!r} has neither learned position embeddings ({', '.join(sorted(LEARNED_POSITIONS))})"
        " nor rotary ones (rope_theta in its config): insides cannot show its positions", "model")


def _rope_parameters(config: dict[str, Any]) -> dict[str, Any] | None:
    params = config.get("rope_parameters")
    if isinstance(params, dict) and "rope_theta" in params:
        return {**params, "rope_type": params.get("rope_type", "default")}
    if "rope_theta" in config or "rotary_emb_base" in config:
        scaling = config.get("rope_scaling") or {}
        return {**scaling, "rope_theta": config.get("rope_theta", config.get("rotary_emb_base")),
                "rope_type": scaling.get("rope_type", scaling.get("type", "default"))}
    return None


def rotary_inv_freq(config: dict[str, Any]) -> tuple[float, ...]:
    """The RoPE frequencies ``f_i`` of a model, as HF's default, linear and llama3 rope types make them."""
    params = _rope_parameters(config)
    if params is None:
        raise ModelNotSupportedError("the model's config has no rope_theta", "model")
    theta = float(params["rope_theta"])
    head_dim = int(config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"])
    factor = float(params.get("partial_rotary_factor", config.get("partial_rotary_factor", 1.0)))
    dim = int(head_dim * factor)
    inv = [1.0 / theta ** (i / dim) for i in range(0, dim, 2)]
    kind = params["rope_type"]
    if kind in ("default", "dynamic"):  # dynamic NTK changes nothing within the context window
        return tuple(inv)
    if kind == "linear":
        return tuple(f / float(params["factor"]) for f in inv)
    if kind == "llama3":
        return tuple(_llama3(f, params) for f in inv)
    raise ModelNotSupportedError(f"rope type {kind!r} is not supported by the insides view (default, linear,"
                                 " llama3 are)", "model")


def _llama3(freq: float, p: dict[str, Any]) -> float:
    factor, low, high = float(p["factor"]), float(p["low_freq_factor"]), float(p["high_freq_factor"])
    old = float(p["original_max_position_embeddings"])
    wavelen = 2 * math.pi / freq
    if wavelen > old / low:
        return freq / factor
    if wavelen < old / high:
        return freq
    smooth = (old / wavelen - low) / (high - low)
    return (1 - smooth) * freq / factor + smooth * freq


def find_tensors(graph: GraphSummary, config: dict[str, Any]) -> InsidesTensors:
    """Name the tensors insides reads in a decoder's graph, or say exactly what is missing."""
    producer = {out: (op, ins) for op, ins, outs in graph.nodes for out in outs}
    if "logits" not in graph.outputs:
        raise ModelNotSupportedError("the model's ONNX graph has no `logits` output", "model")
    hidden = _lm_head_input(producer)
    if hidden is None:
        op = producer.get("logits", ("none", ()))[0]
        raise ModelNotSupportedError(
            f"no LM head found in the ONNX graph: `logits` comes from a {op} node, not from a MatMul, Gemm "
            "or MatMulNBits fed by the final norm", "model")
    token = _embedding_output(graph, producer, "input_ids")
    if token is None:
        raise ModelNotSupportedError("no embedding lookup (Gather) of `input_ids` found in the ONNX graph", "model")
    positional = None
    if position_kind(config) == "learned":
        positional = _embedding_output(graph, producer, "position_ids") or _position_table(graph, config, token)
        if positional is None:
            raise ModelNotSupportedError(
                "no position embedding lookup (a Gather of `position_ids`, or of a "
                "[max positions x hidden] table) found in the ONNX graph", "model")
    return InsidesTensors(hidden=hidden, token_embedding=token, positional=positional)


def _lm_head_input(producer: dict[str, tuple[str, tuple[str, ...]]]) -> str | None:
    """The first input of the nearest LM-head op above ``logits`` (breadth first, a few hops)."""
    queue: deque[tuple[str, int]] = deque([("logits", 0)])
    seen = {"logits"}
    while queue:
        name, depth = queue.popleft()
        node = producer.get(name)
        if node is None or depth > 6:
            continue
        op, ins = node
        if op in LM_HEAD_OPS and ins:
            return ins[0]
        for x in ins:
            if x and x not in seen:
                seen.add(x)
                queue.append((x, depth + 1))
    return None


def _traces_to(name: str, source: str, producer: dict[str, tuple[str, tuple[str, ...]]]) -> bool:
    for _ in range(8):
        if name == source:
            return True
        node = producer.get(name)
        if node is None or node[0] not in INDEX_PASSTHROUGH or not node[1]:
            return False
        name = node[1][0]
    return False


def _embedding_output(graph: GraphSummary, producer: dict[str, tuple[str, tuple[str, ...]]],
                      indices: str) -> str | None:
    """The output of the embedding lookup whose indices come from the graph input ``indices``."""
    if indices not in graph.inputs:
        return None
    for op, ins, outs in graph.nodes:
        if op in EMBEDDING_OPS and len(ins) >= 2 and outs and _traces_to(ins[1], indices, producer):
            return _dequantized(graph, outs[0])
    return None


def _dequantized(graph: GraphSummary, name: str) -> str:
    """``name``, or the output of the ``DequantizeLinear`` it feeds (an 8-bit embedding table is
    looked up quantized, then dequantized)."""
    for op, ins, outs in graph.nodes:
        if op == "DequantizeLinear" and ins and ins[0] == name and outs:
            return outs[0]
    return name


def _position_table(graph: GraphSummary, config: dict[str, Any], token: str) -> str | None:
    """A lookup in a ``[max positions, hidden]`` initializer other than the token embedding."""
    positions = config.get("n_positions", config.get("max_position_embeddings"))
    width = config.get("n_embd", config.get("hidden_size"))
    for op, ins, outs in graph.nodes:
        if op == "Gather" and outs and outs[0] != token and graph.initializers.get(ins[0]) == (positions, width):
            return _dequantized(graph, outs[0])
    return None
