"""csi-web as an npm package: the tarball `build.py pack` writes, installed into a Vite app made here
(vite from npm), built with `vite build` and csi-web/vite, served by a plain static server (no
COOP/COEP), answers in Chromium: streaming from the real model, structured output, an embedding.
A plain `<script type="module">` page importing from node_modules/csi-web does the same, and tsc
checks an app against the package's types. No request leaves 127.0.0.1."""

from __future__ import annotations

import json
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest

from buildtools.site.npm_app import make_vite_app
from buildtools.site.pack import pack
from buildtools.site.serve import serve_in_thread
from tests.support.browser import LOCAL_PREFIXES, tracked_context
from tests.support.paths import DIST, ROOT
from tests.support.reference import sentence_transformer

# tsc over an app using the package's types; each @ts-expect-error line must fail to type-check.
CHECK = """import { CreateMLCEngine, EngineError } from "csi-web";
import { LanguageModel } from "csi-web/prompt-api";
import { serveV1 } from "csi-web/v1";
import csiWeb from "csi-web/vite";

export async function app(): Promise<string> {
  const engine = await CreateMLCEngine("smollm2-135m-instruct", { device: "wasm", modelsUrl: "/models/" });
  const reply = await engine.chat.completions.create({ messages: [{ role: "user", content: "Hi" }] });
  const text: string | null = reply.choices[0].message.content;
  const stream = await engine.chat.completions.create({ messages: [{ role: "user", content: "Hi" }], stream: true });
  for await (const chunk of stream) {
    const piece: string | null | undefined = chunk.choices[0]?.delta.content;
    void piece;
  }
  // @ts-expect-error a stream of chunks has no choices
  stream.choices;
  // @ts-expect-error a request has messages
  await engine.chat.completions.create({ stream: false });
  // @ts-expect-error the device is "wasm", "webgpu" or "auto"
  await CreateMLCEngine("smollm2-135m-instruct", { device: "cuda" });
  const vectors = await engine.embeddings.create({ input: ["hello"], model: "all-minilm-l6-v2" });
  const first: number[] | string = vectors.data[0].embedding;  // a string with encoding_format "base64"
  // @ts-expect-error an embedding is numbers (or base64 text)
  const wrong: boolean = vectors.data[0].embedding;
  await serveV1(engine);
  // @ts-expect-error serveV1 takes an engine
  await serveV1("engine");
  const session = await LanguageModel.create();
  const answer: string = await session.prompt("Hi");
  const plugin = csiWeb({ dir: "runtime" });
  void [first, wrong, plugin, EngineError];
  return `${text} ${answer}`;
}
"""


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The packed tarball, installed into a new Vite app that is then built."""
    work = tmp_path_factory.mktemp("npm")
    app = make_vite_app(work / "app", pack(DIST, work))
    (app / "check.ts").write_text(CHECK)
    return app


@pytest.fixture(scope="module")
def built_app(app: Path) -> Iterator[str]:
    """The Vite app's build (dist/), as a static host serves it."""
    server, url = serve_in_thread(app / "dist", isolate=False)
    yield url
    server.shutdown()


@pytest.fixture(scope="module")
def app_folder(app: Path) -> Iterator[str]:
    """The app's folder as it is (node_modules/ included), for the page that imports the package unbundled."""
    server, url = serve_in_thread(app, isolate=False)
    yield url
    server.shutdown()


def _answer(page: Any) -> dict[str, Any]:
    page.wait_for_function("() => window.demo?.done", timeout=240_000)
    demo: dict[str, Any] = page.evaluate("() => window.demo")
    assert demo["error"] is None, demo["error"]
    return demo


def _structured_and_embedding(page: Any) -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}, "country": {"type": "string"}},
              "required": ["city", "country"], "additionalProperties": False}
    content = page.evaluate("""async (schema) => (await window.engine.chat.completions.create({
        messages: [{role: "user", content: "Name the capital of France and its country."}],
        response_format: {type: "json_schema", json_schema: {name: "capital", schema}},
        temperature: 0, max_tokens: 48})).choices[0].message.content""", schema)
    jsonschema.validate(json.loads(content), schema)
    vector = page.evaluate("""async () => (await window.engine.embeddings.create(
        {input: ["The cat sat on the mat."], model: "all-minilm-l6-v2"})).data[0].embedding""")
    reference = sentence_transformer().encode(["The cat sat on the mat."], normalize_embeddings=True)[0]
    assert float(np.dot(np.asarray(vector), reference)) > 0.999


def test_the_package_holds_the_library_and_runtime_but_no_playground_or_models(app: Path) -> None:
    with tarfile.open(next((app.parent).glob("csi-web-*.tgz"))) as tar:
        names = {n.removeprefix("package/") for n in tar.getnames()}
    for needed in ("web/engine.js", "web/engine.d.ts", "web/prompt_api.js", "web/v1_host.js", "worker/worker.js",
                   "sw.js", "vite.js", "vendor/pyodide/pyodide.asm.wasm", "vendor/transformers/transformers.js",
                   "vendor/xgrammar/index.js", "package.json"):
        assert needed in names, needed
    assert any(n.startswith("wheels/csi-") for n in names)
    assert not [n for n in names if n.startswith("models/") or n.endswith((".onnx", ".safetensors"))]
    assert not [n for n in names if n.startswith(("web/panels/", "web/conversations/", "app/")) or n == "index.html"]


def test_a_vite_app_built_with_the_package_answers_streams_structured_output_and_embeds(browser: Any,
                                                                                        built_app: str) -> None:
    context, requests = tracked_context(browser)
    try:
        page = context.new_page()
        page.goto(built_app)
        cold = _answer(page)
        assert "Paris" in cold["text"], cold["text"]
        _structured_and_embedding(page)
        page.reload()
        warm = _answer(page)
        assert warm["text"] == cold["text"]
        print(f"\nvite app, page to first token: cold {cold['firstTokenMs']:.0f} ms, "
              f"warm {warm['firstTokenMs']:.0f} ms")
    finally:
        context.close()
    assert [u for u in requests if not u.startswith(LOCAL_PREFIXES)] == []
    assert any(u.startswith(built_app + "csi-web/worker/worker.js") for u in requests)


def test_a_plain_module_page_importing_from_node_modules_answers_the_same(browser: Any, app_folder: str) -> None:
    context, requests = tracked_context(browser)
    try:
        page = context.new_page()
        page.goto(app_folder + "plain.html")
        demo = _answer(page)
        assert "Paris" in demo["text"], demo["text"]
        _structured_and_embedding(page)
    finally:
        context.close()
    assert [u for u in requests if not u.startswith(LOCAL_PREFIXES)] == []
    assert any("/node_modules/csi-web/worker/worker.js" in u for u in requests)


def test_tsc_checks_an_app_against_the_package_types(app: Path) -> None:
    config = {"compilerOptions": {"target": "ES2022", "module": "ESNext", "moduleResolution": "bundler",
                                  "lib": ["ES2022", "DOM", "DOM.Iterable"], "types": [], "strict": True,
                                  "noEmit": True, "skipLibCheck": True},
              "files": ["check.ts"]}
    (app / "tsconfig.json").write_text(json.dumps(config))
    out = subprocess.run([str(ROOT / "node_modules" / ".bin" / "tsc"), "-p", "tsconfig.json"], cwd=app,
                         capture_output=True, text=True, timeout=300)
    # an unused @ts-expect-error is an error too: each probe must fail and the rest pass
    assert out.returncode == 0, out.stdout + out.stderr
