"""Every ```python block of the README and docs/ runs, in CPython, as a reader would run it.

Conventions (a page's blocks are one script, read top to bottom):
- The python blocks of one page run in order in one fresh interpreter (this venv's, with
  `PYTHONPATH=py:.`, from the checkout, so `"dist"` is the built site) and share one namespace: a
  later block may use what an earlier one defined (a skill, then the pytest test of it).
- A block that defines `test_*` functions has them called right after it runs, as pytest would.
- Each block is compiled under its file's name with its own line numbers, so a failure's traceback
  reads `File "docs/skills.md", line 123`.
- A block that calls `print(` must print something.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support.docs import Block, blocks, doc_files, rel
from tests.support.paths import DIST, ROOT

MARK = "\x1e@@block "

RUNNER = r"""
import json, sys, traceback
blocks = json.load(sys.stdin)
namespace = {"__name__": "__docs__"}
for block in blocks:
    print(MARK + block["where"], flush=True)
    try:
        before = set(namespace)
        code = compile("\n" * (block["line"] - 1) + block["code"], block["file"], "exec")
        exec(code, namespace)
        for name in sorted(set(namespace) - before):
            if name.startswith("test_") and callable(namespace[name]):
                namespace[name]()
    except BaseException:
        print(f"{block['where']}: the example failed", file=sys.stderr)
        traceback.print_exc()
        sys.exit(1)
""".replace("MARK", repr(MARK))

PAGES = {rel(path): [b for b in blocks(path) if b.lang == "python"] for path in doc_files()}
PAGES = {page: found for page, found in PAGES.items() if found}


@pytest.mark.parametrize("page", sorted(PAGES))
def test_python_examples_run(page: str) -> None:
    if not (DIST / "models").is_dir():
        pytest.fail("dist/ is not built: run `python3 build.py test`")
    page_blocks: list[Block] = PAGES[page]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "py"), str(ROOT)])}
    payload = json.dumps([{"file": b.file, "line": b.line, "code": b.code, "where": b.where} for b in page_blocks])
    out = subprocess.run([sys.executable, "-c", RUNNER], input=payload, capture_output=True, text=True,
                         cwd=ROOT, env=env, timeout=600)
    assert out.returncode == 0, f"{page}: a python example failed\n{out.stderr[-6000:]}"
    printed = dict(part.split("\n", 1) if "\n" in part else (part, "") for part in out.stdout.split(MARK)[1:])
    for block in page_blocks:
        if "print(" in block.code:
            assert printed.get(block.where, "").strip(), f"{block.where}: the example prints nothing"
