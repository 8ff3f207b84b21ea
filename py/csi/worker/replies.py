"""The replies of the worker's own messages (loading, tools, aliases, remotes, its figures); the
faces' messages answer with the faces' reply models, the skill messages with ``csi.skills.wire``'s."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, JsonValue, RootModel

from ..core.backend import ModelKind
from ..wire import Reply


class LoadedModel(Reply):
    """A model ``load`` loaded. ``remote``: the base URL of the server serving it (``None``: it
    runs here); ``fallback``: why a ``prefer-local`` model is on its server (the local load's error)."""

    model_config = ConfigDict(from_attributes=True)

    model_id: str
    kind: ModelKind
    context_length: int
    eos_token_ids: list[int]
    vocab_size: int
    remote: str | None
    fallback: str | None


class LoadResult(Reply):
    models: list[LoadedModel]
    load_s: float
    """How long the load took, in seconds."""


class ModelAliases(RootModel[dict[str, str]]):
    """The aliases set: model name -> the loaded model serving it."""


class ConfiguredRemoteModel(Reply):
    """A model ``set_remotes`` configured: its id, its server and its name there, how it is served."""

    id: str
    base_url: str
    server_model: str
    policy: Literal["remote", "prefer-local"]


class ConfiguredRemoteModels(RootModel[list[ConfiguredRemoteModel]]):
    """The models configured, in the order the servers named them."""


class ToolDescription(Reply):
    """A tool as skills see it (pharia-skill's ``Tool``)."""

    name: str
    description: str
    input_schema: dict[str, JsonValue]


class ToolDescriptions(RootModel[list[ToolDescription]]):
    """Every tool, by name."""


class BootTimings(Reply):
    """How long the worker's boot took, in seconds: Pyodide, the wheels, Python's imports; and
    whether Python started from a memory snapshot of an earlier visit (``used``), kept one for the
    next visits (``made``), or neither (``none``: worker/pyodide_boot.js); and the same for the
    bytecode of the wheels' modules (worker/pyc_cache.js)."""

    pyodide_s: float
    wheels_s: float
    imports_s: float
    pyodide_snapshot: Literal["used", "made", "none"] = "none"
    bytecode: Literal["used", "made", "none"] = "none"


class BootTimingsReply(RootModel[BootTimings | None]):
    """The boot's timings (``None`` where there was no boot to time, as in CPython)."""


class MemoryStats(Reply):
    """What the worker holds: its WebAssembly memories and GPU buffers (worker/memory_stats.js; only
    in the worker), the models loaded and the loads it began before Python asked for them (while
    Python boots: 0 once the first load has its answer), and how many objects Python's garbage
    collector tracks (``len(gc.get_objects())``: unlike the wasm memory, it falls when they are
    freed). ``*_wasm_bytes``: the size of Pyodide's, onnxruntime-web's and any other module's
    memory (``None`` before that module is instantiated); wasm memories grow and never shrink, so
    each is the high-water mark of what its heap needed. ``gpu_buffer_bytes``: the sizes of the GPU
    buffers the worker created and has neither destroyed nor let the garbage collector take
    (``None`` where the worker has no WebGPU)."""

    pyodide_wasm_bytes: int | None = None
    ort_wasm_bytes: int | None = None
    other_wasm_bytes: int | None = None
    gpu_buffer_bytes: int | None = None
    gpu_buffers: int | None = None
    models: int | None = None
    preloads: int | None = None
    python_objects: int
