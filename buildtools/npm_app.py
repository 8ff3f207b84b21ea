"""A Vite app made with the packed npm package, as a web developer makes one: the tarball and vite
installed from npm, the built-in models copied beside it, ``vite build``. The package's test and
the bench's ``package`` section use it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from .pack import copy_models

VITE = "8.3.8"
MODELS = ["smollm2-135m-instruct", "all-minilm-l6-v2"]

# The app's own code: the same module is bundled by Vite (index.html) and served as it is (plain.html).
# It records when the first token arrived (ms since the page's navigation began) in window.demo.
MAIN = """import { CreateMLCEngine } from "csi-web";

const demo = { firstTokenMs: null, text: "", done: false, error: null };
window.demo = demo;
try {
  const engine = await CreateMLCEngine(["smollm2-135m-instruct", "all-minilm-l6-v2"], { device: "wasm" });
  window.engine = engine;
  const stream = await engine.chat.completions.create({
    messages: [{ role: "user", content: "What is the capital of France?" }],
    stream: true, temperature: 0, max_tokens: 24,
  });
  for await (const chunk of stream) {
    const piece = chunk.choices[0]?.delta.content ?? "";
    if (piece && demo.firstTokenMs === null) demo.firstTokenMs = performance.now();
    demo.text += piece;
  }
} catch (err) {
  demo.error = `${err.name}: ${err.message}`;
}
demo.done = true;
"""
VITE_CONFIG = """import { defineConfig } from "vite";
import csiWeb from "csi-web/vite";

export default defineConfig({ plugins: [csiWeb()] });
"""
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
