"""pharia-skill's ``Csi`` served by the engine and its services through the pharia faces (their own
request checks): the SDK's convenience methods (``chat``, ``chat_stream`` with its tool loop,
``search``, ...) are the SDK's own, built on the primitives implemented here.

A skill is plain synchronous Python, the engine is async. ``run_sync`` bridges the two: in the
worker it is Pyodide's ``run_sync`` (JS promise integration suspends the skill's stack while the
engine works); in CPython it waits on an event loop running in another thread.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from pharia_skill import (
    ChatParams,
    ChatRequest,
    ChatResponse,
    ChatStreamResponse,
    Chunk,
    ChunkRequest,
    Completion,
    CompletionParams,
    CompletionRequest,
    CompletionStreamResponse,
    Csi,
    Document,
    DocumentPath,
    ExplanationRequest,
    InvokeRequest,
    JsonSerializable,
    Language,
    Message,
    SearchRequest,
    SearchResult,
    SelectLanguageRequest,
    TextScore,
    Tool,
    ToolError,
    ToolOutput,
    ToolResult,
    TopLogprobs,
)

from ..core.request import GenerationRequest
from ..core.scope import Scope
from ..errors import CsiError, NotSupportedError, SkillInterrupt
from ..faces.pharia import inference, text
from ..index.types import PathBatch, SearchBatch
from ..wire import parse_batch, parse_request
from .interrupts import checkpoint
from .sdk_wire import (
    chat_request_wire,
    chat_response_from_wire,
    chunk_request_wire,
    completion_from_wire,
    completion_request_wire,
    document_from_wire,
    message_wire,
    path_wire,
    search_request_wire,
    search_result_from_wire,
)
from .streams import EngineChatStream, EngineCompletionStream, EngineEvents

if TYPE_CHECKING:
    from types import ModuleType

    from ..core.engine import Engine
    from ..index.service import DocumentIndex
    from ..mcp.namespaces import McpNamespaces
    from ..text.services import TextServices
    from .page_tools import ToolRegistry

RunSync = Callable[[Awaitable[Any]], Any]

PYTHON_TAG = "<|python_tag|>"


def tool_history(messages: list[Message]) -> list[dict[str, Any]]:
    """The conversation as the chat face takes it, with the SDK's tool turns made structured again:
    an assistant turn ``<|python_tag|>{"type": "function", ...}`` (``ToolCallRequest.as_message``)
    becomes a tool call, and the ``tool`` turn after it that call's result."""
    out: list[dict[str, Any]] = []
    last_call: str | None = None
    for i, m in enumerate(messages):
        wire = message_wire(m)
        if wire["role"] == "assistant" and m.content.startswith(PYTHON_TAG):
            try:
                call = json.loads(m.content[len(PYTHON_TAG):])["function"]
                last_call = f"call_{i}"
                wire = {"role": "assistant", "content": None, "tool_calls": [
                    {"id": last_call, "name": call["name"], "arguments": json.dumps(call["parameters"])}]}
            except (ValueError, KeyError, TypeError):
                pass
        elif wire["role"] == "tool" and last_call is not None:
            wire["tool_call_id"] = last_call
            last_call = None
        out.append(wire)
    return out


def loop_run_sync(loop: asyncio.AbstractEventLoop) -> RunSync:
    """A ``run_sync`` for CPython: wait, from another thread, for an awaitable run on ``loop``."""

    async def wrap(aw: Awaitable[Any]) -> Any:
        return await aw

    def run_sync(aw: Awaitable[Any]) -> Any:
        try:
            return asyncio.run_coroutine_threadsafe(wrap(aw), loop).result()
        finally:
            checkpoint()  # a skill that came due while it waited stops here

    return run_sync


class EngineCsi(Csi):
    """The CSI over the engine, the text services, the document index (built on first use) and the
    tools; every call validates like the page-facing faces do."""

    def __init__(self, engine: Engine, text: TextServices, index: Callable[[], DocumentIndex],
                 run_sync: RunSync, scope: Scope | None = None, tools: ToolRegistry | None = None,
                 mcp: McpNamespaces | None = None, namespace: str | None = None) -> None:
        self.engine = engine
        self.text = text
        self._index = index
        self._run = run_sync
        self.scope = scope
        """The message the calls serve (a skill run's): cancelling it cancels them."""
        self.tools = tools
        self.mcp = mcp
        self.namespace = namespace
        """Whose MCP servers' tools the skill sees, beside the page's (``None``: the page's only)."""
        self._open: list[EngineEvents] = []

    def scoped(self, scope: Scope, namespace: str | None = None) -> EngineCsi:
        """The same CSI, its calls serving ``scope`` (and its streams its own), its tools those of
        ``namespace`` (``None``: the same namespace)."""
        return EngineCsi(self.engine, self.text, self._index, self._run, scope, self.tools, self.mcp,
                         self.namespace if namespace is None else namespace)

    def _mcp_namespace(self) -> str | None:
        """The namespace whose MCP servers serve tools here, if any are connected."""
        return self.namespace if self.mcp is not None and self.mcp.serves(self.namespace) else None

    @property
    def index(self) -> DocumentIndex:
        return self._index()

    @property
    def _index_face(self) -> ModuleType:
        from ..faces.pharia import index  # noqa: PLC0415 - loaded on first use

        return index

    # ---- streams: one generation per model at a time, so an open stream is read whole before the
    # skill's next inference call rather than left holding the model

    def _free_models(self) -> None:
        for events in self._open:
            events.drain()
        self._open = [e for e in self._open if not e.done]

    def close_streams(self) -> None:
        """End the streams the skill left unread (when its run ends)."""
        interrupted: SkillInterrupt | None = None
        for events in self._open:
            try:
                events.close()
            except SkillInterrupt as exc:  # the run is due: still close the others
                interrupted = exc
        self._open = []
        if interrupted is not None:
            raise interrupted

    def _events(self, make: Callable[[], GenerationRequest], top: int | None) -> EngineEvents:
        self._free_models()

        async def accept() -> Any:
            return self.engine.generate(make(), self.scope)

        events = EngineEvents(self._run(accept()), self._run, top)
        self._open.append(events)
        return events

    # ---- inference

    def complete_concurrent(self, requests: Sequence[CompletionRequest]) -> list[Completion]:
        self._free_models()
        out = self._run(inference.complete(self.engine, parse_batch(
            inference.CompleteBatch, [completion_request_wire(r) for r in requests]), self.scope))
        return [completion_from_wire(d) for d in out.model_dump()]

    def chat_concurrent(self, requests: Sequence[ChatRequest]) -> list[ChatResponse]:
        self._free_models()
        batch = parse_batch(inference.ChatBatch, [chat_request_wire(r) for r in requests])
        out = self._run(inference.chat(self.engine, batch, self.scope))
        return [chat_response_from_wire(d) for d in out.model_dump()]

    def _completion_stream(self, model: str, prompt: str, params: CompletionParams) -> CompletionStreamResponse:
        request = parse_request(inference.CompletionRequest, completion_request_wire(
            CompletionRequest(model, prompt, params)))
        return EngineCompletionStream(self._events(request.to_generation_request, _top(params)))

    def chat_stream_step(self, model: str, messages: list[Message], params: ChatParams | None = None,
                         tools: list[Tool] | None = None) -> ChatStreamResponse:
        """The SDK's step, with ``tools`` offered the way an OpenAI-compatible server offers them:
        written by the model's own chat template (the format it was trained on) and decoded under
        the engine's tool grammar, so a call names one of ``tools`` with arguments valid under its
        schema. A call reaches the SDK as the JSON it parses, so its tool loop (``chat_stream``
        with ``tools=[...]``) runs unchanged; the calls and results that loop adds to the
        conversation go back to the template as calls and results."""
        params = params or ChatParams()
        if not tools:
            return self._chat_stream(model, messages, params)
        wire = chat_request_wire(ChatRequest(model, messages, params))
        wire["messages"] = tool_history(messages)
        wire["params"]["tools"] = [{"name": t.name, "description": t.description, "parameters": t.input_schema}
                                   for t in tools]
        wire["params"]["tool_choice"] = "auto"
        request = parse_request(inference.ChatRequest, wire)
        return EngineChatStream(self._events(request.to_generation_request, _top(params)))

    def _chat_stream(self, model: str, messages: list[Message], params: ChatParams) -> ChatStreamResponse:
        request = parse_request(inference.ChatRequest, chat_request_wire(ChatRequest(model, messages, params)))
        return EngineChatStream(self._events(request.to_generation_request, _top(params)))

    def explain_concurrent(self, requests: Sequence[ExplanationRequest]) -> list[list[TextScore]]:
        raise NotSupportedError("`explain` is not supported by csi-web's engine: it has no attention "
                                "manipulation to attribute a completion to parts of its prompt", "explain")

    # ---- text

    def chunk_concurrent(self, requests: Sequence[ChunkRequest]) -> list[list[Chunk]]:
        wire = [chunk_request_wire(r) for r in requests]
        out = self._run(text.chunk_with_offsets(self.text, parse_batch(text.ChunkWithOffsetBatch, wire)))
        return [[Chunk(c.text, c.character_offset) for c in chunks] for chunks in out.root]

    def select_language_concurrent(self, requests: Sequence[SelectLanguageRequest]) -> list[Language | None]:
        wire = [{"text": r.text, "languages": [Language(code).value for code in r.languages]} for r in requests]
        out = self._run(text.select_language(self.text, parse_batch(text.SelectLanguageBatch, wire)))
        return [None if code is None else Language(code) for code in out.root]

    # ---- document index

    def search_concurrent(self, requests: Sequence[SearchRequest]) -> list[list[SearchResult]]:
        batch = parse_batch(SearchBatch, [search_request_wire(r) for r in requests])
        out = self._run(self._index_face.search(self.index, batch, self.scope))
        return [[search_result_from_wire(d) for d in results] for results in out.model_dump()]

    def documents(self, document_paths: Sequence[DocumentPath]) -> list[Document]:
        paths = parse_batch(PathBatch, [path_wire(p) for p in document_paths])
        out = self._run(self._index_face.documents(self.index, paths))
        return [document_from_wire(d) for d in out.model_dump()]

    def documents_metadata(self, document_paths: Sequence[DocumentPath]) -> list[JsonSerializable]:
        result: list[JsonSerializable] = self._run(self._index_face.document_metadata(
            self.index, parse_batch(PathBatch, [path_wire(p) for p in document_paths]))).root
        return result

    # ---- tools

    def list_tools(self) -> list[Tool]:
        """The page's tools, then those of the namespace's MCP servers (a page tool's name wins)."""
        tools = [Tool(t.name, t.description, t.input_schema) for t in (self.tools.list() if self.tools else [])]
        namespace, mcp = self._mcp_namespace(), self.mcp
        if namespace is not None and mcp is not None:
            names = {t.name for t in tools}
            served = self._run(mcp.list_tools(namespace, self.scope))
            tools += [Tool(t.name, t.description or "", t.input_schema) for t in served if t.name not in names]
        return tools

    def invoke_tool_concurrent(self, requests: Sequence[InvokeRequest]) -> list[ToolResult]:
        """Each call's output, or a ``ToolError`` when the tool itself failed; an unknown tool or
        arguments its schema refuses are typed errors (``InvalidInputError`` naming the field)."""
        if self.tools is None:
            raise NotSupportedError("no tools are available here", "name")
        tools, mcp, namespace = self.tools, self.mcp, self._mcp_namespace()

        async def invoke(name: str, arguments: dict[str, Any]) -> list[str]:
            if namespace is None or mcp is None or tools.has(name):
                return await tools.invoke(name, arguments, self.scope)
            return await mcp.invoke(namespace, name, arguments, self.scope)

        async def invoke_all() -> list[ToolResult]:
            out: list[ToolResult] = []
            for r in requests:
                try:
                    out.append(ToolOutput(await invoke(r.name, r.arguments)))
                except CsiError:
                    raise
                except Exception as exc:  # noqa: BLE001 - the tool's own failure goes to the skill
                    out.append(ToolError(getattr(exc, "message", None) or str(exc) or type(exc).__name__))
            return out

        results: list[ToolResult] = self._run(invoke_all())
        return results


def _top(params: CompletionParams | ChatParams) -> int | None:
    if params.logprobs == "no":
        return None
    return params.logprobs.top if isinstance(params.logprobs, TopLogprobs) else 0


