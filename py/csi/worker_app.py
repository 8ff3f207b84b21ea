"""The worker's message protocol, in pure Python: one JSON message in, JSON messages out.

Page -> worker: ``{id, type, ...}`` with type ``load`` (model_ids, device), ``chat``,
``completion``, ``embeddings``, ``csi_complete``, ``csi_chat``, ``llm_infer``, ``llm_embeddings``,
``remote_generate``, ``remote_llm_type``, ``csi_chunk``, ``csi_chunk_with_offsets``,
``csi_select_language``, ``csi_search``, ``csi_documents``, ``csi_document_metadata``,
``index_create``, ``index_put``, ``index_delete``, ``index_list``, ``index_drop`` (each with
``request``; ``index_create`` and ``index_put`` report progress), ``skills_register`` (name, source), ``skills_list``,
``skills_metadata`` (name), ``skills_run`` (name, input), ``skills_remove`` (name), ``reset_chat``,
``unload``, ``cancel`` (target), ``interrupt``.
Worker -> page: ``{id, type: "progress", progress}``, ``{id, type: "chunk", chunk}`` (one per
streamed chunk, pushed without a round trip), ``{id, type: "result", result}`` (ends every
request; ``null`` after a stream) or ``{id, type: "error", error: {name, message, param}}``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from json import dumps, loads
from typing import Any

from . import index_faces, openai_face, seed_faces, text_faces
from .engine import Engine
from .errors import InvalidInputError, error_to_dict
from .skill_registry import SkillRegistry

Post = Callable[[str], None]

# message type -> (stream, whole) face functions (engine, request, request_id)
_STREAMABLE = {
    "chat": (openai_face.chat_completion_stream, openai_face.chat_completion),
    "completion": (openai_face.completion_stream, openai_face.completion),
}

# message type -> face function(engine, request) answering in one piece
_SEED_FACES = {
    "csi_complete": seed_faces.csi_complete,
    "csi_chat": seed_faces.csi_chat,
    "llm_infer": seed_faces.llm_infer,
    "llm_embeddings": seed_faces.llm_generate_embeddings,
    "remote_generate": seed_faces.remote_generate,
    "remote_llm_type": seed_faces.remote_llm_type,
    "csi_chunk": text_faces.csi_chunk,
    "csi_chunk_with_offsets": text_faces.csi_chunk_with_offsets,
    "csi_select_language": text_faces.csi_select_language,
    "csi_search": index_faces.csi_search,
    "csi_documents": index_faces.csi_documents,
    "csi_document_metadata": index_faces.csi_document_metadata,
    "index_delete": index_faces.index_delete,
    "index_list": index_faces.index_list,
    "index_drop": index_faces.index_drop,
}

# message type -> face function(engine, request, progress) that reports progress as it goes
_PROGRESS_FACES = {
    "index_create": index_faces.index_create,
    "index_put": index_faces.index_put,
}


class WorkerApp:
    """Dispatches page messages to the engine and posts replies through ``post``."""

    def __init__(self, engine: Engine, post: Post, skills: SkillRegistry | None = None) -> None:
        self.engine = engine
        self._post = post
        self.skills = skills or SkillRegistry(engine)

    def send(self, message: dict[str, Any]) -> None:
        self._post(dumps(message, separators=(",", ":")))

    def interrupt(self) -> None:
        self.engine.interrupt()

    def cancel(self, request_id: str) -> None:
        self.engine.cancel(request_id)

    async def handle(self, raw: str) -> None:
        """Serve one message; every request ends with exactly one ``result`` or ``error``."""
        request_id = None
        try:
            msg = loads(raw)
            if not isinstance(msg, dict) or not isinstance(msg.get("type"), str):
                raise InvalidInputError("a message must be an object with a string `type`", "type")
            request_id = msg.get("id")
            result = await self._dispatch(msg["type"], msg, request_id)
            self.send({"id": request_id, "type": "result", "result": result})
        except BaseException as exc:  # noqa: BLE001 - everything must reach the page
            self.send({"id": request_id, "type": "error", "error": error_to_dict(exc)})
            if not isinstance(exc, Exception):
                raise

    async def _dispatch(self, kind: str, msg: dict[str, Any], request_id: str | None) -> Any:
        engine = self.engine
        if kind == "load":
            started = time.perf_counter()
            ids = msg.get("model_ids")
            if isinstance(ids, str):
                ids = [ids]
            infos = await engine.load(
                ids, msg.get("device") or "wasm",
                lambda p: self.send({"id": request_id, "type": "progress", "progress": p}),
            )
            return {"models": [vars(i) for i in infos], "load_s": time.perf_counter() - started}
        if kind in _STREAMABLE:
            stream, whole = _STREAMABLE[kind]
            request = msg.get("request")
            if isinstance(request, dict) and request.get("stream"):
                head = '{"id":' + dumps(request_id) + ',"type":"chunk","chunk":'
                async for chunk in stream(engine, request, request_id):
                    self._post(head + chunk.model_dump_json() + "}")
                return None
            return (await whole(engine, request, request_id)).model_dump(mode="json")  # type: ignore[arg-type]
        if kind in _SEED_FACES:
            return await _SEED_FACES[kind](engine, msg.get("request"))
        if kind in _PROGRESS_FACES:
            return await _PROGRESS_FACES[kind](
                engine, msg.get("request"),
                lambda p: self.send({"id": request_id, "type": "progress", "progress": p}),
            )
        if kind.startswith("skills_"):
            return await self._skills(kind, msg)
        if kind == "embeddings":
            return (await engine.embeddings(msg.get("request"))).model_dump(mode="json")  # type: ignore[arg-type]
        if kind == "reset_chat":
            await engine.reset_chat()
            return None
        if kind == "unload":
            await engine.unload()
            return None
        if kind == "cancel":
            engine.cancel(str(msg.get("target")))
            return None
        if kind == "interrupt":
            engine.interrupt()
            return None
        raise InvalidInputError(f"unknown message type {kind!r}", "type")

    async def _skills(self, kind: str, msg: dict[str, Any]) -> Any:
        skills = self.skills
        if kind == "skills_register":
            return await skills.register(msg.get("name"), msg.get("source"))
        if kind == "skills_list":
            return await skills.list()
        if kind == "skills_metadata":
            return await skills.metadata(msg.get("name"))
        if kind == "skills_run":
            return await skills.run(msg.get("name"), msg.get("input"))
        if kind == "skills_remove":
            await skills.remove(msg.get("name"))
            return None
        raise InvalidInputError(f"unknown message type {kind!r}", "type")
