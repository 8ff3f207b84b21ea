"""Build a tiny, deterministic Llama-architecture chat model for offline use.

The model is trained from scratch on chat turns synthesised from the docstrings
of the Python standard library, so no network access is needed.  The output
folder holds a Hugging Face checkpoint (``config.json`` + ``model.safetensors``),
a byte-level BPE tokenizer with a ChatML chat template, and a single-file fp32
ONNX export (``onnx/model.onnx``) in the decoder-with-KV-cache layout that
transformers.js loads.  The ONNX graph is checked against PyTorch before the
folder is published (atomically, via a temporary sibling directory).

Usage: ``python -m buildtools.tiny_chat OUT_DIR``
"""

from __future__ import annotations

import contextlib
import heapq
import importlib
import inspect
import io
import json
import math
import os
import random
import re
import sys
import time
import warnings
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors
from torch import nn
from transformers import (
    AutoTokenizer,
    DynamicCache,
    GenerationConfig,
    LlamaConfig,
    LlamaForCausalLM,
)

from . import tiny_chat_tools
from .atomic_dir import replacing

CONTEXT_LENGTH = 1024
VOCAB_SIZE = 4096
SEED = 1234
NUM_THREADS = 2

SEQ_LEN = 512  # a tool-calling turn lists its tools in the system turn: a few hundred tokens
BATCH_SIZE = 4
TRAIN_STEPS = 700
WARMUP_STEPS = 30
PEAK_LR = 2e-3
MIN_LR_RATIO = 0.1
WEIGHT_DECAY = 0.1
GRAD_CLIP = 1.0
LOG_EVERY = 40

ONNX_OPSET = 17
MAX_LOGIT_DIFF = 1e-3

ENDOFTEXT = "<|endoftext|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
SPECIAL_TOKENS = (ENDOFTEXT, IM_START, IM_END)
PAD_ID, IM_START_ID, EOS_ID = 0, 1, 2

CHAT_TEMPLATE = tiny_chat_tools.CHAT_TEMPLATE
TOOL_CONVERSATIONS = 2400
JSON_CONVERSATIONS = 400

# Fixed, sorted list of standard-library modules mined for docstrings.  Modules
# with import-time side effects (antigravity, this, idlelib, tkinter, turtle),
# test packages and deprecated modules are deliberately absent.
# fmt: off
STDLIB_MODULES: tuple[str, ...] = (
    "abc", "argparse", "array", "ast", "asyncio", "base64", "bdb", "binascii",
    "bisect", "builtins", "bz2", "calendar", "cmath", "cmd", "code", "codecs",
    "codeop", "collections", "collections.abc", "colorsys", "compileall",
    "concurrent.futures", "configparser", "contextlib", "contextvars", "copy",
    "copyreg", "csv", "ctypes", "dataclasses", "datetime", "dbm", "decimal",
    "difflib", "dis", "doctest", "email", "email.message", "email.utils", "enum",
    "errno", "faulthandler", "filecmp", "fileinput", "fnmatch", "fractions",
    "ftplib", "functools", "gc", "getopt", "getpass", "gettext", "glob",
    "graphlib", "gzip", "hashlib", "heapq", "hmac", "html", "html.parser",
    "http", "http.client", "http.cookies", "http.server", "imaplib", "importlib",
    "importlib.metadata", "importlib.resources", "inspect", "io", "ipaddress",
    "itertools", "json", "keyword", "linecache", "locale", "logging",
    "logging.handlers", "lzma", "mailbox", "marshal", "math", "mimetypes",
    "mmap", "modulefinder", "multiprocessing", "netrc", "numbers", "opcode",
    "operator", "optparse", "os", "os.path", "pathlib", "pdb", "pickle",
    "pickletools", "pkgutil", "platform", "plistlib", "poplib", "pprint",
    "profile", "pstats", "py_compile", "pyclbr", "pydoc", "queue", "quopri",
    "random", "re", "reprlib", "runpy", "sched", "secrets", "select",
    "selectors", "shelve", "shlex", "shutil", "signal", "smtplib", "socket",
    "socketserver", "sqlite3", "ssl", "stat", "statistics", "string", "struct",
    "subprocess", "symtable", "sys", "sysconfig", "tabnanny", "tarfile",
    "tempfile", "textwrap", "threading", "time", "timeit", "token", "tokenize",
    "tomllib", "trace", "traceback", "tracemalloc", "types", "typing",
    "unicodedata", "unittest", "unittest.mock", "urllib.error", "urllib.parse",
    "urllib.request", "uuid", "warnings", "wave", "weakref", "webbrowser",
    "wsgiref.util", "xml.dom.minidom", "xml.etree.ElementTree", "xml.sax",
    "xmlrpc.client", "zipapp", "zipfile", "zipimport", "zlib", "zoneinfo",
)
# fmt: on

MAX_ANSWER_CHARS = 400
MIN_ANSWER_CHARS = 25
MAX_METHODS_PER_CLASS = 12

SYSTEM_PROMPTS = (
    "You are a helpful assistant.",
    "You are a helpful assistant that answers questions about the Python standard library.",
    "You are a concise Python expert.",
)

FUNCTION_QUESTIONS = (
    "What does `{q}` do?",
    "What does {q} do?",
    "Explain {q}.",
    "How do I use `{q}`?",
    "What is {q} used for?",
    "Can you describe the {q} function?",
    "Tell me about {q}.",
    "What is `{q}` in Python?",
    "Describe {q} briefly.",
    "What is the purpose of {q}?",
)
CLASS_QUESTIONS = (
    "What is the `{q}` class?",
    "Explain the {q} class.",
    "What is {q} used for?",
    "Tell me about {q}.",
    "What does `{q}` represent?",
    "What does {q} do?",
    "Can you describe the {q} class?",
)
METHOD_QUESTIONS = (
    "What does the `{m}` method of `{c}` do?",
    "What does `{q}` do?",
    "Explain {q}.",
    "What is {q} used for?",
    "How does the {m} method of {c} work?",
    "What does {q} do?",
)
MODULE_QUESTIONS = (
    "Tell me about the {q} module.",
    "What is the `{q}` module for?",
    "What does the {q} module do?",
    "Explain Python's {q} module.",
    "What can I do with `{q}`?",
    "What is {q} in the standard library?",
)

SMALL_TALK: tuple[tuple[str, str], ...] = (
    ("Hello!", "Hello! How can I help you today?"),
    ("Hi", "Hi there! Ask me about a Python module or function."),
    ("Hey, how are you?", "I am doing well, thank you. What would you like to know about Python?"),
    (
        "Who are you?",
        "I am a tiny language model trained on the documentation of the Python standard library.",
    ),
    (
        "What can you do?",
        "I can answer short questions about the modules, functions and classes of the Python standard library.",
    ),
    ("Thanks!", "You are welcome! Let me know if you have another question."),
    ("Thank you for the help.", "Glad I could help."),
    ("Goodbye", "Goodbye! Happy coding."),
    (
        "Are you a large language model?",
        "No, I am a very small model, so my answers can be wrong. Please check the official documentation.",
    ),
    (
        "What is Python?",
        "Python is a high-level, general-purpose programming language. Its standard library provides "
        "modules for text processing, files, networking, data formats and much more.",
    ),
    (
        "What is the standard library?",
        "The standard library is the collection of modules that ships with Python, "
        "such as os, json, re, math and datetime.",
    ),
    ("Can you help me with Python?", "Of course. Ask me what a module, function or class does."),
)


SAMPLE_QUESTIONS = (
    "What does json.dumps do?",
    "Tell me about the textwrap module.",
    "Explain os.path.join.",
)


@dataclass(frozen=True)
class DocItem:
    """One documented object: its kind, dotted name and cleaned answer text."""

    kind: str  # "module" | "function" | "class" | "method"
    module: str
    qualname: str
    answer: str
    signature: str | None = None


Message = dict[str, str]
Conversation = list[Message]


# --------------------------------------------------------------------------- corpus


def _stable_index(key: str, n: int) -> int:
    """Deterministic (hash-seed independent) choice of an index in ``range(n)``."""
    return zlib.crc32(key.encode("utf-8")) % n


_SIGNATURE_LINE = re.compile(r"^[A-Za-z_][\w.]*\(.*\)(\s*->.*)?$")
_NON_PROSE = re.compile(r"^(>>>|\.\.\.|[-*+] |:|\d+[.)] |[A-Z][a-z]+( [A-Za-z]+)?:$)")
_GENERIC_DOC_PREFIXES = (
    "Return self",
    "Initialize self",
    "Implement ",
    "Create and return a new object",
    "Helper for pickle",
    "See help(",
    "Return repr(self)",
    "Return str(self)",
    "Return hash(self)",
    "Return state information",
    "Default object formatter",
)


def _is_prose(paragraph: str) -> bool:
    lines = paragraph.splitlines()
    if any(line.startswith((" ", "\t")) for line in lines):
        return False
    if any(_NON_PROSE.match(line.strip()) for line in lines):
        return False
    return not any(marker in paragraph for marker in ("---", "===", ">>>"))


def _summarize(doc: str | None) -> str | None:
    """Return the leading prose paragraph(s) of a docstring, reflowed and truncated."""
    if not doc or not isinstance(doc, str):
        return None
    text = inspect.cleandoc(doc)
    lines = text.splitlines()
    while lines and _SIGNATURE_LINE.match(lines[0].strip()):
        lines = lines[1:]
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", "\n".join(lines)) if p.strip()]
    chosen: list[str] = []
    for paragraph in paragraphs:
        if not _is_prose(paragraph):
            break
        flat = " ".join(line.strip() for line in paragraph.splitlines()).replace("``", "`")
        flat = re.sub(r" {2,}", " ", flat)
        if flat.endswith("::"):  # introduces a literal block that is not kept
            if chosen:
                break
            flat = flat[:-2].rstrip() + "."
        if chosen and len(" ".join(chosen)) + len(flat) + 1 > MAX_ANSWER_CHARS:
            break
        chosen.append(flat)
        if len(chosen) == 2:
            break
    if chosen and chosen[-1].endswith(":"):  # announces a list or example that is not kept
        if len(chosen) > 1:
            chosen.pop()
        else:
            chosen[-1] = chosen[-1][:-1].rstrip() + "."
    if not chosen:
        return None
    answer = "\n\n".join(chosen)
    if len(answer) > MAX_ANSWER_CHARS:
        cut = answer.rfind(". ", 0, MAX_ANSWER_CHARS)
        if cut < MIN_ANSWER_CHARS:
            return None
        answer = answer[: cut + 1]
    if len(answer) < MIN_ANSWER_CHARS or answer.startswith(_GENERIC_DOC_PREFIXES):
        return None
    return answer


def _signature(obj: object) -> str | None:
    try:
        sig = str(inspect.signature(obj))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    # Reprs of default values may embed memory addresses, which would break determinism.
    return sig if len(sig) <= 80 and "<" not in sig else None


def _import_quietly(name: str) -> object | None:
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            return importlib.import_module(name)
    except Exception:  # noqa: BLE001 - any import failure just skips the module
        return None


def _public_members(module: object, name: str) -> list[tuple[str, object]]:
    exported = getattr(module, "__all__", None)
    if exported is not None:
        names = sorted({n for n in exported if isinstance(n, str) and not n.startswith("_")})
    else:
        names = sorted(n for n in vars(module) if not n.startswith("_"))
    members = []
    for attr in names:
        obj = getattr(module, attr, None)
        if not (inspect.isroutine(obj) or inspect.isclass(obj)):
            continue
        if exported is None and getattr(obj, "__module__", None) != name:
            continue
        members.append((attr, obj))
    return members


def collect_doc_items() -> list[DocItem]:
    """Mine ``STDLIB_MODULES`` for modules, functions, classes and methods with docstrings."""
    items: list[DocItem] = []
    seen: set[int] = set()

    def add(kind: str, module: str, qualname: str, obj: object, doc: str | None) -> None:
        if id(obj) in seen and kind != "module":
            return
        seen.add(id(obj))
        answer = _summarize(doc)
        if answer is not None:
            sig = _signature(obj) if kind in ("function", "method") else None
            items.append(DocItem(kind, module, qualname, answer, sig))

    for name in sorted(STDLIB_MODULES):
        module = _import_quietly(name)
        if module is None:
            continue
        prefix = "" if name == "builtins" else name + "."
        if name != "builtins":
            add("module", name, name, module, module.__doc__)
        for attr, obj in _public_members(module, name):
            if inspect.isclass(obj):
                add("class", name, prefix + attr, obj, obj.__doc__)
                methods = 0
                for meth_name in sorted(vars(obj)):
                    if meth_name.startswith("_") or methods >= MAX_METHODS_PER_CLASS:
                        continue
                    raw = vars(obj)[meth_name]
                    if isinstance(raw, (staticmethod, classmethod)):
                        raw = raw.__func__
                    if inspect.isroutine(raw):
                        before = len(items)
                        add("method", name, f"{prefix}{attr}.{meth_name}", raw, raw.__doc__)
                        methods += len(items) - before
            else:
                add("function", name, prefix + attr, obj, obj.__doc__)
    return items


def _question(item: DocItem, variant: int) -> str:
    if item.kind == "module":
        templates = MODULE_QUESTIONS
    elif item.kind == "class":
        templates = CLASS_QUESTIONS
    elif item.kind == "method":
        templates = METHOD_QUESTIONS
    else:
        templates = FUNCTION_QUESTIONS
    template = templates[(_stable_index(item.qualname, len(templates)) + variant) % len(templates)]
    owner, _, member = item.qualname.rpartition(".")
    return template.format(q=item.qualname, m=member, c=owner)


def _answer(item: DocItem, variant: int) -> str:
    """The docstring summary, on odd variants led by the name so the model learns to restate it."""
    if variant % 2 == 0:
        return item.answer
    if item.signature is not None:
        return f"`{item.qualname}{item.signature}`\n\n{item.answer}"
    if item.kind == "module":
        return f"The `{item.qualname}` module: {item.answer}"
    if item.kind == "class":
        return f"`{item.qualname}` is a class. {item.answer}"
    return f"`{item.qualname}`: {item.answer}"


def _maybe_system(conversation: Conversation, rng: random.Random) -> Conversation:
    if rng.random() < 0.25:
        return [{"role": "system", "content": rng.choice(SYSTEM_PROMPTS)}, *conversation]
    return conversation


def build_conversations(items: Sequence[DocItem], seed: int = SEED) -> list[Conversation]:
    """Turn doc items into single- and multi-turn ChatML conversations (deterministic)."""
    rng = random.Random(seed)
    conversations: list[Conversation] = []
    for item in items:
        for variant in (0, 3):
            turn = [
                {"role": "user", "content": _question(item, variant)},
                {"role": "assistant", "content": _answer(item, variant)},
            ]
            conversations.append(_maybe_system(turn, rng))

    by_module: dict[str, list[DocItem]] = {}
    for item in items:
        by_module.setdefault(item.module, []).append(item)
    for module in sorted(by_module):
        group = [it for it in by_module[module] if len(it.answer) <= 300]
        for start in range(0, len(group) - 1, 3):
            turns: Conversation = []
            for item in group[start : start + 3]:
                turns.append({"role": "user", "content": _question(item, 1)})
                turns.append({"role": "assistant", "content": _answer(item, 1)})
            conversations.append(_maybe_system(turns, rng))

    for repeat in range(6):
        for question, reply in SMALL_TALK:
            turn = [{"role": "user", "content": question}, {"role": "assistant", "content": reply}]
            conversations.append(_maybe_system(turn, random.Random(f"{seed}-{repeat}-{question}")))
    conversations += tiny_chat_tools.tool_conversations(seed, TOOL_CONVERSATIONS)
    conversations += tiny_chat_tools.json_conversations(items, seed, JSON_CONVERSATIONS)
    rng.shuffle(conversations)
    return conversations


def render_chat(messages: Sequence[Message], add_generation_prompt: bool = False) -> str:
    """Python equivalent of ``CHAT_TEMPLATE``."""
    text = "".join(f"{IM_START}{m['role']}\n{m['content']}{IM_END}\n" for m in messages)
    return text + (f"{IM_START}assistant\n" if add_generation_prompt else "")


# ------------------------------------------------------------------------ tokenizer


def _learn_bpe_merges(word_counts: dict[str, int], num_merges: int, min_frequency: int) -> list[tuple[str, str]]:
    """Classic BPE merge learning with a fully deterministic tie-break.

    The ``tokenizers`` trainer breaks count ties by internal ids that depend on
    hash-map order, so two runs on the same corpus can differ.  Here the most
    frequent pair wins and ties go to the lexicographically smallest pair.
    """
    words = [list(word) for word in sorted(word_counts)]
    freqs = [word_counts[word] for word in sorted(word_counts)]
    pair_counts: dict[tuple[str, str], int] = {}
    where: dict[tuple[str, str], set[int]] = {}
    for index, (symbols, freq) in enumerate(zip(words, freqs, strict=True)):
        for pair in pairwise(symbols):
            pair_counts[pair] = pair_counts.get(pair, 0) + freq
            where.setdefault(pair, set()).add(index)
    heap = [(-count, pair) for pair, count in pair_counts.items()]
    heapq.heapify(heap)
    merges: list[tuple[str, str]] = []
    while heap and len(merges) < num_merges:
        neg_count, pair = heapq.heappop(heap)
        if pair_counts.get(pair, 0) != -neg_count:
            continue  # stale entry; the current count was pushed separately
        if -neg_count < min_frequency:
            break
        merges.append(pair)
        merged = pair[0] + pair[1]
        touched: set[tuple[str, str]] = set()
        for index in sorted(where.pop(pair, ())):
            old = words[index]
            new: list[str] = []
            i = 0
            while i < len(old):
                if i + 1 < len(old) and old[i] == pair[0] and old[i + 1] == pair[1]:
                    new.append(merged)
                    i += 2
                else:
                    new.append(old[i])
                    i += 1
            if len(new) == len(old):
                continue
            freq = freqs[index]
            for p in pairwise(old):
                pair_counts[p] -= freq
                touched.add(p)
            for p in pairwise(new):
                pair_counts[p] = pair_counts.get(p, 0) + freq
                where.setdefault(p, set()).add(index)
                touched.add(p)
            words[index] = new
        for p in sorted(touched):
            count = pair_counts.get(p, 0)
            if count > 0:
                heapq.heappush(heap, (-count, p))
            else:
                pair_counts.pop(p, None)
    return merges


def train_tokenizer(conversations: Sequence[Conversation]) -> Tokenizer:
    """Train a byte-level BPE tokenizer (ids 0-2 are the special tokens), deterministically."""
    pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    word_counts: dict[str, int] = {}
    for conversation in conversations:
        for message in conversation:
            for text in (message["role"], "\n", message["content"]):
                for piece, _ in pre_tokenizer.pre_tokenize_str(text):
                    word_counts[piece] = word_counts.get(piece, 0) + 1
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {token: i for i, token in enumerate([*SPECIAL_TOKENS, *alphabet])}
    merges = _learn_bpe_merges(word_counts, VOCAB_SIZE - len(vocab), min_frequency=2)
    for left, right in merges:
        vocab[left + right] = len(vocab)

    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tokenizer.pre_tokenizer = pre_tokenizer
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS])
    for token_id, token in enumerate(SPECIAL_TOKENS):
        if tokenizer.token_to_id(token) != token_id:
            raise RuntimeError(f"special token {token!r} did not get id {token_id}")
    if tokenizer.get_vocab_size() != VOCAB_SIZE:
        raise RuntimeError(f"tokenizer vocab size {tokenizer.get_vocab_size()} != {VOCAB_SIZE}")
    return tokenizer


def write_tokenizer_files(tokenizer: Tokenizer, folder: Path) -> None:
    """Write ``tokenizer.json``, ``tokenizer_config.json`` and ``special_tokens_map.json``."""
    tokenizer.save(str(folder / "tokenizer.json"))
    added = {
        str(i): {
            "content": token,
            "lstrip": False,
            "normalized": False,
            "rstrip": False,
            "single_word": False,
            "special": True,
        }
        for i, token in enumerate(SPECIAL_TOKENS)
    }
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": None,
        "eos_token": IM_END,
        "pad_token": ENDOFTEXT,
        "unk_token": None,
        "add_bos_token": False,
        "add_eos_token": False,
        "model_max_length": CONTEXT_LENGTH,
        "clean_up_tokenization_spaces": False,
        "added_tokens_decoder": added,
        "chat_template": CHAT_TEMPLATE,
    }
    special_map = {
        "eos_token": IM_END,
        "pad_token": ENDOFTEXT,
        "additional_special_tokens": [IM_START, IM_END],
    }
    _write_json(folder / "tokenizer_config.json", config)
    _write_json(folder / "special_tokens_map.json", special_map)


def _write_json(path: Path, data: object) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def encode_conversation(tokenizer: Tokenizer, messages: Sequence[Message]) -> tuple[list[int], list[int]]:
    """Token ids of the rendered chat plus a 0/1 loss mask (assistant content + ``<|im_end|>``)."""
    newline = tokenizer.encode("\n").ids
    ids: list[int] = []
    mask: list[int] = []
    for message in messages:
        header = [IM_START_ID, *tokenizer.encode(message["role"]).ids, *newline]
        body = [*tokenizer.encode(message["content"]).ids, EOS_ID]
        learn = 1 if message["role"] == "assistant" else 0
        ids += header + body + newline
        mask += [0] * len(header) + [learn] * len(body) + [0] * len(newline)
    return ids, mask


def pack_rows(
    tokenizer: Tokenizer, conversations: Sequence[Conversation], row_len: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Greedily pack whole conversations into rows of ``row_len`` tokens, padding the rest."""
    rows: list[list[int]] = []
    masks: list[list[int]] = []
    cur_ids: list[int] = []
    cur_mask: list[int] = []
    for conversation in conversations:
        ids, mask = encode_conversation(tokenizer, conversation)
        if len(ids) > row_len:
            continue
        if len(cur_ids) + len(ids) > row_len:
            rows.append(cur_ids + [PAD_ID] * (row_len - len(cur_ids)))
            masks.append(cur_mask + [0] * (row_len - len(cur_mask)))
            cur_ids, cur_mask = [], []
        cur_ids += ids
        cur_mask += mask
    if cur_ids:
        rows.append(cur_ids + [PAD_ID] * (row_len - len(cur_ids)))
        masks.append(cur_mask + [0] * (row_len - len(cur_mask)))
    return torch.tensor(rows, dtype=torch.long), torch.tensor(masks, dtype=torch.bool)


# ---------------------------------------------------------------------------- model


def model_config() -> LlamaConfig:
    """The fixed architecture of the tiny chat model."""
    return LlamaConfig(
        vocab_size=VOCAB_SIZE,
        hidden_size=256,
        intermediate_size=688,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=64,
        max_position_embeddings=CONTEXT_LENGTH,
        rope_theta=10000.0,
        tie_word_embeddings=False,
        bos_token_id=None,
        eos_token_id=EOS_ID,
        pad_token_id=PAD_ID,
    )


def _lr_at(step: int) -> float:
    if step < WARMUP_STEPS:
        return PEAK_LR * (step + 1) / WARMUP_STEPS
    progress = (step - WARMUP_STEPS) / max(1, TRAIN_STEPS - WARMUP_STEPS)
    cosine = 0.5 * (1.0 + math.cos(math.pi * progress))
    return PEAK_LR * (MIN_LR_RATIO + (1.0 - MIN_LR_RATIO) * cosine)


def train_model(rows: torch.Tensor, masks: torch.Tensor) -> tuple[LlamaForCausalLM, list[float]]:
    """Train from scratch for ``TRAIN_STEPS`` steps; returns the model and per-step losses."""
    torch.manual_seed(SEED)
    model = LlamaForCausalLM._from_config(model_config(), attn_implementation="sdpa")
    model.train()
    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": WEIGHT_DECAY}, {"params": no_decay, "weight_decay": 0.0}],
        lr=PEAK_LR,
        betas=(0.9, 0.95),
        eps=1e-8,
    )
    generator = torch.Generator().manual_seed(SEED)
    order = torch.randperm(len(rows), generator=generator)
    cursor = 0
    losses: list[float] = []
    start = time.monotonic()
    for step in range(TRAIN_STEPS):
        if cursor + BATCH_SIZE > len(order):
            order = torch.randperm(len(rows), generator=generator)
            cursor = 0
        batch = order[cursor : cursor + BATCH_SIZE]
        cursor += BATCH_SIZE
        ids, mask = rows[batch], masks[batch]
        inputs, targets = ids[:, :-1], ids[:, 1:].masked_fill(~mask[:, 1:], -100)
        for group in optimizer.param_groups:
            group["lr"] = _lr_at(step)
        logits = model(input_ids=inputs).logits
        loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB_SIZE), targets.reshape(-1), ignore_index=-100)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), GRAD_CLIP)
        optimizer.step()
        losses.append(loss.item())
        if (step + 1) % LOG_EVERY == 0 or step == 0 or step + 1 == TRAIN_STEPS:
            window = losses[-LOG_EVERY:]
            print(
                f"  step {step + 1:4d}/{TRAIN_STEPS}  loss {sum(window) / len(window):.3f}"
                f"  lr {_lr_at(step):.2e}  {time.monotonic() - start:6.1f}s",
                flush=True,
            )
    model.eval()
    return model, losses


# ----------------------------------------------------------------------------- onnx


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


def _additive_causal_mask(input_ids: torch.Tensor, attention_mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """4-D additive mask [batch, 1, seq, past+seq] built only from tensor ops (trace-safe).

    Query ``i`` sits at absolute index ``past + i`` and may attend to key ``j`` iff
    ``j <= past + i`` and ``attention_mask[:, j]`` is set.
    """
    q_ones = torch.ones_like(input_ids)
    kv_ones = torch.ones_like(attention_mask)
    past = kv_ones.sum(-1, keepdim=True) - q_ones.sum(-1, keepdim=True)
    q_index = q_ones.cumsum(-1) - 1 + past
    kv_index = kv_ones.cumsum(-1) - 1
    allowed = (kv_index[:, None, :] <= q_index[:, :, None]) & (attention_mask[:, None, :] > 0)
    zero = torch.zeros((), dtype=dtype)
    blocked = torch.full((), torch.finfo(dtype).min, dtype=dtype)
    return torch.where(allowed, zero, blocked)[:, None, :, :]


class OnnxDecoder(nn.Module):
    """Flat-tensor wrapper around ``LlamaForCausalLM`` for the legacy ONNX exporter."""

    def __init__(self, model: LlamaForCausalLM) -> None:
        super().__init__()
        self.model = model

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        position_ids: torch.Tensor,
        *past: torch.Tensor,
    ) -> tuple[torch.Tensor, ...]:
        cache = DynamicCache(config=self.model.config)
        for layer in range(len(past) // 2):
            cache.update(past[2 * layer], past[2 * layer + 1], layer)
        mask = _additive_causal_mask(input_ids, attention_mask, self.model.dtype)
        out = self.model(
            input_ids=input_ids,
            attention_mask=mask,
            position_ids=position_ids,
            past_key_values=cache,
            use_cache=True,
        )
        presents: list[torch.Tensor] = []
        for layer in out.past_key_values.layers:
            presents += [layer.keys, layer.values]
        return (out.logits, *presents)


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


# ---------------------------------------------------------------------- verification


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


# ---------------------------------------------------------------------------- build


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
