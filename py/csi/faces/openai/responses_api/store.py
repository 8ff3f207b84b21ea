"""Where stored responses are kept: a port (IndexedDB in the worker, so a conversation continues
after a reload; memory in CPython). A record is the response, its input items, and the items of
the conversation before it (what ``previous_response_id`` continues)."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Protocol


class ResponseStore(Protocol):
    async def get(self, response_id: str) -> dict[str, Any] | None:
        """The record kept under ``response_id``, or ``None``."""
        ...

    async def put(self, response_id: str, record: dict[str, Any]) -> None:
        ...

    async def delete(self, response_id: str) -> bool:
        """Whether there was such a record."""
        ...


class MemoryResponseStore:
    """Records in memory, the oldest dropped beyond ``limit``."""

    def __init__(self, limit: int = 1000) -> None:
        self._records: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._limit = limit

    async def get(self, response_id: str) -> dict[str, Any] | None:
        return self._records.get(response_id)

    async def put(self, response_id: str, record: dict[str, Any]) -> None:
        self._records[response_id] = record
        self._records.move_to_end(response_id)
        while len(self._records) > self._limit:
            self._records.popitem(last=False)

    async def delete(self, response_id: str) -> bool:
        return self._records.pop(response_id, None) is not None
