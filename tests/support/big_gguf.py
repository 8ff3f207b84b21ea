"""Random-weight GGUFs of real models' shapes (Qwen2.5 0.5B and 1.5B, architecture ``qwen2``), for
tests that need a file as big as the ones people load: its vocabulary, tensor shapes and the types
llama.cpp's quantizer picks for them are a real Qwen2.5 GGUF's, its weights are noise.

The file is written as ``convert_hf_to_gguf.py`` writes a Qwen2 model (F16 matrices, F32 norms and
biases, tied embeddings: no ``output.weight``) with gguf-py's ``GGUFWriter``, tensor by tensor in
chunks (the 1.5B F16 file is ~3 GB and never in memory), then quantized by llama.cpp's own quantizer
(llama-cpp-python's ``llama_model_quantize``, in the venv of ``buildtools.deps.llama_server``, as
``tests.support.gguf_files.quantize_tiny_chat_gguf`` does). Weights are seeded normal noise scaled
like a trained model's (std 0.02 for matrices, norms ~1), so activations and logits stay finite.

The tokenizer is a byte-level BPE (``gpt2``, pre-tokenizer ``qwen2``) of exactly the model's vocabulary
size: GPT-2's 256 byte characters, then tokens each made by a merge ``"a b"`` of two earlier tokens
(a token and a letter, digit or punctuation mark; about half are words with a leading ``Ġ``), with
those merges in rank order, then ``<|endoftext|>``, ``<|im_start|>`` and ``<|im_end|>`` (control
tokens, the last three ids; EOS ``<|im_end|>``) and Qwen2.5's chat template.

Files are cached in ``.cache/big-gguf/<shape>-<ftype>-<recipe>.gguf``, ``<recipe>`` a digest of this
module, gguf-py's and llama-cpp-python's versions: built once (locked against other processes, since
``.cache`` is shared between worktrees), written under a temporary name and renamed when complete;
older recipes' files of the same shape and type are removed.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tests.support.gguf_files import _QUANTIZE
from tests.support.paths import ROOT

CACHE_DIR = (ROOT / ".cache").resolve() / "big-gguf"
SEED = 20250101
WEIGHT_STD = 0.02
CHUNK_VALUES = 1 << 23  # random values generated (and written) at a time


@dataclass(frozen=True)
class Shape:
    """A Qwen2 model's hyperparameters (q/k/v biases and tied embeddings, as all of Qwen2.5's small ones)."""

    name: str
    vocab: int
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ff: int
    context: int = 32768
    rope_theta: float = 1_000_000.0
    rms_eps: float = 1e-6

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


SHAPES = {
    "0.5b": Shape("Qwen2.5 0.5B shape (random weights)", 151936, 24, 896, 14, 2, 4864),
    "1.5b": Shape("Qwen2.5 1.5B shape (random weights)", 151936, 28, 1536, 12, 2, 8960),
}
SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")  # the vocabulary's last ids
EOS = "<|im_end|>"

# Qwen2.5-Instruct's chat template (llama.cpp's models/templates/Qwen-Qwen2.5-7B-Instruct.jinja)
QWEN25_CHAT_TEMPLATE = (
    '{%- if tools %}\n'
    "    {{- '<|im_start|>system\\n' }}\n"
    "    {%- if messages[0]['role'] == 'system' %}\n"
    "        {{- messages[0]['content'] }}\n"
    '    {%- else %}\n'
    "        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}\n"
    '    {%- endif %}\n'
    '    {{- "\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou '
    'are provided with function signatures within <tools></tools> XML tags:\\n<tools>" }}\n'
    '    {%- for tool in tools %}\n'
    '        {{- "\\n" }}\n'
    '        {{- tool | tojson }}\n'
    '    {%- endfor %}\n'
    '    {{- "\\n</tools>\\n\\nFor each function call, return a json object with function name and '
    'arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\"name\\": <function-name>, '
    '\\"arguments\\": <args-json-object>}\\n</tool_call><|im_end|>\\n" }}\n'
    '{%- else %}\n'
    "    {%- if messages[0]['role'] == 'system' %}\n"
    "        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}\n"
    '    {%- else %}\n'
    "        {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
    "assistant.<|im_end|>\\n' }}\n"
    '    {%- endif %}\n'
    '{%- endif %}\n'
    '{%- for message in messages %}\n'
    '    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or '
    '(message.role == "assistant" and not message.tool_calls) %}\n'
    "        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}\n"
    '    {%- elif message.role == "assistant" %}\n'
    "        {{- '<|im_start|>' + message.role }}\n"
    '        {%- if message.content %}\n'
    "            {{- '\\n' + message.content }}\n"
    '        {%- endif %}\n'
    '        {%- for tool_call in message.tool_calls %}\n'
    '            {%- if tool_call.function is defined %}\n'
    '                {%- set tool_call = tool_call.function %}\n'
    '            {%- endif %}\n'
    '            {{- \'\\n<tool_call>\\n{"name": "\' }}\n'
    '            {{- tool_call.name }}\n'
    '            {{- \'", "arguments": \' }}\n'
    '            {{- tool_call.arguments | tojson }}\n'
    "            {{- '}\\n</tool_call>' }}\n"
    '        {%- endfor %}\n'
    "        {{- '<|im_end|>\\n' }}\n"
    '    {%- elif message.role == "tool" %}\n'
    '        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}\n'
    "            {{- '<|im_start|>user' }}\n"
    '        {%- endif %}\n'
    "        {{- '\\n<tool_response>\\n' }}\n"
    '        {{- message.content }}\n'
    "        {{- '\\n</tool_response>' }}\n"
    '        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}\n'
    "            {{- '<|im_end|>\\n' }}\n"
    '        {%- endif %}\n'
    '    {%- endif %}\n'
    '{%- endfor %}\n'
    '{%- if add_generation_prompt %}\n'
    "    {{- '<|im_start|>assistant\\n' }}\n"
    '{%- endif %}\n'
)


def big_gguf(shape: str, ftype: str = "Q4_K_M") -> Path:
    """A random-weight GGUF of a real model's shape (architecture qwen2), quantized by llama.cpp's own
    quantizer, cached in .cache/big-gguf/<shape>-<ftype>-<hash of this recipe>.gguf (built once;
    atomic: written to a temp name then renamed). ``ftype``: a ``LLAMA_FTYPE_MOSTLY_*`` name
    (``"Q4_K_M"``, ``"Q8_0"``, ``"F16"``, ...)."""
    from buildtools.deps.llama_server import ensure_server

    spec = SHAPES[shape]
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    out = CACHE_DIR / f"{shape}-{ftype}-{_recipe()}.gguf"
    if out.exists():
        return out
    with open(CACHE_DIR / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if out.exists():  # another process built it while this one waited
            return out
        python, _ = ensure_server()  # llama-cpp-python in a venv of its own (compiled once)
        start = time.monotonic()
        f16 = out.with_name(f".{shape}-F16-{os.getpid()}.gguf.tmp")
        tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
        try:
            write_f16_gguf(f16, spec)
            done = subprocess.run([str(python), "-c", _QUANTIZE, str(f16), str(tmp), ftype], capture_output=True,
                                  text=True, timeout=3600)
            assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
            os.replace(tmp, out)
        finally:
            f16.unlink(missing_ok=True)
            tmp.unlink(missing_ok=True)
        for old in CACHE_DIR.glob(f"{shape}-{ftype}-{'?' * 12}.gguf"):
            if old != out:
                old.unlink()
        print(f"big_gguf: {out.name}, {out.stat().st_size / 1e6:.0f} MB, built in {time.monotonic() - start:.0f} s")
    return out


def _recipe() -> str:
    from buildtools.deps.llama_server import VERSION

    digest = hashlib.sha256(Path(__file__).read_bytes())
    digest.update(f"\ngguf {importlib.metadata.version('gguf')}\nllama-cpp-python {VERSION}\n".encode())
    return digest.hexdigest()[:12]


def byte_chars() -> list[str]:
    """GPT-2's ``bytes_to_unicode`` characters, in its order (a byte-level BPE's first 256 ids)."""
    bs = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    cs = bs[:]
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + len(cs) - 188)  # the bytes not printable as themselves: U+0100, U+0101, ...
    return [chr(c) for c in cs]


def vocabulary(size: int) -> tuple[list[str], list[str]]:
    """``size`` tokens (the byte characters, merged tokens, then ``SPECIALS``) and the merges, in rank
    order, that make the merged tokens: merge ``i`` ``"a b"`` makes token ``256 + i`` from earlier ones."""
    chars = byte_chars()
    space = "Ġ"  # byte 0x20
    assert space in chars
    lower = "abcdefghijklmnopqrstuvwxyz"
    right = list(lower * 6 + lower.upper() + "0123456789" + ".,:;!?'\"()[]{}-_=+*/<>#@&%$")
    words = [c for c in right if c not in lower] + list(lower)  # roots of tokens without a leading space
    spaced = [space]  # roots of tokens with one
    tokens = list(chars)
    seen = set(tokens)
    merges: list[str] = []
    rng = np.random.default_rng(SEED)
    n_merged = size - len(chars) - len(SPECIALS)
    while len(merges) < n_merged:
        coin, left_at, right_at = rng.random((3, 1 << 16))
        for c, a, b in zip(coin.tolist(), left_at.tolist(), right_at.tolist(), strict=True):
            pool = spaced if c < 0.5 else words
            left, r = pool[int(a * a * len(pool))], right[int(b * len(right))]
            token = left + r
            if token in seen:
                continue
            seen.add(token)
            tokens.append(token)
            merges.append(f"{left} {r}")
            pool.append(token)
            if len(merges) == n_merged:
                break
    tokens += SPECIALS
    assert len(tokens) == size and len(set(tokens)) == size
    return tokens, merges


def tensor_specs(spec: Shape) -> list[tuple[str, tuple[int, ...]]]:
    """The GGUF's tensors as ``convert_hf_to_gguf.py`` names them, with their numpy shapes (rows = outputs)."""
    h, kv = spec.hidden, spec.kv_heads * spec.head_dim
    out: list[tuple[str, tuple[int, ...]]] = [("token_embd.weight", (spec.vocab, h))]
    for i in range(spec.layers):
        out += [(f"blk.{i}.{name}", dims) for name, dims in (
            ("attn_norm.weight", (h,)),
            ("attn_q.weight", (h, h)), ("attn_q.bias", (h,)),
            ("attn_k.weight", (kv, h)), ("attn_k.bias", (kv,)),
            ("attn_v.weight", (kv, h)), ("attn_v.bias", (kv,)),
            ("attn_output.weight", (h, h)),
            ("ffn_norm.weight", (h,)),
            ("ffn_gate.weight", (spec.ff, h)), ("ffn_up.weight", (spec.ff, h)), ("ffn_down.weight", (h, spec.ff)),
        )]
    out.append(("output_norm.weight", (h,)))
    return out


def _values(name: str, dims: tuple[int, ...], rng: np.random.Generator) -> Iterator[np.ndarray]:
    """A tensor's values in row chunks: matrices F16 ~ N(0, 0.02²); norms F32 ~ 1; biases F32 ~ N(0, 0.02²)."""
    if len(dims) == 1:
        noise = rng.standard_normal(dims, dtype=np.float32) * np.float32(WEIGHT_STD)
        yield noise + np.float32(1) if name.endswith("norm.weight") else noise
        return
    rows, cols = dims
    step = max(1, CHUNK_VALUES // cols)
    for start in range(0, rows, step):
        chunk = rng.standard_normal((min(step, rows - start), cols), dtype=np.float32)
        chunk *= np.float32(WEIGHT_STD)
        yield chunk.astype(np.float16)


def write_f16_gguf(path: Path, spec: Shape) -> None:
    """``spec`` as an F16 GGUF (1-D tensors F32), streamed: each tensor is generated and written in chunks."""
    from gguf import GGUFWriter, LlamaFileType, TokenType

    writer = GGUFWriter(str(path), "qwen2")
    writer.add_type("model")
    writer.add_name(spec.name)
    writer.add_block_count(spec.layers)
    writer.add_context_length(spec.context)
    writer.add_embedding_length(spec.hidden)
    writer.add_feed_forward_length(spec.ff)
    writer.add_head_count(spec.heads)
    writer.add_head_count_kv(spec.kv_heads)
    writer.add_rope_freq_base(spec.rope_theta)
    writer.add_layer_norm_rms_eps(spec.rms_eps)
    writer.add_file_type(LlamaFileType.MOSTLY_F16)

    tokens, merges = vocabulary(spec.vocab)
    ids = {t: i for i, t in enumerate(tokens[-len(SPECIALS):], start=len(tokens) - len(SPECIALS))}
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("qwen2")
    writer.add_token_list(tokens)
    writer.add_token_types([TokenType.NORMAL] * (len(tokens) - len(SPECIALS)) + [TokenType.CONTROL] * len(SPECIALS))
    writer.add_token_merges(merges)
    writer.add_bos_token_id(ids[SPECIALS[0]])  # as Qwen2.5's GGUFs: <|endoftext|>, not added
    writer.add_eos_token_id(ids[EOS])
    writer.add_pad_token_id(ids[SPECIALS[0]])
    writer.add_add_bos_token(False)
    writer.add_chat_template(QWEN25_CHAT_TEMPLATE)
    del tokens, merges

    specs = tensor_specs(spec)
    for name, dims in specs:
        dtype = np.dtype(np.float16 if len(dims) == 2 else np.float32)
        writer.add_tensor_info(name, dims, dtype, int(np.prod(dims)) * dtype.itemsize)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    assert writer.fout is not None and len(writer.fout) == 1
    fout = writer.fout[0]
    for i, (name, dims) in enumerate(specs):
        writer.write_padding(fout, fout.tell())  # each tensor's data starts aligned, as the offsets say
        nbytes = 0
        for chunk in _values(name, dims, np.random.default_rng([SEED, i])):
            chunk.tofile(fout)
            nbytes += chunk.nbytes
        writer.write_padding(fout, nbytes)
    writer.close()
