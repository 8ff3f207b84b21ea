"""The browser's prompt caches (worker/prompt_cache.js through the bridge), for ``prompt_caches_*``."""

from __future__ import annotations

from json import dumps, loads
from typing import Any, cast


class PyodidePromptCaches:
    """``csi.worker.prompt_caches.PromptCacheStore`` over the bridge."""

    def __init__(self, bridge: Any) -> None:
        self._bridge = bridge

    async def entries(self) -> list[dict[str, Any]]:
        return cast(list[dict[str, Any]], loads(await self._bridge.promptCachesList()))

    async def delete(self, ids: list[str] | None) -> int:
        return int(await self._bridge.promptCachesDelete(dumps(ids)))

    async def configure(self, changes: dict[str, Any]) -> dict[str, Any]:
        return cast(dict[str, Any], loads(await self._bridge.promptCachesConfigure(dumps(changes))))
