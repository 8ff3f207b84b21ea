"""A Vite app made with the packed npm package, as a web developer makes one: the tarball and vite
installed from npm, the built-in models copied beside it, ``vite build``. The package's test and
the bench's ``package`` section use it."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from .pack import copy_models

VITE = "8.3.8"
MODELS = ["smollm2-135m-instruct", "all-minilm-l6-v2"]

DOC = Path(__file__).resolve().parents[2] / "docs" / "npm.md"


def doc_block(first_line: str) -> str:
    """The ```js block of docs/npm.md that begins with ``first_line``: the docs' example is the app."""
    blocks = re.findall(r"^```js\n(.*?)^```", DOC.read_text(), re.S | re.M)
    found = [b for b in blocks if b.startswith(first_line + "\n")]
    if len(found) != 1:
        raise RuntimeError(f"docs/npm.md has {len(found)} js blocks beginning {first_line!r}")
    return found[0]


# The app's main.js is the docs' own, between lines that record what it prints (the reply's pieces)
# and when its first piece came (ms since the page's navigation began), in window.demo, and hand its
# engine to the test (window.engine). The same module is bundled by Vite (index.html) and served as
# it is (plain.html).
PROLOGUE = """const demo = { firstTokenMs: null, text: "", done: false, error: null };
window.demo = demo;
const print = console.log.bind(console);
console.log = (...args) => {
  const piece = String(args[0] ?? "");
  if (piece && demo.firstTokenMs === null) demo.firstTokenMs = performance.now();
  demo.text += piece;
  print(...args);
};
const fail = (e) => { demo.error = `${e?.name}: ${e?.message}`; demo.done = true; };
window.addEventListener("error", (e) => fail(e.error ?? e));
window.addEventListener("unhandledrejection", (e) => fail(e.reason));
"""
EPILOGUE = """
window.engine = engine;
demo.done = true;
"""
MAIN = PROLOGUE + doc_block("// main.js") + EPILOGUE
VITE_CONFIG = doc_block("// vite.config.js")
INDEX = """<!doctype html><html><head><meta charset="utf-8"><title>app</title></head>
<body><script type="module" src="/main.js"></script></body></html>
"""
PLAIN = """<!doctype html><html><head><meta charset="utf-8"><title>plain</title>
<script type="importmap">{"imports": {"csi-web": "./node_modules/csi-web/web/engine.js"}}</script>
</head><body><script type="module" src="./main.js"></script></body></html>
"""


def _run(cmd: list[str], cwd: Path, timeout: float = 600) -> None:
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")


def make_vite_app(root: Path, tgz: Path) -> Path:
    """Write the app into ``root`` (new), install ``tgz`` and vite, copy the models, ``vite build``.
    ``root/dist`` is the built app; ``root`` itself serves plain.html (node_modules/ and models/ beside it)."""
    root.mkdir(parents=True)
    (root / "package.json").write_text(json.dumps({
        "name": "csi-web-app", "private": True, "type": "module",
        "dependencies": {"csi-web": f"file:{tgz}"}, "devDependencies": {"vite": VITE}}, indent=1))
    (root / "vite.config.js").write_text(VITE_CONFIG)
    (root / "index.html").write_text(INDEX)
    (root / "plain.html").write_text(PLAIN)
    (root / "main.js").write_text(MAIN)
    _run(["npm", "install", "--no-audit", "--no-fund", "--prefer-offline"], root)
    copy_models(root / "public" / "models", MODELS)
    (root / "models").symlink_to(root / "public" / "models")  # the plain page's models/, next to it
    _run([str(root / "node_modules" / ".bin" / "vite"), "build"], root)
    return root
