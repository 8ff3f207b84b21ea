"""Stored responses in the worker's IndexedDB (worker/host.js), so a conversation continues after a
reload: ``csi.faces.openai.responses_api.store.ResponseStore`` over the host."""

from __future__ import annotations

from json import dumps, loads
from typing import Any, cast


class PyodideResponseStore:
    def __init__(self, host: Any) -> None:
        self._host = host

    async def get(self, response_id: str) -> dict[str, Any] | None:
        raw = await self._host.storedResponse(response_id)
        return None if raw is None else cast(dict[str, Any], loads(raw))

    async def put(self, response_id: str, record: dict[str, Any]) -> None:
        await self._host.storeResponse(response_id, dumps(record, separators=(",", ":")))

    async def delete(self, response_id: str) -> bool:
        return bool(await self._host.deleteResponse(response_id))
