"""The Backend, Host and IndexStore that run in the Web Worker, over the JS bridge
(worker/bridge/), host (worker/host.js) and document store (worker/doc_store.js).

The only package of ``csi`` that imports ``pyodide``; ``csi.worker.main`` imports it, nothing else
does. The backend is one module per role (loading, tokenizers, generation, embeddings, insides)
over the shared ``BridgeState``.
"""

from __future__ import annotations

from pyodide.ffi import run_sync

from .decoding import PyodideDecoding
from .embeddings import PyodideEmbedder
from .host import PyodideHost
from .index_store import PyodideIndexStore
from .insides import PyodideInsides
from .loading import PyodideLoading
from .page_tools import PyodidePageTools
from .prompt_caches import PyodidePromptCaches
from .tokenizers import PyodideTokenizers

__all__ = ["PyodideBackend", "PyodideHost", "PyodideIndexStore", "PyodidePageTools", "PyodidePromptCaches", "run_sync"]


class PyodideBackend(PyodideLoading, PyodideTokenizers, PyodideDecoding, PyodideEmbedder, PyodideInsides):
    """``Backend`` over the JS ``Bridge`` object (transformers.js + onnxruntime-web)."""
