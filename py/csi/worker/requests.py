"""The bodies of the worker's own messages (loading, tools, aliases, remotes, cancelling); the
faces' messages carry the faces' request models, the skill messages those of ``csi.skills.wire``."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, JsonValue

from ..wire import Strict

Device = Literal["wasm", "webgpu", "auto"]
DEFAULT_DEVICE: Device = "wasm"


class RemoteModelSpec(Strict):
    """One model of a server: the id requests use, how it is served, its name on the server."""

    id: str
    policy: Literal["remote", "prefer-local"] = "remote"
    """``remote``: always the server; ``prefer-local``: loaded here, the server when that load fails."""
    server_model: str | None = None
    """The model's name on the server (``None``: ``id``)."""


class RemoteServer(Strict):
    """An OpenAI-compatible server (llama.cpp, vLLM, ...) and the models it serves."""

    base_url: str
    """Where its API is, e.g. ``http://127.0.0.1:8080/v1``."""
    api_key: str | None = None
    timeout_s: Annotated[float, Field(gt=0, le=3600)] = 120.0
    """How long to wait for progress: the answer to begin, its next token, a whole JSON answer
    (keep-alives and trickled bytes do not count)."""
    deadline_s: Annotated[float, Field(gt=0, le=86400)] = 600.0
    """The longest one request may take, however steadily the server sends."""
    models: Annotated[list[str | RemoteModelSpec], Field(min_length=1, max_length=256)]


class LoadRequest(Strict):
    """``load``: these models (one id or several), unloading the others."""

    model_ids: str | list[str]
    device: Device | None = DEFAULT_DEVICE
    """Where the models run (``None``: the default, WASM)."""
    hub: str | None = None
    """The base URL of a Hugging Face Hub mirror for models that are not built in."""
    gguf_memory_budget: Annotated[int, Field(ge=0, le=2**53)] | None = None
    """The bytes a GGUF file's weights may take as float32 (exact); past it they are held as int8
    (``None``: 1.5 GB)."""
    remotes: list[RemoteServer] | None = None
    """Servers of remote models, set (as by ``set_remotes``) before the load (``None``: as they are)."""


class ModelAliasesRequest(Strict):
    """``set_model_aliases``: model names skills and requests may use -> the loaded model that serves them."""

    aliases: dict[str, str]


class RemotesRequest(Strict):
    """``set_remotes``: the servers of remote models (replacing those set before; ``[]``: none)."""

    remotes: Annotated[list[RemoteServer], Field(max_length=32)]


class CancelRequest(Strict):
    """``cancel``: end the request whose id is ``target``."""

    target: str | int


class ToolRegisterRequest(Strict):
    """``tools_register``: a tool the page runs (its function stays on the page), by ``name``."""

    name: str
    """1-64 letters, digits, '_' or '-'; a tool of the same name is replaced."""
    description: str = ""
    input_schema: dict[str, JsonValue]
    """The JSON Schema of the tool's arguments (an object)."""


class ToolName(Strict):
    """``tools_remove``: the tool's name."""

    name: str
