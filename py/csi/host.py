"""What the engine needs from its surroundings besides model execution: the language data files,
durable storage for registered skills, and the document index's store. The worker implements it
over fetch and IndexedDB (csi.pyodide_backend); ``LocalHost`` serves CPython from folders and memory."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from .errors import InternalError
from .index_store import IndexStore, MemoryIndexStore


class Host(Protocol):
    documents: IndexStore
    """Documents, search indexes and their chunks."""

    async def language_data(self, code: str) -> bytes:
        """The compact n-gram data of one language (``lang/<code>.bin`` of the site)."""
        ...

    async def stored_skills(self) -> dict[str, str]:
        """Every registered skill: name -> Python source."""
        ...

    async def store_skill(self, name: str, source: str) -> None:
        """Keep a skill; returns once it is durably stored."""
        ...

    async def delete_skill(self, name: str) -> None:
        """Forget a skill; returns once the deletion is durable."""
        ...


class LocalHost:
    """``Host`` for CPython: language data from a folder, skills and documents in memory."""

    def __init__(self, lang_dir: Path | None = None) -> None:
        self.lang_dir = lang_dir
        self.skills: dict[str, str] = {}
        self.documents: IndexStore = MemoryIndexStore()

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
