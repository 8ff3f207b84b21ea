"""csi: the Python engine of csi-web.

A pure-Python core (request models, decode loop, streaming, engine) that runs under Pyodide in
a Web Worker against a JS bridge, and in CPython against ``csi.cpython_backend``.
"""

from .backend import Backend, Embeddings, ModelInfo, SamplingParams
from .engine import Engine
from .errors import (
    ContextWindowExceededError,
    CsiError,
    InternalError,
    InvalidInputError,
    ModelLoadError,
    ModelNotSupportedError,
)

__version__ = "0.1.0"

__all__ = [
    "Backend",
    "ContextWindowExceededError",
    "CsiError",
    "Embeddings",
    "Engine",
    "InternalError",
    "InvalidInputError",
    "ModelInfo",
    "ModelLoadError",
    "ModelNotSupportedError",
    "SamplingParams",
]
