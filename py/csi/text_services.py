"""Chunking and language selection on the engine: tokenizers come from the backend (counted in
batches), language data from the host (fetched once per language, only when asked for)."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import TYPE_CHECKING

from .backend import Backend
from .errors import CsiError, InvalidInputError, ModelNotSupportedError
from .host import Host

if TYPE_CHECKING:
    from .language import LanguageModels


def _prefixed(exc: CsiError, prefix: str) -> CsiError:
    """The same error with ``param`` moved under ``prefix`` (``overlap`` -> ``requests[0].params.overlap``)."""
    if not exc.param:
        return type(exc)(exc.message, prefix or None)
    sep = "" if exc.param.startswith("[") or not prefix else "."
    return type(exc)(exc.message, f"{prefix}{sep}{exc.param}")


class TextServices:
    """The CSI ``chunking`` and ``language`` interfaces."""

    def __init__(self, backend: Backend, host: Host, loaded_models: Callable[[], Collection[str]]) -> None:
        self.backend = backend
        self.host = host
        self._loaded_models = loaded_models
        self._languages: LanguageModels | None = None

    async def _ensure_tokenizer(self, model_id: str, param: str) -> None:
        known = set(self._loaded_models()) | set(self.backend.builtin_models())
        if model_id not in known:
            raise ModelNotSupportedError(
                f"model {model_id!r} is neither loaded nor built in (known: {', '.join(sorted(known))})", param)
        await self.backend.load_tokenizer(model_id)

    async def chunk(self, text: str, model: str, max_tokens: int, overlap: int,
                    param: str = "params") -> list[tuple[int, str]]:
        """``text`` in chunks of at most ``max_tokens`` tokens of ``model``: (character offset, chunk)."""
        await self._ensure_tokenizer(model, f"{param}.model")

        def count(texts: list[str]) -> list[int]:
            return self.backend.count_tokens(model, texts)

        from .chunking import chunk_text  # noqa: PLC0415 - loaded on first use

        try:
            return chunk_text(text, max_tokens, overlap, count)
        except CsiError as exc:
            raise _prefixed(exc, param) from None

    async def select_language(self, text: str, languages: list[str], param: str = "") -> str | None:
        """The ISO 639-3 code of ``text``'s language among ``languages``, or ``None`` when unclear."""
        from .language import LanguageModels, validate_languages  # noqa: PLC0415 - loaded on first use

        if not languages:
            where = f"{param}.languages" if param else "languages"
            raise InvalidInputError("`languages` must name at least one candidate", where)
        try:
            codes = validate_languages(languages)
        except CsiError as exc:
            raise _prefixed(exc, param) from None
        if self._languages is None:
            self._languages = LanguageModels()
        for code in self._languages.missing(codes):
            self._languages.add(code, await self.host.language_data(code))
        return self._languages.select_language(text, codes)
