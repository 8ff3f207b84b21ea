"""Model ids that name GGUF files: a URL, a site path, or a blob: URL the page made for a picked file."""

from __future__ import annotations

import re

MAX_ID = 2000
_ID = re.compile(r"(?:(?:blob:)?https?://[^\s#]+|[A-Za-z0-9_][A-Za-z0-9_./%-]*)(?:#[^\s#/]+)?")


def is_gguf_id(model_id: str) -> bool:
    """Whether a model id names a GGUF file: its path ends in ``.gguf``, or (a blob: URL the page made
    for a picked file) its fragment does; at most 2,000 characters, no ``..`` in a site path."""
    if not isinstance(model_id, str) or len(model_id) > MAX_ID or not _ID.fullmatch(model_id):
        return False
    path, _, fragment = model_id.partition("#")
    if "://" not in path and ".." in path.split("/"):
        return False
    return path.split("?")[0].lower().endswith(".gguf") or fragment.lower().endswith(".gguf")
