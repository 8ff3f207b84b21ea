"""Finding the insides tensors in decoder graphs of the shapes exports take (pure logic)."""

from __future__ import annotations

import pytest

from csi.core.insides import GraphSummary, find_tensors, position_kind
from csi.errors import ModelNotSupportedError

LLAMA = {"model_type": "llama", "rope_theta": 10000.0, "hidden_size": 64, "num_attention_heads": 4}
GPT2 = {"model_type": "gpt2", "n_positions": 128, "n_embd": 64}


def graph(nodes, inputs=("input_ids", "attention_mask", "position_ids"), initializers=None):
    return GraphSummary(tuple(inputs), ("logits", "present.0.key"),
                        tuple((op, tuple(i), tuple(o)) for op, i, o in nodes), initializers or {})


EMBED = ("Gather", ["embed.weight", "input_ids"], ["emb"])


def test_fp32_export_reads_the_lm_head_input_and_the_embedding_lookup():
    g = graph([EMBED, ("SimplifiedLayerNormalization", ["h", "w"], ["normed"]),
               ("MatMul", ["normed", "lm.weight"], ["logits"])])
    t = find_tensors(g, LLAMA)
    assert (t.hidden, t.token_embedding, t.positional) == ("normed", "emb", None)


def test_4bit_head_and_a_cast_of_the_ids():
    g = graph([("Cast", ["input_ids"], ["ids32"]), ("GatherBlockQuantized", ["q", "ids32", "s"], ["emb"]),
               ("MatMulNBits", ["normed", "qw", "sc"], ["logits"])])
    t = find_tensors(g, LLAMA)
    assert (t.hidden, t.token_embedding) == ("normed", "emb")


def test_8bit_dynamic_quantized_head_walks_back_to_the_quantizer_input():
    g = graph([EMBED, ("DynamicQuantizeLinear", ["normed"], ["q", "qs", "qz"]),
               ("MatMulInteger", ["q", "w", "qz", "wz"], ["acc"]), ("Cast", ["acc"], ["accf"]),
               ("Mul", ["qs", "ws"], ["scale"]), ("Mul", ["accf", "scale"], ["logits"])])
    assert find_tensors(g, LLAMA).hidden == "normed"


def test_learned_positions_by_position_ids_or_by_table_shape():
    by_input = graph([EMBED, ("Gather", ["wpe", "position_ids"], ["pos"]), ("MatMul", ["n", "w"], ["logits"])])
    assert find_tensors(by_input, GPT2).positional == "pos"
    by_shape = graph([EMBED, ("Range", ["a", "b", "c"], ["r"]), ("Gather", ["wpe", "r"], ["pos"]),
                      ("MatMul", ["n", "w"], ["logits"])], inputs=("input_ids", "attention_mask"),
                     initializers={"wpe": (128, 64), "embed.weight": (500, 64)})
    assert find_tensors(by_shape, GPT2).positional == "pos"


@pytest.mark.parametrize(("nodes", "config", "missing"), [
    ([EMBED, ("MatMul", ["n", "w"], ["logits"])], {"model_type": "bloom"}, "neither learned"),
    ([EMBED, ("Softmax", ["x"], ["logits"])], LLAMA, "no LM head"),
    ([("MatMul", ["n", "w"], ["logits"])], LLAMA, "no embedding lookup"),
    ([EMBED, ("MatMul", ["n", "w"], ["logits"])], GPT2, "no position embedding"),
])
def test_what_is_missing_is_said(nodes, config, missing):
    with pytest.raises(ModelNotSupportedError, match=missing) as info:
        find_tensors(graph(nodes), config)
    assert info.value.param == "model"


def test_a_graph_without_logits_is_refused():
    g = GraphSummary(("input_ids",), ("last_hidden_state",), (), {})
    with pytest.raises(ModelNotSupportedError, match="no `logits` output"):
        find_tensors(g, LLAMA)


def test_position_kind_reads_old_and_new_config_shapes():
    assert position_kind({"model_type": "qwen2", "rope_theta": 1e6}) == "rotary"
    assert position_kind({"model_type": "llama", "rope_parameters": {"rope_theta": 1e4}}) == "rotary"
    assert position_kind({"model_type": "gpt_neo"}) == "learned"


def test_an_8bit_embedding_table_is_read_after_its_dequantizer():
    g = graph([("Gather", ["embed.q", "input_ids"], ["emb_q"]), ("DequantizeLinear", ["emb_q", "s", "z"], ["emb"]),
               ("MatMul", ["n", "w"], ["logits"])])
    assert find_tensors(g, LLAMA).token_embedding == "emb"
