"""The Backend for CPython: onnxruntime + tokenizers on the same model folders the site serves.

Lets the core (and skills) run and be tested without a browser. It mirrors worker/bridge/ and
worker/sampling/: same inputs to the ONNX graph, same sampling steps and generator. One module
per role (loading, tokenizers, generation, embeddings, insides) over the shared ``ModelTable``.
This package needs numpy and onnxruntime; the browser wheel leaves it out.
"""

from __future__ import annotations

from .decoding import CPythonDecoding
from .embeddings import CPythonEmbedder
from .insides import CPythonInsides
from .loading import CPythonLoading
from .tokenizers import CPythonTokenizers

__all__ = ["CPythonBackend"]


class CPythonBackend(CPythonLoading, CPythonTokenizers, CPythonDecoding, CPythonEmbedder, CPythonInsides):
    """``Backend`` over onnxruntime (CPU) and HF tokenizers, reading ``models_dir/<id>/``."""
