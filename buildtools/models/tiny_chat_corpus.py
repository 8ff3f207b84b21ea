"""Tiny chat's training conversations: questions about mined doc items, multi-turn chats per module,
small talk, and the tool-calling and JSON conversations of ``tiny_chat_tools``. Deterministic."""

from __future__ import annotations

import random
import zlib
from collections.abc import Sequence

from . import tiny_chat_tools
from .tiny_chat_docs import DocItem
from .tiny_chat_spec import SEED, Conversation

TOOL_CONVERSATIONS = 2400
JSON_CONVERSATIONS = 400

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


def _stable_index(key: str, n: int) -> int:
    """Deterministic (hash-seed independent) choice of an index in ``range(n)``."""
    return zlib.crc32(key.encode("utf-8")) % n


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
