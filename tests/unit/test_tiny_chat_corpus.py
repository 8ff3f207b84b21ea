"""tiny-chat's corpus, and so the model, is the same wherever the checkout and its interpreter are:
a model trained in CI is the one the tests were run against here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DIGEST = """
import hashlib, sys
sys.path.insert(0, {root!r})
from buildtools.models.tiny_chat_docs import collect_doc_items
items = collect_doc_items()
print(hashlib.sha256(repr(items).encode()).hexdigest(), len(items))
"""


def _digest(python: Path, cwd: Path, seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    out = subprocess.run([str(python), "-c", DIGEST.format(root=str(ROOT))], cwd=cwd, env=env,
                         capture_output=True, text=True, check=True, timeout=120)
    return out.stdout.strip()


def test_the_corpus_does_not_depend_on_the_checkouts_path(tmp_path: Path) -> None:
    # the same environment seen from another path: its interpreter, prefix and working directory move
    moved = tmp_path / "elsewhere"
    moved.symlink_to(Path(sys.prefix))
    python = moved / Path(sys.executable).relative_to(sys.prefix)
    here = _digest(Path(sys.executable), ROOT, "1")
    there = _digest(python, tmp_path, "2")
    assert int(here.split()[1]) > 1000
    assert here == there
