"""What services need from their surroundings besides model execution: language data files (text
services), durable storage for registered skills and the packages skills import (the skill
registry). The worker implements them over fetch, IndexedDB and Pyodide's package loader
(``csi.backends.pyodide``); ``csi.backends.local_host`` serves CPython from a folder, memory and
the packages installed. The document index's store is a protocol of its own
(``csi.index.store.IndexStore``)."""

from __future__ import annotations

from collections.abc import Sequence
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


class PackageLoader(Protocol):
    async def load_packages(self, names: Sequence[str]) -> None:
        """Make the packages ``names`` (import names of ``csi.core.packages.SERVED``, e.g. "jinja2")
        importable, each with its dependencies, each loaded once. ``PackageLoadError`` when a name
        is not served or its package cannot be loaded."""
        ...


class SkillHost(SkillStore, PackageLoader, Protocol):
    """What the skill registry needs: storage for skills and the packages they import."""


class Host(LanguageSource, SkillHost, Protocol):
    """All of them, as one object (what the worker's JS host and ``LocalHost`` are)."""
