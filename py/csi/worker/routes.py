"""The worker's message types, declared once: type -> handler and mode (worker/protocol.js is the
JS side of the same table; a test checks that they agree).

Modes: ``whole`` answers with one ``result``; ``stream`` answers with one ``chunk`` message per
chunk and then ``result: null`` when the handler returns an async iterator (``stream: true``), or
like ``whole`` otherwise; ``progress`` posts ``progress`` messages before its ``result``;
``control`` acts at once, between two tokens of whatever is running, and answers at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..faces import remote_llm, spin
from ..faces.openai import serving as openai
from ..faces.pharia import inference, text

if TYPE_CHECKING:
    from types import ModuleType

    from ..runtime import Runtime

Mode = Literal["whole", "stream", "progress", "control"]


@dataclass(frozen=True)
class Call:
    """What a handler gets: the services, the message, where to report progress, the boot figures."""

    runtime: Runtime
    msg: dict[str, Any]
    request_id: Any
    progress: Callable[[dict[str, Any]], None]
    boot_timings: dict[str, float] | None = None

    @property
    def request(self) -> Any:
        return self.msg.get("request")


@dataclass(frozen=True)
class Route:
    handler: Callable[[Call], Any]
    mode: Mode
    fields: tuple[str, ...] = ("request",)
    """The message's fields besides ``id`` and ``type``; others are refused."""


def _index() -> ModuleType:
    """The document index's face, imported on first use (its models cost start-up time)."""
    from ..faces.pharia import index  # noqa: PLC0415

    return index


async def _load(c: Call) -> dict[str, Any]:
    """``load``: one model id or several, loaded together (replacing the others)."""
    started = time.perf_counter()
    ids: Any = c.msg.get("model_ids")  # checked by the engine
    infos = await c.runtime.engine.load([ids] if isinstance(ids, str) else ids, c.msg.get("device") or "wasm",
                                        c.progress, c.msg.get("hub"))
    return {"models": [vars(i) for i in infos], "load_s": time.perf_counter() - started}


ROUTES: dict[str, Route] = {
    "load": Route(_load, "progress", ("model_ids", "device", "hub")),
    # OpenAI / WebLLM (seed 004)
    "chat": Route(lambda c: openai.create_chat_completion(c.runtime.engine, c.request, c.request_id), "stream"),
    "completion": Route(lambda c: openai.create_completion(c.runtime.engine, c.request, c.request_id), "stream"),
    "embeddings": Route(lambda c: openai.embeddings(c.runtime.engine, c.request), "whole"),
    # CSI inference, chunking, language, document index (seed 001)
    "csi_complete": Route(lambda c: inference.complete(c.runtime.engine, c.request), "whole"),
    "csi_chat": Route(lambda c: inference.chat(c.runtime.engine, c.request), "whole"),
    "csi_chunk": Route(lambda c: text.chunk(c.runtime.text, c.request), "whole"),
    "csi_chunk_with_offsets": Route(lambda c: text.chunk_with_offsets(c.runtime.text, c.request), "whole"),
    "csi_select_language": Route(lambda c: text.select_language(c.runtime.text, c.request), "whole"),
    "csi_search": Route(lambda c: _index().search(c.runtime.index, c.request), "whole"),
    "csi_documents": Route(lambda c: _index().documents(c.runtime.index, c.request), "whole"),
    "csi_document_metadata": Route(lambda c: _index().document_metadata(c.runtime.index, c.request), "whole"),
    # the document index's writes
    "index_create": Route(lambda c: _index().create(c.runtime.index, c.request, c.progress), "progress"),
    "index_put": Route(lambda c: _index().put(c.runtime.index, c.request, c.progress), "progress"),
    "index_delete": Route(lambda c: _index().delete(c.runtime.index, c.request), "whole"),
    "index_list": Route(lambda c: _index().list_(c.runtime.index, c.request), "whole"),
    "index_drop": Route(lambda c: _index().drop(c.runtime.index, c.request), "whole"),
    # Spin llm (seeds 000 + 002) and RemoteLLM (seed 003)
    "llm_infer": Route(lambda c: spin.infer(c.runtime.engine, c.request), "whole"),
    "llm_embeddings": Route(lambda c: spin.generate_embeddings(c.runtime.engine, c.request), "whole"),
    "remote_generate": Route(lambda c: remote_llm.generate(c.runtime.engine, c.request), "whole"),
    "remote_llm_type": Route(lambda c: remote_llm.llm_type(c.runtime.engine, c.request), "whole"),
    "remote_guts": Route(lambda c: remote_llm.generational_guts(c.runtime.engine, c.request), "whole"),
    # skills
    "skills_register": Route(lambda c: c.runtime.skills.register(c.msg.get("name"), c.msg.get("source"),
                                                                 c.msg.get("time_limit_ms")), "whole",
                             ("name", "source", "time_limit_ms")),
    "skills_list": Route(lambda c: c.runtime.skills.list(), "whole", ()),
    "skills_metadata": Route(lambda c: c.runtime.skills.metadata(c.msg.get("name")), "whole", ("name",)),
    "skills_run": Route(lambda c: c.runtime.skills.run(c.msg.get("name"), c.msg.get("input"),
                                                       c.msg.get("time_limit_ms")), "whole",
                        ("name", "input", "time_limit_ms")),
    "skills_remove": Route(lambda c: c.runtime.skills.remove(c.msg.get("name")), "whole", ("name",)),
    # engine state
    "reset_chat": Route(lambda c: c.runtime.engine.reset_chat(), "whole", ()),
    "unload": Route(lambda c: c.runtime.engine.unload(), "whole", ()),
    # control
    "cancel": Route(lambda c: c.runtime.engine.abort(str(c.msg.get("target"))), "control", ("target",)),
    "interrupt": Route(lambda c: c.runtime.engine.interrupt(), "control", ()),
    "boot_timings": Route(lambda c: c.boot_timings, "control", ()),
}
