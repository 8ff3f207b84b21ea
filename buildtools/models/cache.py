"""The models built into .cache/models, each once and again only when its sources change: the
site's built-in models, the Hub-only test model and the bench's shapes."""

from __future__ import annotations

import hashlib
import re
import shutil
from collections.abc import Callable
from pathlib import Path

from ..deps.deps import CACHE, log

HERE = Path(__file__).parent
BUILTIN_IDS = ("smollm2-135m-instruct", "tiny-chat", "all-minilm-l6-v2", "tiny-gpt2")  # as build_models() makes them

# Which room of buildtools/ a module sits in is no part of what it builds: a source is hashed with
# the rooms taken out of its imports and module paths (``from ..deps.deps import`` reads as
# ``from .deps import``, ``buildtools.models.minilm`` as ``buildtools.minilm``), so moving a module
# between rooms leaves the stamps of the models already built valid (.cache is shared by worktrees).
_ROOMS = "|".join(sorted(p.name for p in HERE.parent.iterdir() if (p / "__init__.py").is_file()))
_ROOMLESS = ((re.compile(rf"^([ \t]*from )\.\.(?:(?:{_ROOMS})\.)?".encode(), re.MULTILINE), rb"\1."),
             (re.compile(rf"\bbuildtools([./])(?:{_ROOMS})[./]".encode()), rb"buildtools\1"))


def roomless(source: bytes) -> bytes:
    """``source`` as it would read in a buildtools/ without rooms."""
    for pattern, replacement in _ROOMLESS:
        source = pattern.sub(replacement, source)
    return source


def _digest(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(roomless(p.read_bytes()))
    return h.hexdigest()[:16]


def cached_build(name: str, sources: list[Path], build: Callable[[Path], None]) -> Path:
    """Run ``build(out)`` into .cache/models/<name> only when ``sources`` changed."""
    out = CACHE / "models" / name
    stamp = CACHE / "models" / f"{name}.stamp"
    digest = _digest(sources)
    if out.exists() and stamp.exists() and stamp.read_text() == digest:
        return out
    log(f"building model {name} (this takes a few minutes, once)")
    if out.exists():
        shutil.rmtree(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    build(out)
    stamp.write_text(digest)
    return out


def build_models() -> dict[str, Path]:
    """The built-in models, in the order a person meets them (the real chat model first)."""
    from . import minilm, smollm2, tiny_chat, tiny_gpt2

    decoder = [HERE / "onnx_decoder.py", HERE / "traceable_decoder.py"]
    gguf_sources = [HERE / "smollm2.py", HERE / "gguf_import.py", HERE / "gguf_blocks.py",
                    *sorted((HERE.parents[1] / "py" / "csi" / "gguf").glob("*.py")), *decoder]
    return {
        smollm2.MODEL_ID: cached_build(smollm2.MODEL_ID, gguf_sources, smollm2.build),
        "tiny-chat": cached_build("tiny-chat", [*sorted(HERE.glob("tiny_chat*.py")), HERE / "traceable_decoder.py"],
                                  tiny_chat.build),
        "all-minilm-l6-v2": cached_build("all-minilm-l6-v2", [HERE / "minilm.py"], minilm.build),
        "tiny-gpt2": cached_build("tiny-gpt2", [HERE / "tiny_gpt2.py", *decoder], tiny_gpt2.build),
    }


def build_hub_models() -> dict[str, Path]:
    """Models that are not built into the site: the tests serve them from a local Hub mirror."""
    from . import tiny_qwen2

    sources = [HERE / "tiny_qwen2.py", HERE / "tiny_gpt2.py", HERE / "onnx_decoder.py", HERE / "traceable_decoder.py"]
    return {tiny_qwen2.REPO_ID: cached_build("hub-tiny-qwen2", sources, tiny_qwen2.build)}


def build_bench_models() -> dict[str, Path]:
    """Random-weight models of real shapes, for the bench only (built on its first run)."""
    from . import bench_models

    sources = [HERE / "bench_models.py", HERE / "tiny_qwen2.py", HERE / "tiny_gpt2.py", HERE / "onnx_decoder.py",
               HERE / "traceable_decoder.py"]
    return {shape.repo_id: cached_build("bench-" + shape.repo_id.split("/")[1], sources,
                                        lambda out, shape=shape: bench_models.build(shape, out))  # type: ignore[misc]
            for shape in bench_models.SHAPES}
