"""The worker's ``Host``, over worker/host.js."""

from __future__ import annotations

from json import loads
from typing import Any

from pyodide.ffi import JsException

from ...errors import InternalError


class PyodideHost:
    """``Host`` over worker/host.js: language data by fetch, skills in IndexedDB."""

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
