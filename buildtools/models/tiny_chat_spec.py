"""The fixed facts every part of the tiny chat model build shares: sizes, seed, special tokens and
the chat format (``CHAT_TEMPLATE`` and its Python equivalent ``render_chat``)."""

from __future__ import annotations

from collections.abc import Sequence

from . import tiny_chat_tools

CONTEXT_LENGTH = 1024
VOCAB_SIZE = 4096
SEED = 1234
NUM_THREADS = 2

ENDOFTEXT = "<|endoftext|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
SPECIAL_TOKENS = (ENDOFTEXT, IM_START, IM_END)
PAD_ID, IM_START_ID, EOS_ID = 0, 1, 2

CHAT_TEMPLATE = tiny_chat_tools.CHAT_TEMPLATE

Message = dict[str, str]
Conversation = list[Message]


def render_chat(messages: Sequence[Message], add_generation_prompt: bool = False) -> str:
    """Python equivalent of ``CHAT_TEMPLATE``."""
    text = "".join(f"{IM_START}{m['role']}\n{m['content']}{IM_END}\n" for m in messages)
    return text + (f"{IM_START}assistant\n" if add_generation_prompt else "")
