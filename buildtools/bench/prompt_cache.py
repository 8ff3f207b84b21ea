"""Prompt caches kept beyond the page, on the real model (WASM): a conversation of about 1,000 tokens
(a document, then questions and answers) goes on after a reload. The time from the request to the
first token of the next answer, with the kept cache and without it (``engine.cache.configure({enabled:
false})``), in interleaved rounds; each round is a new worker (what a reload leaves: the page's storage,
not its memory). Greedy, so both must give the same answer (checked)."""

from __future__ import annotations

import statistics
from typing import Any

from .decode import TIMED_STREAM
from .speculative import CODE, PASSAGE

ROUNDS = 3
TOKENS = 16
CONVERSATION = [
    {"role": "system", "content": "You answer questions about the documents the user gives, briefly. Quote them "
                                  "where you can, say so when they do not answer the question, and keep to plain "
                                  "English. " * 6},
    {"role": "user",
     "content": f"Here is a text:\n\n{PASSAGE}\n\nAnd a file:\n\n{CODE}\n{CODE.replace('text', 'data')}"},
    {"role": "assistant", "content": "Thank you. I have read the text about the Eiffel Tower and the Python file. "
                                     "Ask me anything about them."},
    {"role": "user", "content": "Who designed the tower, and when was it built?"},
    {"role": "assistant", "content": "The company of the engineer Gustave Eiffel designed and built it, from 1887 "
                                     "to 1889, for the World's Fair of 1889."},
    {"role": "user", "content": f"Summarize this text too:\n\n{PASSAGE}"},
    {"role": "assistant", "content": "The Eiffel Tower, built in Paris for the 1889 World's Fair by Gustave "
                                     "Eiffel's company, was criticised at first and is now a cultural icon of France "
                                     "and the most visited paid monument in the world."},
    {"role": "user", "content": f"What does this file do? Explain each function.\n\n{CODE}"},
]
NEXT = "How many visitors did it have in 2022?"

SCRIPT = """
async ([model, conversation, next, tokens, rounds]) => {
""" + TIMED_STREAM + """
  const { CreateWebWorkerEngine } = await import('/web/engine.js');
  const open = () => CreateWebWorkerEngine(new Worker('/worker/worker.js', {type: 'module'}), model, {device: 'wasm'});
  let engine = await open();
  await engine.cache.clear();
  const first = await engine.chat.completions.create({messages: conversation, temperature: 0, max_tokens: tokens});
  const messages = [...conversation, first.choices[0].message, {role: 'user', content: next}];
  await engine.cache.list();  // the first answer's cache written
  engine.terminate();
  const runs = {kept: [], none: []};
  const replies = {kept: null, none: null};
  for (let r = 0; r < rounds; r++) {
    for (const mode of r % 2 ? ['none', 'kept'] : ['kept', 'none']) {
      engine = await open();
      await engine.cache.configure({enabled: mode === 'kept'});
      const t0 = performance.now();
      const {stamps, usage} = await timedStream(engine, {messages, temperature: 0, max_tokens: tokens});
      runs[mode].push({first_token_s: (stamps[0] - t0) / 1000, prompt_tokens: usage.prompt_tokens,
                       restored: usage.extra.prompt_cache_tokens ?? 0});
      const again = await engine.chat.completions.create({messages, temperature: 0, max_tokens: tokens});
      replies[mode] = again.choices[0].message.content;
      await engine.cache.configure({enabled: true});
      engine.terminate();
    }
  }
  engine = await open();
  const kept = await engine.cache.list();
  engine.terminate();
  return {runs, same_reply: replies.kept === replies.none, kept};
}
"""


def prompt_cache_bench(page: Any, model: str) -> dict[str, Any]:
    """Median seconds to the next answer's first token after a reload, with the kept cache and without."""
    raw = page.evaluate(SCRIPT, [model, CONVERSATION, NEXT, TOKENS, ROUNDS])
    kept = statistics.median(r["first_token_s"] for r in raw["runs"]["kept"])
    none = statistics.median(r["first_token_s"] for r in raw["runs"]["none"])
    last = raw["runs"]["kept"][-1]
    return {"model": model, "rounds": ROUNDS, "prompt_tokens": last["prompt_tokens"],
            "restored_tokens": [r["restored"] for r in raw["runs"]["kept"]], "first_token_s_kept_cache": round(kept, 2),
            "first_token_s_without": round(none, 2), "speedup": round(none / kept, 1),
            "same_reply": raw["same_reply"], "entries": len(raw["kept"]),
            "entry_mb": round(max((e["bytes"] for e in raw["kept"]), default=0) / 2**20, 1)}
