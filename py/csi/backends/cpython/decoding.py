"""The decoding role of the CPython backend: forward passes over the KV cache it keeps, and the
choice of each next token (the steps of ``csi.backends.cpython.sampling``)."""

from __future__ import annotations

import time

import numpy as np

from ...core.backend import SamplingParams, StepResult, reusable_prefix
from ...core.grammar import Grammar
from .grammars import Grammars
from .models import ModelTable, chat_feeds
from .mulberry32 import Mulberry32
from .sampling import BREAKDOWN_KEYS, StepState, run_steps


class CPythonDecoding(ModelTable):
    """``Generation`` over onnxruntime (CPU), sampling as worker/sampling/ does."""

    async def compile_grammar(self, model_id: str, grammar: Grammar) -> None:
        m = self._chat(model_id)
        if m.grammars is None:
            assert m.grammar_args is not None
            m.grammars = Grammars(*m.grammar_args)
        m.grammars.compiled(grammar)

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

    def forward(self, model_id: str, ids: list[int], rows: int = 1) -> np.ndarray:
        """Run ``ids`` after the cache; keep the new cache; return the logits of the last ``rows``
        positions (``[rows, vocab]``; one position: ``[vocab]``)."""
        m = self._chat(model_id)
        feeds = chat_feeds(m, ids, len(m.sequence))
        names = [o.name for o in m.session.get_outputs()]
        outputs = dict(zip(names, m.session.run(names, feeds), strict=True))
        m.past = {k.replace("present", "past_key_values"): v for k, v in outputs.items() if k.startswith("present")}
        m.sequence += ids
        logits = outputs["logits"][0, -rows:].astype(np.float32)
        return logits[0] if rows == 1 else logits

    def _choose(self, model_id: str, logits: np.ndarray, sequence: list[int], forward_s: float) -> StepResult:
        m = self._chat(model_id)
        t1 = time.perf_counter()
        state = StepState(m.sampling, logits, sequence, m.counts, m.rng, m.matcher, m.bitmask)
        seconds = run_steps(state)
        total = time.perf_counter() - t1
        assert state.result is not None
        penalty = seconds["penalize"] + seconds["bias"]  # WebLLM's penaltyTime covers the bias too
        for key, value in (("forwardTime", forward_s), ("logitProcessorTime", 0.0),
                           ("grammarBitmaskTime", state.grammar_s), ("penaltyTime", penalty), ("logitBiasTime", 0.0),
                           ("sampleTime", total - state.grammar_s - penalty), ("totalTime", total)):
            m.breakdown[key].append(value)
        return state.result

    async def step(self, model_id: str, ids: list[int]) -> StepResult:
        t0 = time.perf_counter()
        logits = self.forward(model_id, ids)
        return self._choose(model_id, logits, self._chat(model_id).sequence, time.perf_counter() - t0)

    async def verify(self, model_id: str, ids: list[int], drafts: list[int]) -> list[StepResult]:
        m = self._chat(model_id)
        base = len(m.sequence) + len(ids)
        t0 = time.perf_counter()
        rows = self.forward(model_id, ids + drafts, len(drafts) + 1)
        forward_s = (time.perf_counter() - t0) / (len(drafts) + 1)
        sequence = m.sequence
        out: list[StepResult] = []
        for i, logits in enumerate(rows):
            out.append(self._choose(model_id, logits, sequence[:base + i], forward_s))
            # a grammar's matcher accepts each choice as it is made: only the choices returned, so
            # nothing to take back; once it has ended, nothing follows
            if i == len(drafts) or out[-1].token != drafts[i] or (m.matcher is not None and m.matcher.is_terminated()):
                break
        keep = base + len(out) - 1
        if keep < len(m.sequence):
            m.past = {k: v[:, :, :keep] for k, v in m.past.items()}
            m.sequence = m.sequence[:keep]
        return out
