"""``Host`` for CPython: language data from a folder, skills in memory (pure Python)."""

from __future__ import annotations

from pathlib import Path

from ..errors import InternalError


class LocalHost:
    """Language data from ``lang_dir`` (``<code>.bin`` files), registered skills in a dict."""

    def __init__(self, lang_dir: Path | None = None) -> None:
        self.lang_dir = lang_dir
        self.skills: dict[str, str] = {}

    async def language_data(self, code: str) -> bytes:
        if self.lang_dir is None:
            raise InternalError("no language data folder is configured")
        path = self.lang_dir / f"{code}.bin"
        try:
            return path.read_bytes()
        except OSError as exc:
            raise InternalError(f"language data for {code!r} is missing: {exc}") from None

    async def stored_skills(self) -> dict[str, str]:
        return dict(self.skills)

    async def store_skill(self, name: str, source: str) -> None:
        self.skills[name] = source

    async def delete_skill(self, name: str) -> None:
        self.skills.pop(name, None)
