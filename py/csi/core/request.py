"""What a face asks the engine for: one generation request, whatever the API it came from."""

from __future__ import annotations

from dataclasses import dataclass, field

from .backend import SamplingParams


@dataclass(frozen=True)
class GenerationParams:
    """What one generation needs besides the prompt; ``max_tokens=None`` = rest of the window."""

    sampling: SamplingParams = field(default_factory=SamplingParams)
    max_tokens: int | None = None
    stop: tuple[str, ...] = ()
    ignore_eos: bool = False
    keep_special: bool = False
    """Show special tokens in the text, the end-of-sequence token included (byte tables only)."""


@dataclass(frozen=True)
class GenerationRequest:
    """A prompt for a chat model: ``messages`` (rendered by the model's chat template) or a raw
    ``prompt`` (encoded with the tokenizer's special tokens), never both.

    ``model=None`` asks for the one chat model loaded. Errors about the request name these fields:
    ``model``, ``messages`` or ``prompt`` (too long, empty), ``logit_bias`` (outside the vocabulary).
    """

    model: str | None
    params: GenerationParams = field(default_factory=GenerationParams)
    messages: tuple[tuple[str, str], ...] | None = None
    """(role, content) pairs."""
    prompt: str | None = None
    n: int = 1

    def __post_init__(self) -> None:
        if (self.messages is None) == (self.prompt is None):
            raise ValueError("a GenerationRequest has either messages or a prompt")
