"""The Backend for CPython: onnxruntime + tokenizers on the same model folders the site serves.

Lets the core (and skills) run and be tested without a browser. It mirrors worker/bridge.js and
worker/sampling.js: same inputs to the ONNX graph, same sampling algorithm and generator.
This module needs numpy and onnxruntime; the browser wheel leaves it out.
"""

from __future__ import annotations

import math
import os
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from json import dumps, loads
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
from jinja2.sandbox import ImmutableSandboxedEnvironment
from tokenizers import Tokenizer

from ..core.backend import Embeddings, ModelInfo, ProgressFn, SamplingParams, StepResult, reusable_prefix
from ..core.grammar import Grammar, GrammarError, compact_json_formats, vocab_type
from ..core.guts import GraphSummary, GutsArrays, GutsTensors, find_tensors, rotary_inv_freq
from ..core.request import MIN_LOGPROB
from ..core.token_bytes import TokenBytes, build_token_bytes
from ..errors import ModelLoadError

CAUSAL_SUFFIXES = ("ForCausalLM", "LMHeadModel")
F32_MAX = float(np.finfo(np.float32).max)


class Mulberry32:
    """The seedable generator of worker/sampling.js, bit for bit."""

    def __init__(self, seed: int | None) -> None:
        if seed is None:
            seed = int.from_bytes(os.urandom(4), "little")
        hi = math.floor(seed / 4294967296)
        self.state = (_to_int32(seed) ^ _to_int32(hi)) & 0xFFFFFFFF

    def next(self) -> float:
        self.state = (self.state + 0x6D2B79F5) & 0xFFFFFFFF
        t = self.state
        t = _imul(t ^ (t >> 15), t | 1)
        t ^= (t + _imul(t ^ (t >> 7), t | 61)) & 0xFFFFFFFF
        return ((t ^ (t >> 14)) & 0xFFFFFFFF) / 4294967296


def _to_int32(x: int) -> int:
    return x & 0xFFFFFFFF


def _imul(a: int, b: int) -> int:
    return (a * b) & 0xFFFFFFFF


def candidates(logits: np.ndarray, p: SamplingParams) -> tuple[np.ndarray, np.ndarray]:
    """Token ids kept by temperature/top-k/top-p, most likely first, and their probabilities."""
    z = logits.astype(np.float64)
    w = np.exp((z - z.max()) * (1.0 / p.temperature))
    order = np.lexsort((np.arange(len(w)), -w))  # by weight desc, then id asc
    order = order[w[order] > 0]  # never a token a grammar ruled out (or too unlikely to weigh)
    k = p.top_k if 0 < p.top_k < len(order) else len(order)
    ids = order[:k]
    kept = w[ids]
    if p.top_p < 1:
        cum = np.cumsum(kept)
        keep = int(np.searchsorted(cum, p.top_p * cum[-1], side="left")) + 1
        ids, kept = ids[:keep], kept[:keep]
    return ids, kept / kept.sum()


def process_logits(logits: np.ndarray, p: SamplingParams, sequence: list[int], counts: dict[int, int]) -> np.ndarray:
    """Penalties and bias, as worker/sampling.js ``processLogits`` (float32, like its copy)."""
    if p.repetition_penalty == 1 and not p.frequency_penalty and not p.presence_penalty and not p.logit_bias:
        return logits
    out = logits.astype(np.float32).copy()
    if p.repetition_penalty != 1:
        window = sequence[-p.repetition_window:] if p.repetition_window > 0 else sequence
        seen = np.fromiter(sorted(set(window)), dtype=np.int64)
        seen = seen[seen < len(out)]
        vals = out[seen]
        with np.errstate(over="ignore"):  # saturated, as processLogits does
            rep = np.float32(p.repetition_penalty)
            penalized = np.where(vals > 0, vals / rep, vals * rep)
        out[seen] = np.clip(penalized, -F32_MAX, F32_MAX)
    for token, n in counts.items():
        if token < len(out):
            out[token] = np.float32(float(out[token]) - (n * p.frequency_penalty + (p.presence_penalty if n else 0.0)))
    for token, bias in p.logit_bias:
        if 0 <= token < len(out):
            out[token] = np.float32(float(out[token]) + bias)
    return out


def floor_logprob(value: float) -> float:
    """A log-probability as sent: finite, at least ``MIN_LOGPROB`` (NaN and -inf become it)."""
    return value if math.isfinite(value) and value > MIN_LOGPROB else MIN_LOGPROB


def token_logprobs(logits: np.ndarray, token: int, k: int) -> tuple[float, tuple[tuple[int, float], ...]]:
    """Log-probability of ``token`` and the ``k`` most likely tokens, floored as worker/sampling.js
    ``logprobs`` does (tokens a grammar ruled out, at -inf, are never among them)."""
    z = logits.astype(np.float64)
    with np.errstate(invalid="ignore"):  # logits all -inf, or +inf: NaN, floored below
        lse = z.max() + np.log(np.exp(z - z.max()).sum())
        top: np.ndarray | list[int] = np.lexsort((np.arange(len(z)), -z))[:k] if k else []
        return floor_logprob(float(z[token] - lse)), tuple((int(i), floor_logprob(float(z[i] - lse)))
                                                           for i in top if z[i] > -np.inf)


def sample(logits: np.ndarray, p: SamplingParams, rng: Mulberry32) -> int:
    if not p.temperature > 0:
        return int(np.argmax(logits))
    ids, probs = candidates(logits, p)
    u = rng.next()
    acc = 0.0
    for token, prob in zip(ids, probs, strict=True):
        acc += float(prob)
        if u < acc:
            return int(token)
    return int(ids[-1])


BREAKDOWN_KEYS = ("forwardTime", "logitProcessorTime", "grammarBitmaskTime", "penaltyTime", "logitBiasTime",
                  "sampleTime", "totalTime")


@dataclass
class _Chat:
    tokenizer: Tokenizer
    session: ort.InferenceSession
    template: Any
    chat_template: str | None
    special: dict[str, str]
    kv_heads: int
    head_dim: int
    cache_inputs: list[str]
    uses_position_ids: bool
    token_bytes: TokenBytes | None
    past: dict[str, np.ndarray] = field(default_factory=dict)
    sequence: list[int] = field(default_factory=list)
    sampling: SamplingParams = field(default_factory=SamplingParams)
    rng: Mulberry32 = field(default_factory=lambda: Mulberry32(0))
    counts: dict[int, int] = field(default_factory=dict)
    grammars: _Grammars | None = None
    grammar_args: tuple[Path, int, list[int]] | None = None
    matcher: Any = None
    bitmask: Any = None
    """The matcher's token bitmask, filled anew each step (allocated once per request)."""
    folder: Path = Path()
    config: dict[str, Any] = field(default_factory=dict)
    guts: _GutsSession | None = None
    breakdown: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in BREAKDOWN_KEYS})


@dataclass
class _GutsSession:
    """A second session of a chat model whose graph also outputs the tensors guts reads."""

    session: ort.InferenceSession
    tensors: GutsTensors
    inv_freq: np.ndarray | None
    """float32 RoPE frequencies when the positional embedding is the rotary table."""

    @classmethod
    def create(cls, folder: Path, config: dict[str, Any]) -> _GutsSession:
        import onnx  # only when guts are asked for

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

    def run(self, feeds: dict[str, np.ndarray], fft: bool, keep: int, top_k: int) -> GutsArrays:
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
        return GutsArrays(shown(token), shown(positions), shown(hidden),
                          [(i, float(last[i]), math.exp(lp)) for i, lp in top])


GRAMMAR_CACHE_SIZE = 64


class _Grammars:
    """xgrammar for one model: its vocabulary, compiler and the compiled grammars (LRU)."""

    def __init__(self, folder: Path, vocab_size: int, stop_ids: list[int]) -> None:
        import xgrammar as xgr  # only when a grammar is asked for

        self.xgr = xgr
        spec = loads((folder / "tokenizer.json").read_text())
        vocab = _vocab_list(spec)
        kind, prepend = vocab_type(spec.get("decoder"))
        info = xgr.TokenizerInfo(vocab, xgr.VocabType[kind.upper()], vocab_size=max(vocab_size, len(vocab)),
                                 stop_token_ids=stop_ids, add_prefix_space=prepend)
        self.vocab_size = info.vocab_size
        self.compiler = xgr.GrammarCompiler(info, max_threads=1)
        self.cache: OrderedDict[tuple[str, str], Any] = OrderedDict()

    def json_ebnf(self, schema: Any) -> str:
        """A JSON Schema as compact EBNF (the form ``compile_json_schema`` is given)."""
        return str(self.xgr.Grammar.from_json_schema(dumps(schema), any_whitespace=False, separators=(", ", ": "),
                                                     strict_mode=True))

    def compiled(self, grammar: Grammar) -> Any:
        key = (grammar.kind, grammar.source)
        if key in self.cache:
            self.cache.move_to_end(key)
            return self.cache[key]
        try:
            if grammar.kind == "json_schema":
                out = self.compiler.compile_json_schema(grammar.source, any_whitespace=False,
                                                       separators=(", ", ": "), strict_mode=True)
            elif grammar.kind == "ebnf":
                out = self.compiler.compile_grammar(grammar.source)
            else:
                tag = compact_json_formats(loads(grammar.source), self.json_ebnf)
                out = self.compiler.compile_structural_tag(dumps(tag))
        except (RuntimeError, ValueError, TypeError) as exc:
            raise GrammarError(str(exc)) from None
        self.cache[key] = out
        if len(self.cache) > GRAMMAR_CACHE_SIZE:
            self.cache.popitem(last=False)
        return out


def apply_bitmask(logits: np.ndarray, bitmask: np.ndarray) -> np.ndarray:
    """``logits`` with every token the packed ``bitmask`` rejects (and every id past it) at -inf."""
    allowed = np.unpackbits(bitmask.view(np.uint8), bitorder="little").astype(bool)
    out = np.full(len(logits), -np.inf, dtype=np.float32)
    n = min(len(logits), len(allowed))
    out[:n] = np.where(allowed[:n], logits[:n], np.float32(-np.inf))
    return out


@dataclass
class _Embedder:
    tokenizer: Tokenizer
    session: ort.InferenceSession


class CPythonBackend:
    """``Backend`` over onnxruntime (CPU) and HF tokenizers, reading ``models_dir/<id>/``."""

    def __init__(self, models_dir: str | Path) -> None:
        self.models_dir = Path(models_dir)
        self._models: dict[str, _Chat | _Embedder] = {}
        self._counters: dict[str, Tokenizer] = {}

    async def load_model(self, model_id: str, device: str, progress: ProgressFn | None,
                         hub: str | None = None) -> ModelInfo:
        """Load from the models folder (this backend never downloads: ``hub`` has no effect)."""
        folder = self.models_dir / model_id
        if not (folder / "config.json").exists():
            raise ModelLoadError(f"could not load model {model_id!r}: it is not in the models folder "
                                 f"(known: {', '.join(self.builtin_models()) or 'none'})", "model")
        try:
            config = loads((folder / "config.json").read_text())
            tok_config = loads((folder / "tokenizer_config.json").read_text())
            tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
            options = ort.SessionOptions()
            options.log_severity_level = 3
            session = ort.InferenceSession(str(folder / "onnx" / "model.onnx"), options,
                                           providers=["CPUExecutionProvider"])
        except Exception as exc:  # noqa: BLE001 - a broken folder; the message names files, not paths
            detail = str(exc)
            for prefix in (str(self.models_dir.resolve()), str(self.models_dir)):
                detail = detail.replace(prefix, "<models>")
            raise ModelLoadError(f"could not load model {model_id!r}: {type(exc).__name__}: {detail}",
                                 "model") from None
        if progress:
            progress({"stage": "ready", "file": None, "loaded": 1, "total": 1, "model": model_id})
        if any(a.endswith(CAUSAL_SUFFIXES) for a in config.get("architectures", [])):
            env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
            env.filters["tojson"] = _tojson
            special = {k: v for k, v in tok_config.items() if k.endswith("_token") and isinstance(v, str)}
            names = [i.name for i in session.get_inputs()]
            heads = config.get("num_attention_heads", config.get("n_head"))
            width = config.get("hidden_size", config.get("n_embd"))
            chat = _Chat(
                tokenizer=tokenizer, session=session,
                template=env.from_string(tok_config.get("chat_template") or ""), special=special,
                kv_heads=config.get("num_key_value_heads", heads), head_dim=config.get("head_dim") or width // heads,
                cache_inputs=[n for n in names if n.startswith("past_key_values.")],
                uses_position_ids="position_ids" in names,
                token_bytes=_token_bytes(folder / "tokenizer.json"),
                chat_template=tok_config.get("chat_template"),
                folder=folder, config=config,
            )
            self._models[model_id] = chat
            gen_path = folder / "generation_config.json"
            gen = loads(gen_path.read_text()) if gen_path.exists() else {}
            eos = [gen.get("eos_token_id"), config.get("eos_token_id")]
            eos_ids = sorted({e for x in eos for e in (x if isinstance(x, list) else [x]) if isinstance(e, int)})
            chat.grammar_args = (folder, int(config.get("vocab_size", 0)), eos_ids)
            context = config.get("max_position_embeddings", config.get("n_positions", 2048))
            return ModelInfo(model_id, "chat", int(context),
                             tuple(eos_ids), int(config.get("vocab_size", 0)))
        max_len = int(tok_config.get("model_max_length", 512))
        tokenizer.enable_truncation(min(max_len, 100_000))
        tokenizer.enable_padding(pad_id=tokenizer.token_to_id(tok_config.get("pad_token", "[PAD]")) or 0)
        self._models[model_id] = _Embedder(tokenizer=tokenizer, session=session)
        return ModelInfo(model_id, "embedding", max_len, (), int(config.get("vocab_size", 0)))

    def cancel_loads(self) -> None:
        pass  # loads read local files: nothing to stop

    async def unload_model(self, model_id: str) -> None:
        self._models.pop(model_id, None)

    def builtin_models(self) -> tuple[str, ...]:
        if not self.models_dir.is_dir():
            return ()
        return tuple(sorted(p.name for p in self.models_dir.iterdir() if (p / "tokenizer.json").exists()))

    async def load_tokenizer(self, model_id: str) -> None:
        if model_id not in self._counters:
            path = self.models_dir / model_id / "tokenizer.json"
            if not path.exists():
                raise ModelLoadError(f"no tokenizer for {model_id!r} in the models folder", "model")
            tokenizer = Tokenizer.from_file(str(path))
            tokenizer.no_truncation()
            tokenizer.no_padding()
            self._counters[model_id] = tokenizer

    def count_tokens(self, model_id: str, texts: list[str]) -> list[int]:
        return [len(e.ids) for e in self._counters[model_id].encode_batch(texts, add_special_tokens=False)]

    def _chat(self, model_id: str) -> _Chat:
        m = self._models[model_id]
        assert isinstance(m, _Chat), f"{model_id} is not a chat model"
        return m

    def chat_template(self, model_id: str) -> str | None:
        return self._chat(model_id).chat_template

    def apply_chat_template(self, model_id: str, messages: list[dict[str, Any]],
                            tools: list[dict[str, Any]] | None = None,
                            variables: dict[str, Any] | None = None) -> list[int]:
        m = self._chat(model_id)
        text = m.template.render(**{**(variables or {}), **m.special, "messages": messages, "tools": tools,
                                    "add_generation_prompt": True})
        return m.tokenizer.encode(text, add_special_tokens=False).ids

    async def compile_grammar(self, model_id: str, grammar: Grammar) -> None:
        m = self._chat(model_id)
        if m.grammars is None:
            assert m.grammar_args is not None
            m.grammars = _Grammars(*m.grammar_args)
        m.grammars.compiled(grammar)

    def encode(self, model_id: str, text: str, add_special_tokens: bool = False) -> list[int]:
        return self._chat(model_id).tokenizer.encode(text, add_special_tokens=add_special_tokens).ids

    def decode(self, model_id: str, ids: list[int]) -> str:
        return self._chat(model_id).tokenizer.decode(ids, skip_special_tokens=True)

    def token_bytes(self, model_id: str) -> TokenBytes | None:
        return self._chat(model_id).token_bytes

    def reuse_prefix(self, model_id: str, ids: list[int]) -> int:
        m = self._chat(model_id)
        n = reusable_prefix(m.sequence, ids)
        if n < len(m.sequence):
            m.past = {k: v[:, :, :n] for k, v in m.past.items()} if n else {}
            m.sequence = m.sequence[:n]
        return n

    def set_sampling(self, model_id: str, params: SamplingParams) -> None:
        m = self._chat(model_id)
        m.sampling, m.rng, m.counts, m.matcher = params, Mulberry32(params.seed), {}, None
        m.breakdown = {k: [] for k in BREAKDOWN_KEYS}
        if params.grammar is not None:
            assert m.grammars is not None, "compile_grammar comes first"
            m.matcher = m.grammars.xgr.GrammarMatcher(m.grammars.compiled(params.grammar))
            m.bitmask = m.grammars.xgr.allocate_token_bitmask(1, m.grammars.vocab_size)

    def latency_breakdown(self, model_id: str) -> dict[str, list[float]]:
        return {k: list(v) for k, v in self._chat(model_id).breakdown.items()}

    def next_choice(self, model_id: str) -> None:
        m = self._chat(model_id)
        m.counts = {}
        if m.matcher is not None:
            m.matcher.reset()

    def _feeds(self, m: _Chat, ids: list[int], start: int) -> dict[str, np.ndarray]:
        n = len(ids)
        feeds: dict[str, np.ndarray] = {
            "input_ids": np.asarray([ids], dtype=np.int64),
            "attention_mask": np.ones((1, start + n), dtype=np.int64),
            "position_ids": np.arange(start, start + n, dtype=np.int64)[None, :],
        }
        if not m.uses_position_ids:
            del feeds["position_ids"]
        for name in m.cache_inputs:
            feeds[name] = (m.past if start else {}).get(name, np.zeros((1, m.kv_heads, 0, m.head_dim), np.float32))
        return feeds

    def forward(self, model_id: str, ids: list[int]) -> np.ndarray:
        """Run ``ids`` after the cache; keep the new cache; return the last position's logits."""
        m = self._chat(model_id)
        feeds = self._feeds(m, ids, len(m.sequence))
        names = [o.name for o in m.session.get_outputs()]
        outputs = dict(zip(names, m.session.run(names, feeds), strict=True))
        m.past = {k.replace("present", "past_key_values"): v for k, v in outputs.items() if k.startswith("present")}
        m.sequence += ids
        return outputs["logits"][0, -1].astype(np.float32)

    async def step(self, model_id: str, ids: list[int]) -> StepResult:
        m = self._chat(model_id)
        p = m.sampling
        t0 = time.perf_counter()
        logits = self.forward(model_id, ids)
        t1 = time.perf_counter()
        grammar_s = 0.0
        if m.matcher is not None:
            started = time.perf_counter()
            m.matcher.fill_next_token_bitmask(m.bitmask)
            words = m.bitmask.numpy()[0]
            if not words.any():
                raise GrammarError("the grammar allows no token here: it accepts no text")
            logits = apply_bitmask(logits, words)
            grammar_s = time.perf_counter() - started
        t2 = time.perf_counter()
        processed = process_logits(logits, p, m.sequence, m.counts)
        t3 = time.perf_counter()
        token = sample(processed, p, m.rng)
        m.counts[token] = m.counts.get(token, 0) + 1
        if m.matcher is not None:
            started = time.perf_counter()
            if not m.matcher.accept_token(token):
                raise RuntimeError(f"the grammar rejected token {token} it allowed")
            grammar_s += time.perf_counter() - started
        result = (StepResult(token, *token_logprobs(processed, token, p.top_logprobs), grammar_s) if p.logprobs
                  else StepResult(token, grammar_s=grammar_s))
        t4 = time.perf_counter()
        for key, seconds in (("forwardTime", t1 - t0), ("logitProcessorTime", 0.0), ("grammarBitmaskTime", grammar_s),
                             ("penaltyTime", t3 - t2), ("logitBiasTime", 0.0),
                             ("sampleTime", t4 - t1 - grammar_s - (t3 - t2)), ("totalTime", t4 - t1)):
            m.breakdown[key].append(seconds)
        return result

    async def guts(self, model_id: str, ids: list[int], *, fft: bool, keep: int, top_k: int) -> GutsArrays:
        m = self._chat(model_id)
        if m.guts is None:
            m.guts = _GutsSession.create(m.folder, m.config)
        feeds = self._feeds(m, ids, 0)
        feeds.setdefault("position_ids", np.arange(len(ids), dtype=np.int64)[None, :])
        feeds = {k: v for k, v in feeds.items() if k in {i.name for i in m.guts.session.get_inputs()}}
        return m.guts.run(feeds, fft, keep, top_k)

    async def embed(self, model_id: str, texts: list[str]) -> Embeddings:
        m = self._models[model_id]
        assert isinstance(m, _Embedder), f"{model_id} is not an embedding model"
        enc = m.tokenizer.encode_batch(texts)
        return self._pooled(m, np.asarray([e.ids for e in enc], dtype=np.int64),
                            np.asarray([e.attention_mask for e in enc], dtype=np.int64))

    async def embed_ids(self, model_id: str, ids: list[list[int]]) -> Embeddings:
        m = self._models[model_id]
        assert isinstance(m, _Embedder), f"{model_id} is not an embedding model"
        width = max(len(r) for r in ids)
        batch = np.zeros((len(ids), width), dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for i, row in enumerate(ids):
            batch[i, :len(row)], mask[i, :len(row)] = row, 1
        return self._pooled(m, batch, mask)

    @staticmethod
    def _pooled(m: _Embedder, ids: Any, mask: Any) -> Embeddings:
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in {i.name for i in m.session.get_inputs()}:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = m.session.run(None, feeds)[0]
        summed = (hidden * mask[..., None]).sum(axis=1)
        pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1)
        normed = pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return Embeddings(vectors=normed.tolist(), prompt_tokens=int(mask.sum()), dims=normed.shape[1])


def _tojson(value: Any, indent: int | None = None, separators: tuple[str, str] | None = None,
            sort_keys: bool = False, ensure_ascii: bool = False) -> str:
    """Jinja's ``tojson`` as chat templates expect it (Hugging Face's and @huggingface/jinja's:
    ``json.dumps``, no HTML escaping), not Jinja's own HTML-safe one."""
    return dumps(value, indent=indent, separators=separators, sort_keys=sort_keys, ensure_ascii=ensure_ascii)


def _model_vocab(spec: dict[str, Any]) -> list[str | None]:
    """The tokenizer.json model's token strings by id (``None`` for holes), added tokens left out."""
    vocab_spec = spec["model"]["vocab"]
    if isinstance(vocab_spec, dict):
        vocab: list[str | None] = [None] * (max(vocab_spec.values(), default=-1) + 1)
        for token, i in vocab_spec.items():
            vocab[i] = token
        return vocab
    return [piece for piece, _score in vocab_spec]


def _vocab_list(spec: dict[str, Any]) -> list[str]:
    """Every token string of a tokenizer.json by id, added tokens included ("" for holes)."""
    vocab = [t or "" for t in _model_vocab(spec)]
    for t in spec.get("added_tokens", []):
        if t["id"] >= len(vocab):
            vocab += [""] * (t["id"] + 1 - len(vocab))
        vocab[t["id"]] = t["content"]
    return vocab


def _token_bytes(path: Path) -> TokenBytes | None:
    spec = loads(path.read_text())
    added = [(t["id"], t["content"], bool(t.get("special"))) for t in spec.get("added_tokens", [])]
    return build_token_bytes(spec.get("decoder"), _model_vocab(spec), added)
