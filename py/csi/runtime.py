"""The composition root: the one place that builds the engine and the services around it, for the
worker, for ``csi.local`` and for tests. Each service receives what it uses, not the engine whole."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .core.backend import Backend
from .core.engine import Engine
from .core.host import Host
from .errors import ModelNotSupportedError
from .faces.openai.responses_api.store import MemoryResponseStore, ResponseStore
from .index.store import IndexStore
from .mcp.namespaces import McpNamespaces
from .servers import ServerPlacement
from .servers.http import HttpClient
from .skills.page_tools import ToolRegistry
from .skills.registry import SkillRegistry, SkillRunner
from .text.services import TextServices

if TYPE_CHECKING:
    from .index.service import DocumentIndex
    from .skills.engine_csi import EngineCsi, RunSync


@dataclass
class Runtime:
    """The engine and its services: text (chunking, languages), the document index, skills."""

    engine: Engine
    text: TextServices
    store: IndexStore | None
    """Where documents are kept (``None``: in memory)."""
    skills: SkillRegistry = field(init=False)
    tools: ToolRegistry = field(init=False)
    """The tools skills call (the page's, in the worker)."""
    mcp: McpNamespaces = field(init=False)
    """The MCP servers whose tools skills of a namespace call."""
    responses: ResponseStore = field(default_factory=MemoryResponseStore)
    """Stored responses of the Responses API (IndexedDB in the worker)."""
    _index: DocumentIndex | None = field(default=None, init=False)

    @property
    def index(self) -> DocumentIndex:
        """The document index (its modules load on first use, not at start-up)."""
        if self._index is None:
            from .index.service import DocumentIndex  # noqa: PLC0415
            from .index.store import MemoryIndexStore  # noqa: PLC0415

            self._index = DocumentIndex(self.engine, self.text, self.store or MemoryIndexStore())
        return self._index

    def csi(self, run_sync: RunSync) -> EngineCsi:
        """The CSI skills run against, over this runtime's services."""
        from .skills.engine_csi import EngineCsi  # noqa: PLC0415 - pharia-skill is loaded on first use

        return EngineCsi(self.engine, self.text, lambda: self.index, run_sync, tools=self.tools, mcp=self.mcp)


def threaded_runner(runtime: Runtime) -> SkillRunner:
    """For CPython: the skill runs in a thread and waits on the engine's loop for each CSI call."""

    async def run(body: Callable[[EngineCsi], bytes]) -> bytes:
        from .skills.engine_csi import loop_run_sync  # noqa: PLC0415

        csi = runtime.csi(loop_run_sync(asyncio.get_running_loop()))
        return await asyncio.to_thread(body, csi)

    return run


def build_runtime(backend: Backend, host: Host, store: IndexStore | None = None,
                  skill_runner: Callable[[Runtime], SkillRunner] = threaded_runner,
                  http: HttpClient | None = None, responses: ResponseStore | None = None) -> Runtime:
    """Wire an engine on ``backend`` to its services: language data and skill storage from ``host``,
    documents in ``store`` (in memory by default), skills run by ``skill_runner(runtime)``, the servers
    of remote models and MCP servers reached through ``http`` (``None``: none), stored responses in
    ``responses`` (in memory by default)."""
    engine = Engine(backend, ServerPlacement(http) if http is not None else None)

    def needs_tokenizer(model_id: str, message: str) -> None:
        if model_id in engine.models:
            engine.runner(model_id).needs_tokenizer(message, "model", ModelNotSupportedError)

    text = TextServices(backend, host, lambda: engine.models, engine.alias_of, needs_tokenizer)
    runtime = Runtime(engine, text, store)
    if responses is not None:
        runtime.responses = responses
    runtime.skills = SkillRegistry(host, skill_runner(runtime), engine)
    runtime.tools = ToolRegistry(engine)
    runtime.mcp = McpNamespaces(http, engine)
    return runtime
