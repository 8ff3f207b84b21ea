"""A random-weight GGUF of Qwen2.5-0.5B's shape (``tests/support/big_gguf.py``): built once by gguf-py's
writer and llama.cpp's own quantizer (then cached), shaped as the real Q4_K_M file, and read and run
by llama.cpp itself."""

from __future__ import annotations

import json
import subprocess
from collections import Counter

from tests.support.big_gguf import EOS, SHAPES, SPECIALS, big_gguf

PROMPT = "<|im_start|>user\nHello, world! 12345<|im_end|>\n<|im_start|>assistant\n"
LLAMA_CPP_RUN = """
import json, sys
import numpy as np
import llama_cpp
llm = llama_cpp.Llama(model_path=sys.argv[1], n_ctx=64, n_batch=64, logits_all=True, verbose=False, n_threads=1)
ids = llm.tokenize(sys.argv[2].encode(), add_bos=False, special=True)
llm.eval(ids)
scores = np.asarray(llm.scores[:len(ids)], np.float32)
print(json.dumps({"ids": ids, "n_vocab": llm.n_vocab(), "eos": llm.token_eos(), "shape": list(scores.shape),
                  "finite": bool(np.isfinite(scores).all()), "max_abs": float(np.abs(scores).max()),
                  "text": llm.detokenize(ids, special=True).decode()}))
"""


def test_the_0_5b_file_is_shaped_like_qwen2_5_q4_k_m_and_llama_cpp_runs_it() -> None:
    from gguf import GGUFReader

    from buildtools.deps.llama_server import ensure_server

    shape = SHAPES["0.5b"]
    path = big_gguf("0.5b")
    assert 300e6 < path.stat().st_size < 600e6
    reader = GGUFReader(str(path))
    meta = {k: f.contents() for k, f in reader.fields.items() if k not in ("tokenizer.ggml.tokens",
                                                                          "tokenizer.ggml.token_type",
                                                                          "tokenizer.ggml.merges")}
    assert meta["general.architecture"] == "qwen2"
    assert meta["qwen2.block_count"] == shape.layers == 24
    assert meta["tokenizer.ggml.model"] == "gpt2" and meta["tokenizer.ggml.pre"] == "qwen2"
    assert len(reader.fields["tokenizer.ggml.tokens"].data) == shape.vocab == 151936
    assert len({int(t.name.split(".")[1]) for t in reader.tensors if t.name.startswith("blk.")}) == 24
    embd = next(t for t in reader.tensors if t.name == "token_embd.weight")
    assert [int(n) for n in embd.shape] == [shape.hidden, shape.vocab]  # ggml order: columns first
    assert "output.weight" not in {t.name for t in reader.tensors}  # tied embeddings
    types = Counter(t.tensor_type.name for t in reader.tensors)
    print(f"{path.name}: {path.stat().st_size / 1e6:.0f} MB, tensor types {dict(types)}")
    assert types["Q4_K"] and types["Q6_K"]

    python, _ = ensure_server()
    out = subprocess.run([str(python), "-c", LLAMA_CPP_RUN, str(path), PROMPT], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    first = shape.vocab - len(SPECIALS)
    assert got["n_vocab"] == shape.vocab
    assert got["eos"] == first + SPECIALS.index(EOS)
    assert got["ids"][0] == first + 1 and got["ids"].count(first + 2) == 1  # <|im_start|>, <|im_end|>
    assert got["text"] == PROMPT
    assert got["shape"] == [len(got["ids"]), shape.vocab]
    assert got["finite"] and 0.01 < got["max_abs"] < 100
