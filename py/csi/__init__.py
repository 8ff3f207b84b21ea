"""csi: the Python engine of csi-web.

A pure-Python core (request models, decode loop, streaming, engine) that runs under Pyodide in
a Web Worker against a JS bridge, and in CPython against ``csi.backends.cpython``. The layers,
lowest first: ``errors`` and ``wire``; ``core`` (engine, decode loop, backend protocol); ``text``
and ``index`` (services); ``faces`` (one per API); ``skills`` and ``sdk``; ``runtime`` (the
composition root); ``backends`` and ``worker`` (where it runs).
"""

from .core.backend import Backend, Embeddings, ModelInfo
from .core.engine import Engine
from .core.generation import Generation
from .core.request import GenerationParams, GenerationRequest, SamplingParams
from .errors import (
    ContextWindowExceededError,
    CsiError,
    InternalError,
    InvalidInputError,
    ModelLoadError,
    ModelNotSupportedError,
    NotFoundError,
    blame,
)
from .runtime import Runtime, build_runtime

__version__ = "0.1.0"

__all__ = [
    "Backend",
    "ContextWindowExceededError",
    "CsiError",
    "Embeddings",
    "Engine",
    "Generation",
    "GenerationParams",
    "GenerationRequest",
    "InternalError",
    "InvalidInputError",
    "ModelInfo",
    "ModelLoadError",
    "ModelNotSupportedError",
    "NotFoundError",
    "Runtime",
    "SamplingParams",
    "blame",
    "build_runtime",
]
