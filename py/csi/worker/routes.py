"""The worker's message types, declared once: type -> handler, mode and request model. Every page
message is ``{id, type, request}``; the envelope (``csi.worker.app``) parses ``request`` as the
route's model, once, and hands the handler that typed model. worker/protocol.js declares the same
types and modes, and worker/wire_types.d.ts (generated from these models by
``buildtools/codegen/wire_types.py``) their bodies; tests check that all three agree.

Modes: ``whole`` answers with one ``result``; ``stream`` answers with one ``chunk`` message per
chunk and then ``result: null`` when the handler returns an async iterator (``stream: true``), or
like ``whole`` otherwise; ``progress`` posts ``progress`` messages before its ``result``;
``control`` acts at once, between two tokens of whatever is running, and answers at once.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from ..core.scope import Scope
from ..errors import InvalidInputError
from ..faces import chat_tokens, remote_llm, spin
from ..faces.openai import protocol as openai_protocol
from ..faces.openai import responses
from ..faces.openai import serving as openai
from ..faces.pharia import index, inference, text
from ..index import types as index_types
from ..skills.page_tools import PageCall, page_invoker
from ..wire import parse_batch, parse_request
from . import remotes
from .requests import (
    CancelRequest,
    LoadRequest,
    ModelAliasesRequest,
    RemotesRequest,
    SkillEvent,
    SkillName,
    SkillRegisterRequest,
    SkillRunRequest,
    SkillStreamRequest,
    ToolName,
    ToolRegisterRequest,
)

if TYPE_CHECKING:
    from ..runtime import Runtime

Mode = Literal["whole", "stream", "progress", "control"]


@dataclass(frozen=True)
class Call:
    """What a handler gets besides its request: the services, the message's scope (its id, the
    interrupt epoch when it arrived, where it reports progress), the boot figures."""

    runtime: Runtime
    scope: Scope
    boot_timings: dict[str, float] | None = None
    call_page: PageCall | None = None
    """Runs a tool the page registered (``None``: no page, as in CPython)."""
    memory: Callable[[], dict[str, Any]] | None = None
    """What the worker holds in memory (``None``: not measured, as in CPython)."""

    @property
    def progress(self) -> Callable[[dict[str, Any]], None]:
        assert self.scope.progress is not None
        return self.scope.progress


@dataclass(frozen=True)
class Route:
    """How one message type is served. ``request`` is the body's model (``None``: the message has
    no body); a ``batch`` body is a JSON array, validated as the model's field of that name (so
    field paths read ``requests[i]...``); an ``optional`` body may be left out (it reads as ``{}``)."""

    handler: Callable[[Call, Any], Any]
    mode: Mode
    request: type[BaseModel] | None = None
    batch: str | None = None
    optional: bool = False
    reply: type[BaseModel] | None = None
    """The result's model, where the handler answers with one (the page's types come from it)."""
    chunk: type[BaseModel] | None = None
    """Each streamed chunk's model."""

    def parse(self, kind: str, body: Any, present: bool) -> Any:
        """The typed request of a message whose ``request`` is ``body`` (``present``: the key was sent)."""
        if self.request is None:
            if present:
                raise InvalidInputError(f"a {kind!r} message has no `request`", "request")
            return None
        if not present and self.optional:
            body = {}
        if self.batch is not None:
            return parse_batch(self.request, body, self.batch)
        return parse_request(self.request, body)


async def _load(c: Call, r: LoadRequest) -> dict[str, Any]:
    """``load``: one model id or several, loaded together (replacing the others)."""
    started = time.perf_counter()
    if r.remotes is not None:
        await remotes.set_remotes(c.runtime.engine, RemotesRequest(remotes=r.remotes))
    ids = [r.model_ids] if isinstance(r.model_ids, str) else r.model_ids
    infos = await c.runtime.engine.load(ids, r.device or "wasm", c.progress, r.hub)
    return {"models": [vars(i) for i in infos], "load_s": time.perf_counter() - started}


async def _register_tool(c: Call, r: ToolRegisterRequest) -> dict[str, Any]:
    """``tools_register``: the page keeps the function; calls reach it through ``c.call_page``.
    Schemas are compiled with fastjsonschema, which the worker fetches the first time."""
    await c.runtime.skills.store.load_packages(["fastjsonschema"])
    return c.runtime.tools.register(r.model_dump(), page_invoker(c.call_page, r.name)).to_dict()


async def _set_aliases(c: Call, r: ModelAliasesRequest) -> dict[str, str]:
    """``set_model_aliases``: other names for loaded models (replacing those set before)."""
    return c.runtime.engine.aliases.set(r.aliases)


async def _remove_tool(c: Call, r: ToolName) -> None:
    c.runtime.tools.remove(r.name)


async def _list_tools(c: Call, _: None) -> list[dict[str, Any]]:
    return [spec.to_dict() for spec in c.runtime.tools.list()]


def _memory_stats(c: Call) -> dict[str, Any]:
    """``memory_stats``: the worker's own figures (its JS: WebAssembly memories, GPU buffers, models)
    and how many objects Python's garbage collector tracks, which, unlike the wasm memory they live
    in, falls again when they are freed (Pyodide has no pymalloc, so no count of memory blocks)."""
    return {**(c.memory() if c.memory is not None else {}), "python_objects": len(gc.get_objects())}


ROUTES: dict[str, Route] = {
    "load": Route(_load, "progress", LoadRequest),
    # OpenAI / WebLLM (seed 004)
    "chat": Route(lambda c, r: openai.create_chat_completion(c.runtime.engine, r, c.scope), "stream",
                  openai_protocol.ChatCompletionRequest, reply=responses.ChatCompletion,
                  chunk=responses.ChatCompletionChunk),
    "completion": Route(lambda c, r: openai.create_completion(c.runtime.engine, r, c.scope), "stream",
                        openai_protocol.CompletionRequest, reply=responses.Completion, chunk=responses.Completion),
    "embeddings": Route(lambda c, r: openai.embeddings(c.runtime.engine, r, c.scope), "whole",
                        openai_protocol.EmbeddingRequest, reply=responses.CreateEmbeddingResponse),
    # the Prompt API facade (web/prompt_api.js): a conversation's tokens, nothing generated
    "chat_tokens": Route(lambda c, r: chat_tokens.chat_tokens(c.runtime.engine, r, c.scope), "whole",
                         chat_tokens.ChatTokensRequest, reply=chat_tokens.ChatTokens),
    # CSI inference, chunking, language, document index (seed 001)
    "csi_complete": Route(lambda c, r: inference.complete(c.runtime.engine, r, c.scope), "whole",
                          inference.CompleteBatch, "requests"),
    "csi_chat": Route(lambda c, r: inference.chat(c.runtime.engine, r, c.scope), "whole", inference.ChatBatch,
                      "requests"),
    "csi_chunk": Route(lambda c, r: text.chunk(c.runtime.text, r), "whole", text.ChunkBatch, "requests"),
    "csi_chunk_with_offsets": Route(lambda c, r: text.chunk_with_offsets(c.runtime.text, r), "whole",
                                    text.ChunkWithOffsetBatch, "requests"),
    "csi_select_language": Route(lambda c, r: text.select_language(c.runtime.text, r), "whole",
                                 text.SelectLanguageBatch, "requests"),
    "csi_search": Route(lambda c, r: index.search(c.runtime.index, r, c.scope), "whole", index_types.SearchBatch,
                        "requests"),
    "csi_documents": Route(lambda c, r: index.documents(c.runtime.index, r), "whole", index_types.PathBatch,
                           "requests"),
    "csi_document_metadata": Route(lambda c, r: index.document_metadata(c.runtime.index, r), "whole",
                                   index_types.PathBatch, "requests"),
    # the document index's writes
    "index_create": Route(lambda c, r: index.create(c.runtime.index, r, c.scope), "progress",
                          index_types.CreateIndex),
    "index_put": Route(lambda c, r: index.put(c.runtime.index, r, c.scope), "progress",
                       index_types.DocumentBatch, "documents"),
    "index_delete": Route(lambda c, r: index.delete(c.runtime.index, r), "whole", index_types.PathBatch, "requests"),
    "index_list": Route(lambda c, r: index.list_(c.runtime.index, r), "whole", index_types.ListRequest,
                        optional=True),
    "index_drop": Route(lambda c, r: index.drop(c.runtime.index, r), "whole", index_types.CollectionRef),
    # Spin llm (seeds 000 + 002) and RemoteLLM (seed 003)
    "llm_infer": Route(lambda c, r: spin.infer(c.runtime.engine, r, c.scope), "whole", spin.InferRequest),
    "llm_embeddings": Route(lambda c, r: spin.generate_embeddings(c.runtime.engine, r, c.scope), "whole",
                            spin.EmbeddingsRequest),
    "remote_generate": Route(lambda c, r: remote_llm.generate(c.runtime.engine, r, c.scope), "whole",
                             remote_llm.GenerateRequest),
    "remote_llm_type": Route(lambda c, r: remote_llm.llm_type(c.runtime.engine, r), "whole",
                             remote_llm.LlmTypeRequest),
    "remote_guts": Route(lambda c, r: remote_llm.generational_guts(c.runtime.engine, r, c.scope), "whole",
                         remote_llm.GenerationalGutsRequest),
    # skills
    "skills_register": Route(lambda c, r: c.runtime.skills.register(r.name, r.source, r.time_limit_ms, c.scope),
                             "whole", SkillRegisterRequest),
    "skills_list": Route(lambda c, _: c.runtime.skills.list(), "whole"),
    "skills_metadata": Route(lambda c, r: c.runtime.skills.metadata(r.name), "whole", SkillName),
    "skills_run": Route(lambda c, r: c.runtime.skills.run(r.name, r.input, r.time_limit_ms, c.scope), "whole",
                        SkillRunRequest),
    "skills_stream": Route(lambda c, r: c.runtime.skills.stream(r.name, r.input, r.time_limit_ms, c.scope), "stream",
                           SkillStreamRequest, chunk=SkillEvent),
    "skills_remove": Route(lambda c, r: c.runtime.skills.remove(r.name), "whole", SkillName),
    "set_model_aliases": Route(_set_aliases, "whole", ModelAliasesRequest),
    "set_remotes": Route(lambda c, r: remotes.set_remotes(c.runtime.engine, r), "whole", RemotesRequest),
    # tools the page provides, which skills call
    "tools_register": Route(_register_tool, "whole", ToolRegisterRequest),
    "tools_list": Route(_list_tools, "whole"),
    "tools_remove": Route(_remove_tool, "whole", ToolName),
    # engine state
    "reset_chat": Route(lambda c, _: c.runtime.engine.reset_chat(), "whole"),
    "unload": Route(lambda c, _: c.runtime.engine.unload(), "whole"),
    # control
    "cancel": Route(lambda c, r: c.runtime.engine.abort(str(r.target)), "control", CancelRequest),
    "interrupt": Route(lambda c, _: c.runtime.engine.interrupt(), "control"),
    "boot_timings": Route(lambda c, _: c.boot_timings, "control"),
    "memory_stats": Route(lambda c, _: _memory_stats(c), "control"),
}
