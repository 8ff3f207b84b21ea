"""Every ```js (and ```html) block of the README and docs/ runs in Chromium against the built site.

Conventions (a page's blocks are one script, read top to bottom):
- Each doc page gets a fresh browser context and one page of the site whose import map gives the
  names the npm package will have: "csi-web" -> /web/engine.js, "csi-web/prompt-api" ->
  /web/prompt_api.js, "csi-web/v1" -> /web/v1_host.js.
- Its `js` blocks run in order, each as an ES module of its own (served from the site, so `import`
  of site paths such as "/vendor/openai/index.mjs" works too), awaited to the end of its
  top-level code.
- `engine` is the one name blocks share: a block that declares `const engine = ...` publishes it,
  and a later block on the same page that uses `engine` without declaring it gets that one. Every
  other name a block uses, it declares (messages, inputs, callbacks).
- ```js worker blocks are worker scripts: the test starts an engine on that script (a module
  Worker) and checks that the script's logit processor is in force.
- ```html blocks are loaded as a page of the site; they must load without a page error (and the
  Prompt API's global script must define `LanguageModel`).
- A block passes when it finishes without throwing within BLOCK_TIMEOUT_MS and nothing it logged
  with `console.log` was `undefined` (a block that logs must log something).
- What this machine cannot reach is swapped for what it can, per page, in SUBSTITUTIONS (the
  Hugging Face Hub -> a local mirror of a small Qwen2 repo; a GPU server -> the suite's llama.cpp
  server); the swapped text must still be in the page, so the example cannot drift from it.
- docs/npm.md's examples are not run here (ELSEWHERE): its vite.config.js and main.js are the app
  tests/browser/test_browser_npm_package.py builds with the packed package (buildtools/site/npm_app.py).
- Errors name the block's file and line; module line numbers equal the Markdown file's (the module
  is padded), so a stack's `...md.L42.mjs:45` is line 45 of the page.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.browser import tracked_context
from tests.support.docs import Block, blocks, doc_files, rel
from tests.support.paths import DIST

pytestmark = pytest.mark.browser

BLOCK_TIMEOUT_MS = 180_000
IMPORT_MAP = {"imports": {"csi-web": "/web/engine.js", "csi-web/prompt-api": "/web/prompt_api.js",
                          "csi-web/v1": "/web/v1_host.js"}}
UNDEFINED = "\x00undefined"
PAGE_HTML = """<!doctype html>
<meta charset="utf-8"><title>docs examples: {page}</title>
<script type="importmap">{import_map}</script>
<script>
  // what the examples log, as text (objects as JSON), kept for the test
  window.__logs = [];
  const log = console.log.bind(console);
  console.log = (...args) => {{
    window.__logs.push(args.map((a) => a === undefined ? {undefined} : typeof a === "string" ? a
      : (() => {{ try {{ return JSON.stringify(a) ?? String(a); }} catch {{ return String(a); }} }})()));
    log(...args);
  }};
</script>
"""

RUN_MODULE = """async ([url, ms]) => {
  const start = window.__logs.length;
  const timeout = new Promise((_, reject) => setTimeout(
    () => reject(Object.assign(new Error(`not finished within ${ms} ms`), {name: 'TestTimeout'})), ms));
  try {
    await Promise.race([import(url), timeout]);
    return {ok: true, logs: window.__logs.slice(start)};
  } catch (e) {
    return {ok: false, logs: window.__logs.slice(start),
            error: {name: e?.name, message: String(e?.message ?? e), param: e?.param ?? null, stack: e?.stack ?? ''}};
  }
}"""

# A worker script's check: an engine on it, whose logit processor (logits[0] = 100) makes every token 0.
RUN_WORKER = """async ([url, model]) => {
  const { CreateWebWorkerEngine } = await import('csi-web');
  const engine = await CreateWebWorkerEngine(new Worker(url, { type: 'module' }), model);
  try {
    const r = await engine.completions.create({ prompt: 'The json module', max_tokens: 3, ignore_eos: true,
                                                return_token_ids: true });
    return r.choices[0].token_ids;
  } finally { engine.terminate(); }
}"""


def _hub(request: pytest.FixtureRequest) -> dict[str, str]:
    from buildtools.models.cache import build_hub_models
    from buildtools.models.hub_mirror import Mirror

    mirror = Mirror({"csi-test/tiny-qwen2": build_hub_models()["csi-test/tiny-qwen2"]}).start()
    request.addfinalizer(mirror.stop)
    return {'hubMirror: "https://huggingface.co/"': f'hubMirror: "{mirror.url}"',
            "onnx-community/Qwen2.5-0.5B-Instruct": "csi-test/tiny-qwen2"}


def _server(request: pytest.FixtureRequest) -> dict[str, str]:
    server = request.getfixturevalue("llama_server")
    return {"http://gpu-box:8000/v1": f"{server.url}/v1", "qwen2.5-7b-instruct": server.model,
            "HuggingFaceTB/SmolLM2-135M-Instruct": server.model}


def _mcp(request: pytest.FixtureRequest) -> dict[str, str]:
    return {"http://127.0.0.1:8931/mcp": request.getfixturevalue("mcp_server").mcp}


SUBSTITUTIONS: dict[str, Callable[[pytest.FixtureRequest], dict[str, str]]] = {
    "docs/models.md": _hub,
    "docs/servers.md": _server,
    "docs/skills.md": _mcp,
    "docs/responses.md": _mcp,
}

# Pages whose examples live in another setting than a page of the built site.
ELSEWHERE = {"docs/npm.md": "run by test_browser_npm_package.py: an app that installed the npm package"}

PAGES = {rel(path): [b for b in blocks(path) if b.lang in ("js", "html")] for path in doc_files()}
PAGES = {page: found for page, found in PAGES.items() if found and page not in ELSEWHERE}


@pytest.fixture(scope="module")
def docs_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """The built site plus a folder `__docs__/` for the examples, served like `site_url`."""
    from buildtools.site.serve import serve_in_thread

    if not (DIST / "index.html").exists():
        pytest.fail("dist/ is not built: run `python3 build.py test`")
    root = tmp_path_factory.mktemp("docs-site")
    for entry in DIST.iterdir():
        (root / entry.name).symlink_to(entry)
    (root / "__docs__").mkdir()
    server, url = serve_in_thread(root)
    yield root / "__docs__", url
    server.shutdown()


def _module_source(block: Block, code: str) -> str:
    """The block as a module whose lines are the Markdown file's, with `engine` shared (see above)."""
    import re

    declares = re.search(r"^(?:const|let|var)\s+engine\b", code, re.M) is not None
    uses = re.search(r"(?<![\w.$])engine\b", code) is not None
    prelude = "const engine = globalThis.engine;" if uses and not declares else ""
    epilogue = "\nglobalThis.engine = engine;\n" if declares else "\n"
    return prelude + "\n" * (block.line - 1) + code + epilogue


def _fail(block: Block, what: str, detail: Any = "") -> None:
    pytest.fail(f"{block.where}: {what}\n{detail}", pytrace=False)


@pytest.mark.parametrize("page", sorted(PAGES))
def test_js_examples_run(page: str, browser: Any, docs_site: tuple[Path, str], request: pytest.FixtureRequest) -> None:
    folder, url = docs_site
    swaps = SUBSTITUTIONS[page](request) if page in SUBSTITUTIONS else {}
    text = "".join(b.code for b in PAGES[page])
    for old in swaps:
        assert old in text, f"{page}: the example no longer says {old!r}: update SUBSTITUTIONS"

    name = page.replace("/", "_")
    (folder / f"{name}.html").write_text(PAGE_HTML.format(page=page, import_map=json.dumps(IMPORT_MAP),
                                                          undefined=json.dumps(UNDEFINED)))
    context, _ = tracked_context(browser)
    errors: list[str] = []
    try:
        tab = context.new_page()
        tab.set_default_timeout(BLOCK_TIMEOUT_MS)
        tab.on("pageerror", lambda e: errors.append(str(e)))
        tab.goto(f"{url}__docs__/{name}.html")
        for block in PAGES[page]:
            code = block.code
            for old, new in swaps.items():
                code = code.replace(old, new)
            if block.lang == "html":
                _run_html(block, code, context, folder, url, name)
                continue
            module = f"{name}.L{block.line}.mjs"
            if "worker" in block.flags:
                (folder / module).write_text("\n" * (block.line - 1) + code)
                ids = tab.evaluate(RUN_WORKER, [f"/__docs__/{module}", "smollm2-135m-instruct"])
                if ids != [0, 0, 0]:
                    _fail(block, f"the worker script's logit processor was not in force (tokens {ids})")
                continue
            (folder / module).write_text(_module_source(block, code))
            out = tab.evaluate(RUN_MODULE, [f"/__docs__/{module}", BLOCK_TIMEOUT_MS])
            if not out["ok"]:
                e = out["error"]
                _fail(block, f"{e['name']}: {e['message']} (param {e['param']})", e["stack"])
            logs = out["logs"]
            if "console.log(" in code and not logs:
                _fail(block, "the example logs nothing")
            for line in logs:
                if UNDEFINED in line:
                    _fail(block, f"the example logged undefined: {line}")
        if errors:
            pytest.fail(f"{page}: page errors while its examples ran: {errors}", pytrace=False)
    finally:
        context.close()


def _run_html(block: Block, code: str, context: Any, folder: Path, url: str, name: str) -> None:
    """An html block as a page of the site: it loads without errors."""
    file = f"{name}.L{block.line}.html"
    (folder / file).write_text("<!doctype html>\n<meta charset=\"utf-8\">\n" + code)
    errors: list[str] = []
    tab = context.new_page()
    try:
        tab.on("pageerror", lambda e: errors.append(str(e)))
        tab.goto(f"{url}__docs__/{file}", wait_until="load")
        if "prompt_api_global.js" in code:
            tab.wait_for_function("typeof globalThis.LanguageModel === 'function'", timeout=30_000)
            availability = tab.evaluate("LanguageModel.availability()")
            if availability not in ("available", "downloadable", "downloading"):
                _fail(block, f"LanguageModel.availability() is {availability!r}")
        if errors:
            _fail(block, "the page had errors", errors)
    finally:
        tab.close()
