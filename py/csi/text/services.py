"""Chunking and language selection: tokenizers come from the backend (counted in batches),
language data from the host (fetched once per language, only when asked for)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from typing import TYPE_CHECKING, Protocol

from ..core.backend import Loading, Tokenizers
from ..core.host import LanguageSource
from ..errors import InvalidInputError, ModelNotSupportedError

if TYPE_CHECKING:
    from .language import LanguageModels


class TokenCounting(Loading, Tokenizers, Protocol):
    """The roles text services use: tokenizers (counting) and loading (which models are built in)."""


class TextServices:
    """The CSI ``chunking`` and ``language`` interfaces; errors name their own arguments."""

    def __init__(self, backend: TokenCounting, languages: LanguageSource,
                 loaded_models: Callable[[], Collection[str]],
                 alias_of: Callable[[str], str] = lambda name: name,
                 needs_tokenizer: Callable[[str, str], None] = lambda name, message: None) -> None:
        """``needs_tokenizer(model_id, message)`` raises ``ModelNotSupportedError(message)`` when the
        model's tokenizer is not here (a model on a server)."""
        self.backend = backend
        self._alias_of = alias_of
        self._needs_tokenizer = needs_tokenizer
        self.language_source = languages
        self._loaded_models = loaded_models
        self._languages: LanguageModels | None = None

    async def _ensure_tokenizer(self, model_id: str) -> str:
        """The model id whose tokenizer counts for ``model_id`` (an alias's target), loaded."""
        model_id = self._alias_of(model_id)
        known = set(self._loaded_models()) | set(self.backend.builtin_models())
        if model_id not in known:
            raise ModelNotSupportedError(
                f"model {model_id!r} is neither loaded nor built in (known: {', '.join(sorted(known))})", "model")
        self._needs_tokenizer(model_id, f"{model_id!r} runs on a server: its tokenizer is not here to count "
                              "tokens with (name a model of this engine)")
        await self.backend.load_tokenizer(model_id)
        return model_id

    async def chunk(self, text: str, model: str, max_tokens: int, overlap: int,
                    pause: Callable[[], Awaitable[None]] | None = None) -> list[tuple[int, str]]:
        """``text`` in chunks of at most ``max_tokens`` tokens of ``model``: (character offset, chunk).
        ``pause`` is awaited after each chunk (a long text: to let other work in, or to stop)."""
        model = await self._ensure_tokenizer(model)

        def count(texts: list[str]) -> list[int]:
            return self.backend.count_tokens(model, texts)

        from .chunking import chunk_steps, chunk_text  # noqa: PLC0415 - loaded on first use

        if pause is None:
            return chunk_text(text, max_tokens, overlap, count)
        out = []
        for chunk in chunk_steps(text, max_tokens, overlap, count):
            out.append(chunk)
            await pause()
        return out

    async def select_language(self, text: str, languages: list[str]) -> str | None:
        """The ISO 639-3 code of ``text``'s language among ``languages``, or ``None`` when unclear."""
        from .language import LanguageModels, validate_languages  # noqa: PLC0415 - loaded on first use

        if not languages:
            raise InvalidInputError("`languages` must name at least one candidate", "languages")
        codes = validate_languages(languages)
        if self._languages is None:
            self._languages = LanguageModels()
        for code in self._languages.missing(codes):
            self._languages.add(code, await self.language_source.language_data(code))
        return self._languages.select_language(text, codes)
