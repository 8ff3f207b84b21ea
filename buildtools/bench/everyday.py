"""Right answers of the built-in SmolLM2 to a person's first everyday questions, per sampling setting.

``python3 -m buildtools.bench.everyday`` (after ``build.py build``): each setting answers every
question with several seeds on csi's CPython engine; an answer is right when it names the expected
word (or one of its spellings). The built-in model's defaults (``smollm2.GENERATION_DEFAULTS``) were
chosen with it; its figures are in docs/models.md.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from typing import Any

QUESTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("What is the capital of France?", ("paris",)),
    ("What is the capital of Japan?", ("tokyo",)),
    ("What color is the sky on a clear day?", ("blue",)),
    ("How many days are there in a week?", ("seven", "7")),
    ("What is the largest planet in our solar system?", ("jupiter",)),
    ("What color is grass?", ("green",)),
    ("How many legs does a spider have?", ("eight", "8")),
    ("What do bees make?", ("honey",)),
    ("What is the opposite of hot?", ("cold",)),
    ("Which animal says moo?", ("cow",)),
    ("How many hours are in a day?", ("24", "twenty-four", "twenty four")),
    ("What planet do we live on?", ("earth",)),
)

SETTINGS: dict[str, dict[str, Any]] = {
    "greedy": {"temperature": 0},
    "greedy, repetition penalty 1.1": {"temperature": 0, "repetition_penalty": 1.1},
    "temperature 0.2, top-p 0.9": {"temperature": 0.2, "top_p": 0.9},
    "temperature 0.3, top-k 20, top-p 0.9": {"temperature": 0.3, "top_k": 20, "top_p": 0.9},
    "temperature 0.7, top-p 0.95 (old playground)": {"temperature": 0.7, "top_p": 0.95},
    "temperature 1 (old engine default)": {"temperature": 1.0},
}
SEEDS = (1, 2, 3)
MAX_TOKENS = 96


def right(answer: str, words: tuple[str, ...]) -> bool:
    """Whether ``answer`` names one of ``words`` (as a whole word, any case)."""
    return any(re.search(rf"(?<![\w-]){re.escape(w)}(?![\w-])", answer.lower()) for w in words)


async def measure(model: str = "smollm2-135m-instruct") -> dict[str, dict[str, Any]]:
    from csi.backends.cpython import CPythonBackend
    from csi.core.engine import Engine
    from csi.faces.openai.protocol import ChatCompletionRequest
    from csi.faces.openai.serving import chat_completion

    from ..site.assemble import DIST

    engine = Engine(CPythonBackend(DIST / "models"))
    await engine.load([model])
    out: dict[str, dict[str, Any]] = {}
    for name, setting in SETTINGS.items():
        seeds = (None,) if setting.get("temperature") == 0 else SEEDS
        hits, wrong = 0, []
        for question, words in QUESTIONS:
            for seed in seeds:
                request = ChatCompletionRequest.model_validate(
                    {"model": model, "messages": [{"role": "user", "content": question}],
                     "max_tokens": MAX_TOKENS, "seed": seed, **setting})
                reply = await chat_completion(engine, request)
                answer = reply.choices[0].message.content or ""
                if right(answer, words):
                    hits += 1
                else:
                    wrong.append(f"{question} -> {answer[:80]!r}")
        out[name] = {"right": hits, "asked": len(QUESTIONS) * len(seeds), "wrong": wrong}
    return out


if __name__ == "__main__":
    figures = asyncio.run(measure(*sys.argv[1:]))
    for name, f in figures.items():
        print(f"{f['right']:3d} / {f['asked']:3d}  {name}")
    print(json.dumps(figures, indent=1))
