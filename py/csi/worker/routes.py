"""The worker's message types, declared once: type -> handler, mode, request model and reply model.
Every page message is ``{id, type, request}``; the envelope (``csi.worker.app``) parses ``request`` as
the route's model, once, and hands the handler that typed model; the handler answers with the
route's reply model (a stream: with its chunk model), which the envelope dumps for the page.
``route`` and ``streamed`` make mypy hold each handler to its route's models. worker/wire_types.d.ts
(every body and reply) and the message types and modes of worker/protocol.js are generated from
this table by ``buildtools/codegen/wire_types.py``; tests check that they are current.

Modes: ``whole`` answers with one ``result``; ``stream`` answers with one ``chunk`` message per
chunk and then ``result: null`` when the handler returns an async iterator (``stream: true``), or
like ``whole`` otherwise; ``progress`` posts ``progress`` messages before its ``result``;
``control`` acts at once, between two tokens of whatever is running, and answers at once.
"""

from __future__ import annotations

import gc
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from pydantic import BaseModel

from ..core.scope import Scope
from ..errors import InvalidInputError
from ..faces import chat_tokens, remote_llm, spin
from ..faces.openai import protocol as openai_protocol
from ..faces.openai import responses
from ..faces.openai import serving as openai
from ..faces.openai.responses_api import objects as response_objects
from ..faces.openai.responses_api import protocol as response_protocol
from ..faces.openai.responses_api import serving as responses_api
from ..faces.pharia import index, inference, text
from ..index import types as index_types
from ..skills.page_tools import PageCall, page_invoker
from ..skills.wire import (
    SkillEvent,
    SkillInfo,
    SkillList,
    SkillMetadata,
    SkillName,
    SkillOutput,
    SkillRegisterRequest,
    SkillRunRequest,
    SkillStreamRequest,
)
from ..wire import NULL, Null, parse_batch, parse_request
from . import prompt_caches, remotes, tool_servers
from .replies import (
    BootTimings,
    BootTimingsReply,
    ConfiguredRemoteModels,
    LoadedModel,
    LoadResult,
    MemoryStats,
    ModelAliases,
    ToolDescription,
    ToolDescriptions,
)
from .requests import (
    DEFAULT_DEVICE,
    CancelRequest,
    LoadRequest,
    ModelAliasesRequest,
    RemotesRequest,
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
    boot_timings: BootTimings | None = None
    call_page: PageCall | None = None
    """Runs a tool the page registered (``None``: no page, as in CPython)."""
    memory: Callable[[], dict[str, Any]] | None = None
    """What the worker holds in memory (``None``: not measured, as in CPython)."""
    prompt_caches: prompt_caches.PromptCacheStore | None = None
    """The prompt caches kept beyond the page (``None``: none are, as in CPython)."""

    @property
    def progress(self) -> Callable[[dict[str, Any]], None]:
        assert self.scope.progress is not None
        return self.scope.progress


@dataclass(frozen=True)
class Route:
    """How one message type is served. ``request`` is the body's model (``None``: the message has
    no body); a ``batch`` body is a JSON array, validated as the model's field of that name (so
    field paths read ``requests[i]...``); an ``optional`` body may be left out (it reads as ``{}``).
    ``reply`` is the result's model, ``chunk`` each streamed chunk's (the page's types come from
    them). Made by ``route`` or ``streamed``, which check the handler against them."""

    handler: Callable[[Call, Any], Any]
    mode: Mode
    request: type[BaseModel] | None = None
    batch: str | None = None
    optional: bool = False
    reply: type[BaseModel] = field(default=Null, kw_only=True)
    chunk: type[BaseModel] | None = field(default=None, kw_only=True)

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


Q = TypeVar("Q", bound=BaseModel)
R = TypeVar("R", bound=BaseModel)
C = TypeVar("C", bound=BaseModel)


@overload
def route(handler: Callable[[Call, None], Awaitable[R] | R], mode: Mode, request: None, *,
          reply: type[R]) -> Route: ...


@overload
def route(handler: Callable[[Call, Q], Awaitable[R] | R], mode: Mode, request: type[Q], *, reply: type[R],
          batch: str | None = None, optional: bool = False) -> Route: ...


def route(handler: Callable[[Call, Any], Any], mode: Mode, request: type[BaseModel] | None, *,
          reply: type[BaseModel], batch: str | None = None, optional: bool = False) -> Route:
    """A route whose handler takes ``request``'s model (``None``: nothing) and answers ``reply``'s."""
    return Route(handler, mode, request, batch, optional, reply=reply)


def streamed(handler: Callable[[Call, Q], Awaitable[R | AsyncIterator[C]]], request: type[Q], *, reply: type[R],
             chunk: type[C]) -> Route:
    """A ``stream`` route: its handler answers ``reply``'s model, or streams ``chunk``'s."""
    return Route(handler, "stream", request, reply=reply, chunk=chunk)


async def _load(c: Call, r: LoadRequest) -> LoadResult:
    """``load``: one model id or several, loaded together (replacing the others)."""
    started = time.perf_counter()
    if r.remotes is not None:
        await remotes.set_remotes(c.runtime.engine, RemotesRequest(remotes=r.remotes))
    ids = [r.model_ids] if isinstance(r.model_ids, str) else r.model_ids
    infos = await c.runtime.engine.load(ids, r.device or DEFAULT_DEVICE, c.progress, r.hub, r.gguf_memory_budget)
    return LoadResult(models=[LoadedModel.model_validate(i) for i in infos], load_s=time.perf_counter() - started)


async def _register_tool(c: Call, r: ToolRegisterRequest) -> ToolDescription:
    """``tools_register``: the page keeps the function; calls reach it through ``c.call_page``.
    Schemas are compiled with fastjsonschema, which the worker fetches the first time."""
    await c.runtime.skills.store.load_packages(["fastjsonschema"])
    spec = c.runtime.tools.register(r.model_dump(), page_invoker(c.call_page, r.name))
    return ToolDescription.model_validate(spec.to_dict())


async def _set_aliases(c: Call, r: ModelAliasesRequest) -> ModelAliases:
    """``set_model_aliases``: other names for loaded models (replacing those set before)."""
    return ModelAliases(c.runtime.engine.aliases.set(r.aliases))


async def _remove_tool(c: Call, r: ToolName) -> Null:
    c.runtime.tools.remove(r.name)
    return NULL


async def _list_tools(c: Call, _: None) -> ToolDescriptions:
    return ToolDescriptions([ToolDescription.model_validate(spec.to_dict()) for spec in c.runtime.tools.list()])


async def _remove_skill(c: Call, r: SkillName) -> Null:
    await c.runtime.skills.remove(r)
    return NULL


async def _reset_chat(c: Call, _: None) -> Null:
    await c.runtime.engine.reset_chat()
    return NULL


async def _unload(c: Call, _: None) -> Null:
    await c.runtime.engine.unload()
    return NULL


def _cancel(c: Call, r: CancelRequest) -> Null:
    c.runtime.engine.abort(str(r.target))
    return NULL


def _interrupt(c: Call, _: None) -> Null:
    c.runtime.engine.interrupt()
    return NULL


def _memory_stats(c: Call, _: None) -> MemoryStats:
    """``memory_stats``: the worker's own figures (its JS: WebAssembly memories, GPU buffers, models)
    and how many objects Python's garbage collector tracks, which, unlike the wasm memory they live
    in, falls again when they are freed (Pyodide has no pymalloc, so no count of memory blocks)."""
    return MemoryStats.model_validate({**(c.memory() if c.memory is not None else {}),
                                       "python_objects": len(gc.get_objects())})


ROUTES: dict[str, Route] = {
    "load": route(_load, "progress", LoadRequest, reply=LoadResult),
    # OpenAI / WebLLM chat completions
    "chat": streamed(lambda c, r: openai.create_chat_completion(c.runtime.engine, r, c.scope),
                     openai_protocol.ChatCompletionRequest, reply=responses.ChatCompletion,
                     chunk=responses.ChatCompletionChunk),
    "completion": streamed(lambda c, r: openai.create_completion(c.runtime.engine, r, c.scope),
                           openai_protocol.CompletionRequest, reply=responses.Completion, chunk=responses.Completion),
    "embeddings": route(lambda c, r: openai.embeddings(c.runtime.engine, r, c.scope), "whole",
                        openai_protocol.EmbeddingRequest, reply=responses.CreateEmbeddingResponse),
    # the Prompt API facade (web/prompt_api.js): a conversation's tokens, nothing generated
    "responses_create": streamed(lambda c, r: responses_api.create_response(c.runtime.engine, c.runtime.responses, r,
                                                                             c.scope),
                                 response_protocol.ResponseCreateRequest, reply=response_objects.ResponseObject,
                                 chunk=response_objects.ResponseStreamEvent),
    "responses_retrieve": route(lambda c, r: responses_api.retrieve(c.runtime.responses, r), "whole",
                                response_protocol.ResponseIdRequest, reply=response_objects.ResponseObject),
    "responses_delete": route(lambda c, r: responses_api.delete(c.runtime.responses, r), "whole",
                              response_protocol.ResponseIdRequest, reply=response_objects.DeletedResponse),
    "responses_input_items": route(lambda c, r: responses_api.list_input_items(c.runtime.responses, r), "whole",
                                   response_protocol.InputItemsRequest, reply=response_objects.InputItemList),
    "chat_tokens": route(lambda c, r: chat_tokens.chat_tokens(c.runtime.engine, r, c.scope), "whole",
                         chat_tokens.ChatTokensRequest, reply=chat_tokens.ChatTokens),
    # pharia:skill CSI: inference, chunking, language, document index
    "csi_complete": route(lambda c, r: inference.complete(c.runtime.engine, r, c.scope), "whole",
                          inference.CompleteBatch, batch="requests", reply=inference.CsiCompletions),
    "csi_chat": route(lambda c, r: inference.chat(c.runtime.engine, r, c.scope), "whole", inference.ChatBatch,
                      batch="requests", reply=inference.CsiChatResponses),
    "csi_chunk": route(lambda c, r: text.chunk(c.runtime.text, r), "whole", text.ChunkBatch, batch="requests",
                       reply=text.ChunkResults),
    "csi_chunk_with_offsets": route(lambda c, r: text.chunk_with_offsets(c.runtime.text, r), "whole",
                                    text.ChunkWithOffsetBatch, batch="requests", reply=text.ChunkWithOffsetResults),
    "csi_select_language": route(lambda c, r: text.select_language(c.runtime.text, r), "whole",
                                 text.SelectLanguageBatch, batch="requests", reply=text.LanguageResults),
    "csi_search": route(lambda c, r: index.search(c.runtime.index, r, c.scope), "whole", index_types.SearchBatch,
                        batch="requests", reply=index_types.SearchResults),
    "csi_documents": route(lambda c, r: index.documents(c.runtime.index, r), "whole", index_types.PathBatch,
                           batch="requests", reply=index_types.Documents),
    "csi_document_metadata": route(lambda c, r: index.document_metadata(c.runtime.index, r), "whole",
                                   index_types.PathBatch, batch="requests", reply=index_types.DocumentMetadata),
    # the document index's writes
    "index_create": route(lambda c, r: index.create(c.runtime.index, r, c.scope), "progress",
                          index_types.CreateIndex, reply=index_types.IndexCreated),
    "index_put": route(lambda c, r: index.put(c.runtime.index, r, c.scope), "progress",
                       index_types.DocumentBatch, batch="documents", reply=index_types.PutResult),
    "index_delete": route(lambda c, r: index.delete(c.runtime.index, r), "whole", index_types.PathBatch,
                          batch="requests", reply=index_types.Deleted),
    "index_list": route(lambda c, r: index.list_(c.runtime.index, r), "whole", index_types.ListRequest,
                        optional=True, reply=index_types.Collections),
    "index_drop": route(lambda c, r: index.drop(c.runtime.index, r), "whole", index_types.CollectionRef,
                        reply=index_types.Dropped),
    # Spin llm (with its stop / max-tokens / finish-reason proposal) and RemoteLLM
    "llm_infer": route(lambda c, r: spin.infer(c.runtime.engine, r, c.scope), "whole", spin.InferRequest,
                       reply=spin.InferencingResult),
    "llm_embeddings": route(lambda c, r: spin.generate_embeddings(c.runtime.engine, r, c.scope), "whole",
                            spin.EmbeddingsRequest, reply=spin.EmbeddingsResult),
    "remote_generate": route(lambda c, r: remote_llm.generate(c.runtime.engine, r, c.scope), "whole",
                             remote_llm.GenerateRequest, reply=remote_llm.GenerateResponse),
    "remote_llm_type": route(lambda c, r: remote_llm.llm_type(c.runtime.engine, r), "whole",
                             remote_llm.LlmTypeRequest, reply=remote_llm.LlmTypeResponse),
    "remote_guts": route(lambda c, r: remote_llm.generational_guts(c.runtime.engine, r, c.scope), "whole",
                         remote_llm.GenerationalGutsRequest, reply=remote_llm.GenerationalGutsResponse),
    # skills
    "skills_register": route(lambda c, r: c.runtime.skills.register(r, c.scope), "whole", SkillRegisterRequest,
                             reply=SkillInfo),
    "skills_list": route(lambda c, _: c.runtime.skills.list(), "whole", None, reply=SkillList),
    "skills_metadata": route(lambda c, r: c.runtime.skills.metadata(r), "whole", SkillName, reply=SkillMetadata),
    "skills_run": route(lambda c, r: c.runtime.skills.run(r, c.scope), "whole", SkillRunRequest, reply=SkillOutput),
    "skills_stream": streamed(lambda c, r: c.runtime.skills.stream(r, c.scope), SkillStreamRequest, reply=Null,
                              chunk=SkillEvent),
    "skills_remove": route(_remove_skill, "whole", SkillName, reply=Null),
    "set_model_aliases": route(_set_aliases, "whole", ModelAliasesRequest, reply=ModelAliases),
    "set_remotes": route(lambda c, r: remotes.set_remotes(c.runtime.engine, r), "whole", RemotesRequest,
                         reply=ConfiguredRemoteModels),
    # tools the page provides, which skills call
    "tools_register": route(_register_tool, "whole", ToolRegisterRequest, reply=ToolDescription),
    "tools_list": route(_list_tools, "whole", None, reply=ToolDescriptions),
    "tools_remove": route(_remove_tool, "whole", ToolName, reply=Null),
    # MCP servers whose tools skills of a namespace call
    "tools_connect": route(lambda c, r: tool_servers.connect(c.runtime.mcp, r, c.scope), "whole",
                           tool_servers.ToolServerConnect, reply=tool_servers.ToolServer),
    "tools_disconnect": route(lambda c, r: tool_servers.disconnect(c.runtime.mcp, r), "whole",
                              tool_servers.ToolServerRef, reply=tool_servers.ToolServers),
    "tools_servers": route(lambda c, _: tool_servers.listed(c.runtime.mcp), "whole", None,
                           reply=tool_servers.ToolServers),
    # prompt caches kept beyond the page (engine.cache)
    "prompt_caches_list": route(lambda c, _: prompt_caches.list_caches(c.prompt_caches), "whole", None,
                                reply=prompt_caches.PromptCacheList),
    "prompt_caches_delete": route(lambda c, r: prompt_caches.delete_caches(c.prompt_caches, r), "whole",
                                  prompt_caches.PromptCacheDeleteRequest, optional=True,
                                  reply=prompt_caches.PromptCacheDeleted),
    "prompt_caches_configure": route(lambda c, r: prompt_caches.configure_caches(c.prompt_caches, r), "whole",
                                     prompt_caches.PromptCacheSettingsRequest, optional=True,
                                     reply=prompt_caches.PromptCacheSettings),
    # engine state
    "reset_chat": route(_reset_chat, "whole", None, reply=Null),
    "unload": route(_unload, "whole", None, reply=Null),
    # control
    "cancel": route(_cancel, "control", CancelRequest, reply=Null),
    "interrupt": route(_interrupt, "control", None, reply=Null),
    "boot_timings": route(lambda c, _: BootTimingsReply(c.boot_timings), "control", None, reply=BootTimingsReply),
    "memory_stats": route(_memory_stats, "control", None, reply=MemoryStats),
}
