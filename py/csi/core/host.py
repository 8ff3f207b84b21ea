"""What services need from their surroundings besides model execution: language data files (text
services) and durable storage for registered skills (the skill registry). The worker implements
them over fetch and IndexedDB (``csi.backends.pyodide``); ``csi.backends.local_host`` serves
CPython from a folder and memory. The document index's store is a protocol of its own
(``csi.index.store.IndexStore``)."""

from __future__ import annotations

from typing import Protocol


class LanguageSource(Protocol):
    async def language_data(self, code: str) -> bytes:
        """The compact n-gram data of one language (``lang/<code>.bin`` of the site)."""
        ...


class SkillStore(Protocol):
    async def stored_skills(self) -> dict[str, str]:
        """Every registered skill: name -> Python source."""
        ...

    async def store_skill(self, name: str, source: str) -> None:
        """Keep a skill; returns once it is durably stored."""
        ...

    async def delete_skill(self, name: str) -> None:
        """Forget a skill; returns once the deletion is durable."""
        ...


class Host(LanguageSource, SkillStore, Protocol):
    """Both, as one object (what the worker's JS host and ``LocalHost`` are)."""
