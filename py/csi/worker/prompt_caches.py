"""``prompt_caches_*``: the prompt caches the browser keeps beyond the page (worker/prompt_cache.js),
listed, deleted and sized by the page (``engine.cache``). Where there is no browser storage (CPython)
none are kept: the list is empty and the settings say so."""

from __future__ import annotations

from typing import Annotated, Any, Protocol

from pydantic import Field, RootModel

from ..wire import Reply, Strict


class PromptCacheStore(Protocol):
    """The browser's store of prompt caches, as JSON-shaped values."""

    async def entries(self) -> list[dict[str, Any]]: ...

    async def delete(self, ids: list[str] | None) -> int: ...

    async def configure(self, changes: dict[str, Any]) -> dict[str, Any]: ...


class PromptCacheEntry(Reply):
    """One kept cache: the tokens of a prompt (and the reply that followed) of one model."""

    id: str
    model: str
    tokens: int
    bytes: int
    created: float
    """When it was written, in milliseconds since 1970 (JS ``Date.now()``)."""
    last_used: float


class PromptCacheList(RootModel[list[PromptCacheEntry]]):
    """The kept caches, most recently used first."""


class PromptCacheDeleteRequest(Strict):
    """``ids``: the entries to delete; left out or ``null``: all of them."""

    ids: Annotated[list[Annotated[str, Field(max_length=64)]], Field(max_length=10_000)] | None = None


class PromptCacheDeleted(Reply):
    deleted: int


class PromptCacheSettingsRequest(Strict):
    """What to change (fields left out stay as they are): whether requests keep their caches, the
    bytes all entries may take together (least recently used out), the fewest tokens worth keeping."""

    enabled: bool | None = None
    budget_bytes: Annotated[int, Field(ge=0, le=2**53)] | None = None
    min_tokens: Annotated[int, Field(ge=1, le=2**31)] | None = None


class PromptCacheSettings(Reply):
    enabled: bool
    budget_bytes: int
    min_tokens: int


NONE_KEPT = PromptCacheSettings(enabled=False, budget_bytes=0, min_tokens=1)


async def list_caches(store: PromptCacheStore | None) -> PromptCacheList:
    return PromptCacheList.model_validate(await store.entries() if store is not None else [])


async def delete_caches(store: PromptCacheStore | None, r: PromptCacheDeleteRequest) -> PromptCacheDeleted:
    return PromptCacheDeleted(deleted=await store.delete(r.ids) if store is not None else 0)


async def configure_caches(store: PromptCacheStore | None, r: PromptCacheSettingsRequest) -> PromptCacheSettings:
    if store is None:
        return NONE_KEPT
    return PromptCacheSettings.model_validate(await store.configure(r.model_dump(exclude_none=True)))
