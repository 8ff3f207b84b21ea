"""``Host`` for CPython: language data from a folder, skills in memory, the packages skills import
from this Python's own installation (pure Python)."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path

from ..core.packages import SERVED
from ..errors import InternalError, PackageLoadError


class LocalHost:
    """Language data from ``lang_dir`` (``<code>.bin`` files), registered skills in a dict, packages
    as installed (``build.py`` installs every served one)."""

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

    async def load_packages(self, names: Sequence[str]) -> None:
        """Nothing to load in CPython: check that each package is installed."""
        for name in names:
            wheels = SERVED.get(name)
            if wheels is None:
                raise PackageLoadError(f"csi-web serves no package named {name!r}; it serves "
                                       f"{', '.join(sorted(SERVED))}")
            if importlib.util.find_spec(name) is None:
                raise PackageLoadError(f"{name!r} is not installed in this Python: "
                                       f"pip install {' '.join(wheels)}")
