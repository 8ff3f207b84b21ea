"""The skill registry as the page calls it, for CPython tests: its arguments as a page's JSON
request, parsed into the skill messages' models the way the worker's envelope parses them (once),
and its replies as the JSON the page receives."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from pydantic import BaseModel

from csi.core.scope import Scope
from csi.skills.registry import SkillRegistry
from csi.skills.wire import SkillEvent, SkillName, SkillRegisterRequest, SkillRunRequest, SkillStreamRequest
from csi.wire import parse_request


def _json(reply: BaseModel) -> Any:
    return reply.model_dump(mode="json")


class SkillsClient:
    """``engine.skills.*`` of the page (``register``, ``list``, ``metadata``, ``run``, ``stream``,
    ``remove``), in Python."""

    def __init__(self, registry: SkillRegistry) -> None:
        self.registry = registry

    async def register(self, name: Any, source: Any, time_limit_ms: Any = None, scope: Scope | None = None) -> Any:
        request = {"name": name, "source": source, "time_limit_ms": time_limit_ms}
        return _json(await self.registry.register(parse_request(SkillRegisterRequest, request), scope))

    async def list(self) -> Any:
        return _json(await self.registry.list())

    async def metadata(self, name: Any) -> Any:
        return _json(await self.registry.metadata(parse_request(SkillName, {"name": name})))

    async def run(self, name: Any, input: Any, time_limit_ms: Any = None, scope: Scope | None = None) -> Any:
        request = {"name": name, "input": input, "time_limit_ms": time_limit_ms}
        return _json(await self.registry.run(parse_request(SkillRunRequest, request), scope))

    async def stream(self, name: Any, input: Any, time_limit_ms: Any = None,
                     scope: Scope | None = None) -> AsyncIterator[Any]:
        request = {"name": name, "input": input, "time_limit_ms": time_limit_ms}
        return _events(await self.registry.stream(parse_request(SkillStreamRequest, request), scope))

    async def remove(self, name: Any) -> None:
        await self.registry.remove(parse_request(SkillName, {"name": name}))


async def _events(events: AsyncIterator[SkillEvent]) -> AsyncIterator[Any]:
    async for event in events:
        yield _json(event)
