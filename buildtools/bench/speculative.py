"""Speculative decoding on the real model (WASM): decode tokens/s with drafts from the context and
without (``extra_body.speculative: false``), interleaved rounds, on three tasks that copy from their
prompt (a quote from a retrieved passage, a summary of a given text, an edit of a given code file) and
on free chat where drafts miss; greedy, so both runs must give the same reply (checked)."""

from __future__ import annotations

import statistics
from typing import Any

from .decode import TIMED_STREAM

PASSAGE = (
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France. It is named after "
    "the engineer Gustave Eiffel, whose company designed and built the tower from 1887 to 1889. Locally nicknamed "
    "La dame de fer, it was constructed as the centerpiece of the 1889 World's Fair, and to crown the centennial "
    "anniversary of the French Revolution. Although initially criticised by some of France's leading artists and "
    "intellectuals for its design, it has since become a global cultural icon of France and one of the most "
    "recognisable structures in the world. The tower received 5,889,000 visitors in 2022. The Eiffel Tower is the "
    "most visited monument with an entrance fee in the world.")
CODE = '''def load(path):
    with open(path) as f:
        return f.read()


def save(path, text):
    with open(path, "w") as f:
        f.write(text)


def count_words(text):
    return len(text.split())


def shout(text):
    return text.upper() + "!"
'''
TASKS = {
    "quote": f"Passage:\n{PASSAGE}\n\nQuote, word for word, the two sentences of the passage about its visitors "
             "and about its critics.",
    "summary": f"Summarize this text:\n\n{PASSAGE}",
    "code_edit": f"Add type hints to every function of this file and give the whole file back:\n\n{CODE}",
    "free_chat": "Tell me a short story about a cat who learns to swim.",
}
TOKENS = 160
ROUNDS = 3

SCRIPT = """
async ([model, tasks, tokens, rounds]) => {
""" + TIMED_STREAM + """
  const { CreateWebWorkerEngine } = await import('/web/engine.js');
  const engine = await CreateWebWorkerEngine(new Worker('/worker/worker.js', {type: 'module'}), model,
                                             {device: 'wasm'});
  const out = {};
  for (const [name, prompt] of Object.entries(tasks)) {
    const runs = {plain: [], speculative: []};
    for (let r = 0; r < rounds; r++) {
      for (const mode of r % 2 ? ['speculative', 'plain'] : ['plain', 'speculative']) {
        const {stamps, usage, n} = await timedStream(engine, {messages: [{role: 'user', content: prompt}],
          temperature: 0, max_tokens: tokens, extra_body: {speculative: mode === 'speculative'}});
        runs[mode].push({tokens_per_s: (n - 1) / ((stamps.at(-1) - stamps[0]) / 1000), n,
                         drafted: usage.extra.draft_tokens ?? 0, accepted: usage.extra.accepted_draft_tokens ?? 0});
      }
    }
    const a = await engine.chat.completions.create({messages: [{role: 'user', content: prompt}], temperature: 0,
      max_tokens: tokens, return_token_ids: true, extra_body: {speculative: false}});
    const b = await engine.chat.completions.create({messages: [{role: 'user', content: prompt}], temperature: 0,
      max_tokens: tokens, return_token_ids: true});
    out[name] = {runs, same_reply: JSON.stringify(a.choices[0].token_ids) === JSON.stringify(b.choices[0].token_ids)};
  }
  engine.terminate();
  return out;
}
"""


def speculative_bench(page: Any, model: str) -> dict[str, Any]:
    """Median decode tokens/s per task, with and without drafts, and their ratio."""
    raw = page.evaluate(SCRIPT, [model, TASKS, TOKENS, ROUNDS])
    out: dict[str, Any] = {"model": model, "rounds": ROUNDS, "max_tokens": TOKENS}
    for name, r in raw.items():
        plain = statistics.median(x["tokens_per_s"] for x in r["runs"]["plain"])
        fast = statistics.median(x["tokens_per_s"] for x in r["runs"]["speculative"])
        last = r["runs"]["speculative"][-1]
        out[name] = {"plain_tokens_per_s": round(plain, 1), "speculative_tokens_per_s": round(fast, 1),
                     "speedup": round(fast / plain, 2), "tokens": last["n"], "drafted": last["drafted"],
                     "accepted": last["accepted"], "same_reply": r["same_reply"]}
    return out
