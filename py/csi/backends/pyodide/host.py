"""The worker's ``Host``, over worker/host.js."""

from __future__ import annotations

from collections.abc import Sequence
from json import dumps, loads
from typing import Any

from pyodide.ffi import JsException

from ...core.packages import SERVED
from ...errors import InternalError, PackageLoadError


class PyodideHost:
    """``Host`` over worker/host.js: language data by fetch, skills in IndexedDB, packages from the
    site's wheels (worker/packages.js)."""

    def __init__(self, host: Any) -> None:
        self._host = host

    async def language_data(self, code: str) -> bytes:
        try:
            return (await self._host.languageData(code)).to_bytes()
        except JsException as exc:
            raise InternalError(f"could not fetch the language data of {code!r}: {exc.message}") from None

    async def stored_skills(self) -> dict[str, str]:
        return loads(await self._host.storedSkills())

    async def store_skill(self, name: str, source: str) -> None:
        await self._host.storeSkill(name, source)

    async def delete_skill(self, name: str) -> None:
        await self._host.deleteSkill(name)

    async def load_packages(self, names: Sequence[str]) -> None:
        unknown = [name for name in names if name not in SERVED]
        if unknown:
            raise PackageLoadError(f"csi-web serves no package named {unknown[0]!r}; it serves "
                                   f"{', '.join(sorted(SERVED))}")
        if not names:
            return
        try:
            await self._host.loadPackages(dumps(list(names)))
        except JsException as exc:
            raise PackageLoadError(f"could not load {', '.join(names)}: {exc.message}") from None
