"""Assemble dist/: the page, the worker, vendored runtimes, wheels and models. Incremental."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

from ..deps.deps import CACHE, ROOT, ensure_pyodide_wheels, log
from ..deps.lang_data import ensure_lang_data
from ..deps.skill_packages import write_packages
from ..models.cache import build_hub_models, build_models
from .ai_sdk import build_ai_sdk
from .csi_wheel import build_wheel
from .csp import check_page_policy
from .kernel import build_kernel

DIST = ROOT / "dist"
IMPORTED = ROOT / "imported"  # model folders `python3 build.py import-gguf` made (served with the built-ins)
NODE = ROOT / "node_modules"
CSI_VERSION = "0.1.0"

VENDOR = {
    "vendor/pyodide": (NODE / "pyodide", ["pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm",
                                          "python_stdlib.zip", "pyodide-lock.json"]),
    "vendor/transformers": (NODE / "@huggingface/transformers/dist", ["transformers.js"]),
    "vendor/xgrammar": (NODE / "@mlc-ai/web-xgrammar/lib", ["index.js"]),
    "vendor/echarts": (NODE / "echarts/dist", ["echarts.esm.min.mjs"]),  # the playground's charts
    # the playground's Markdown: parser, sanitizer, code highlighter (+ its accessible light and dark themes)
    "vendor/marked": (NODE / "marked/lib", ["marked.esm.js"]),
    "vendor/dompurify": (NODE / "dompurify/dist", ["purify.es.mjs"]),
    "vendor/highlight": (NODE / "@highlightjs/cdn-assets/es", ["highlight.min.js"]),
    "vendor/highlight/styles": (NODE / "@highlightjs/cdn-assets/styles", ["a11y-light.min.css", "a11y-dark.min.css"]),
    # The ORT runtime transformers.js bundles, served from the same version's npm package.
    "vendor/ort": (NODE / "onnxruntime-web/dist", ["ort-wasm-simd-threaded.asyncify.mjs",
                                                   "ort-wasm-simd-threaded.asyncify.wasm",
                                                   "ort-wasm-simd-threaded.mjs", "ort-wasm-simd-threaded.wasm"]),
}


# The skill studio's editor: CodeMirror 6's ES modules, one file per package, named in index.html's
# import map (package -> its module file under vendor/codemirror/).
CODEMIRROR = {
    "codemirror": "codemirror/dist/index.js",
    "@codemirror/autocomplete": "@codemirror/autocomplete/dist/index.js",
    "@codemirror/commands": "@codemirror/commands/dist/index.js",
    "@codemirror/lang-python": "@codemirror/lang-python/dist/index.js",
    "@codemirror/language": "@codemirror/language/dist/index.js",
    "@codemirror/lint": "@codemirror/lint/dist/index.js",
    "@codemirror/search": "@codemirror/search/dist/index.js",
    "@codemirror/state": "@codemirror/state/dist/index.js",
    "@codemirror/streamparser": "@codemirror/streamparser/dist/index.js",
    "@codemirror/view": "@codemirror/view/dist/index.js",
    "@lezer/common": "@lezer/common/dist/index.js",
    "@lezer/highlight": "@lezer/highlight/dist/index.js",
    "@lezer/lr": "@lezer/lr/dist/index.js",
    "@lezer/python": "@lezer/python/dist/index.js",
    "@marijn/find-cluster-break": "@marijn/find-cluster-break/src/index.js",
    "crelt": "crelt/index.js",
    "style-mod": "style-mod/src/style-mod.js",
    "w3c-keyname": "w3c-keyname/index.js",
}


def sync_file(src: Path, dst: Path) -> bool:
    """Copy ``src`` to ``dst`` unless it is already there unchanged."""
    if dst.exists() and dst.stat().st_size == src.stat().st_size and dst.stat().st_mtime >= src.stat().st_mtime:
        return False
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dst)
    return True


# Type-checking inputs (tsc configs, declarations) are not part of the site.
NOT_SERVED = ("jsconfig.json", ".d.ts")


def sync_tree(src: Path, dst: Path, include: Callable[[Path], bool] = lambda rel: True) -> None:
    """Mirror ``src`` (the files whose relative path ``include`` accepts) into ``dst``: files added
    or changed are copied, stale ones removed."""
    wanted = {rel for p in src.rglob("*")
              if p.is_file() and "__pycache__" not in p.parts and not p.name.endswith(NOT_SERVED)
              and include(rel := p.relative_to(src))}
    for rel in wanted:
        sync_file(src / rel, dst / rel)
    if dst.exists():
        for p in dst.rglob("*"):
            if p.is_file() and p.relative_to(dst) not in wanted:
                p.unlink()


def imported_models() -> dict[str, Path]:
    """The models ``python3 build.py import-gguf`` made, by id."""
    if not IMPORTED.is_dir():
        return {}
    return {p.name: p for p in sorted(IMPORTED.iterdir()) if (p / "config.json").exists()}


def _model_entry(model_id: str, folder: Path, source: str) -> dict[str, object]:
    config = json.loads((folder / "config.json").read_text())
    causal = any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in config.get("architectures", []))
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    size = sum(p.stat().st_size for p in files)
    return {"id": model_id, "kind": "chat" if causal else "embedding", "bytes": size, "source": source,
            "sha256": _folder_hash(folder, files)}


def _folder_hash(folder: Path, files: list[Path]) -> str:
    """The SHA-256 of a model folder's file names and contents: what the worker's prompt caches kept
    beyond the page are filed under, so a rebuilt model never reads another's."""
    digest = hashlib.sha256()
    for p in files:
        digest.update(p.relative_to(folder).as_posix().encode() + b"\0")
        with p.open("rb") as f:
            digest.update(hashlib.file_digest(f, "sha256").digest())
    return digest.hexdigest()


def build_site() -> Path:
    """Build everything under dist/ and return its path."""
    for target, (src_dir, names) in VENDOR.items():
        for name in names:
            src = src_dir / name
            if not src.exists():
                raise SystemExit(f"missing {src}: run `npm ci --ignore-scripts`")
            sync_file(src, DIST / target / name)
    check_page_policy((ROOT / "index.html").read_text())  # its CSP allows its import map by hash
    sync_file(ROOT / "index.html", DIST / "index.html")
    sync_file(ROOT / "worker" / "service_worker.js", DIST / "sw.js")  # at the root, so its scope holds /v1/
    # The official `openai` client's ES modules, for pages that talk to /v1/ (its Node-only parts
    # are imported only under Node), and the one CommonJS file an ES module imports (under ESM it
    # defines nothing: the browser's state module is used).
    sync_tree(NODE / "openai", DIST / "vendor" / "openai",
              lambda rel: rel.suffix == ".mjs" or rel.as_posix() == "internal/auth/x509-transport-state.js")
    sync_file(build_ai_sdk(), DIST / "vendor" / "ai-sdk" / "index.mjs")  # the AI SDK, as the tests' pages bundle it
    for package, module in CODEMIRROR.items():
        sync_file(NODE / module, DIST / "vendor" / "codemirror" / package / Path(module).name)
    sync_tree(ROOT / "web", DIST / "web")  # the library (what `build.py pack` ships)
    sync_tree(ROOT / "app", DIST / "app")  # the playground, which uses the library through its public names
    # the worker without the kernel's AssemblyScript sources, and with the kernel they compile to
    sync_tree(ROOT / "worker", DIST / "worker", lambda rel: rel.suffix != ".ts")
    sync_file(build_kernel(), DIST / "worker" / "sampling" / "kernel.wasm")
    # the bench's baseline worker (transformers.js on its own), beside the bench code that loads it
    sync_tree(ROOT / "buildtools" / "bench", DIST / "bench", lambda rel: rel.suffix == ".js")
    # The example skills' sources, for the playground's skill studio: name -> file in index.json.
    examples = ROOT / "py" / "csi" / "skills" / "examples"
    sync_tree(examples, DIST / "skills" / "examples", lambda rel: rel.suffix == ".py" and rel.name != "__init__.py")
    (DIST / "skills" / "examples" / "index.json").write_text(json.dumps(
        [{"name": p.stem.replace("_", "-"), "file": p.name}
         for p in sorted(examples.glob("*.py")) if p.name != "__init__.py"], indent=1) + "\n")

    wheels_dir = DIST / "wheels"
    wheels = [p for p in ensure_pyodide_wheels()]
    for w in wheels:
        sync_file(w, wheels_dir / w.name)
    ours = build_wheel(ROOT / "py" / "csi", CSI_VERSION, CACHE / "csi-wheel")
    sync_file(ours, wheels_dir / ours.name)
    names = [w.name for w in wheels] + [ours.name]
    for stale in wheels_dir.glob("*.whl"):
        if stale.name not in names:
            stale.unlink()
    (wheels_dir / "wheels.json").write_text(json.dumps(names, indent=1))
    write_packages(wheels_dir / "packages")  # the packages skills import, loaded when one does

    models = {model_id: (folder, "built-in") for model_id, folder in build_models().items()}
    for model_id, folder in imported_models().items():
        models.setdefault(model_id, (folder, "imported"))
    for model_id, (folder, _) in models.items():
        sync_tree(folder, DIST / "models" / model_id)
    for stale in (DIST / "models").iterdir():
        if stale.is_dir() and stale.name not in models:
            shutil.rmtree(stale)
    # the worker's list of the models the site serves (ids it never asks the Hub for)
    listing = [_model_entry(model_id, folder, source) for model_id, (folder, source) in models.items()]
    (DIST / "models" / "models.json").write_text(json.dumps({"models": listing}, indent=1) + "\n")
    build_hub_models()
    sync_tree(ensure_lang_data(), DIST / "lang")  # select_language's n-gram data, one file per language
    write_site_manifest(DIST, ROOT / "worker" / "service_worker.js")
    log(f"dist/ is ready at {DIST}")
    return DIST


def _offline_role(rel: str) -> str | None:
    """How the service worker keeps a file of dist/ for offline use: "files" (stored when a version
    installs: the app shell, the runtime, the example skills' sources), "lazy" (stored once fetched:
    the language data, 76 files the worker asks for one language at a time, and the wheels of the
    packages skills import, loaded when a skill first imports them), or None (not kept: models,
    which the worker's transformers.js keeps itself; bench pages; the `openai` client's modules and the
    AI SDK's bundle (for pages that test /v1/);
    the service worker)."""
    if rel.startswith("wheels/packages/") and rel.endswith(".whl"):
        return "lazy"
    if rel == "index.html" or rel.startswith(("web/", "app/", "wheels/", "skills/")) or rel == "models/models.json":
        return "files"
    if rel.startswith("worker/"):
        return None if rel == "worker/service_worker.js" else "files"
    if rel.startswith("vendor/"):
        return None if rel.startswith(("vendor/openai/", "vendor/ai-sdk/")) else "files"
    return "lazy" if rel.startswith("lang/") else None


def write_site_manifest(dist: Path, sw_source: Path) -> str:
    """Write ``dist/site-manifest.json`` — ``{"version", "files": {path: sha256}, "lazy": {path: sha256}}``,
    paths relative to the site's root — and ``dist/sw.js``, the service worker ``sw_source`` with that
    version stamped in, so that browsers see a new service worker when the site changes. Returns the
    version: the first 16 hex digits of the sha256 of the lines ``"<path> <sha256>\\n"`` of every
    listed file, sorted by path, followed by ``"sw.js <sha256 of sw_source>\\n"``."""
    listing: dict[str, dict[str, str]] = {"files": {}, "lazy": {}}
    for p in sorted(dist.rglob("*")):
        rel = p.relative_to(dist).as_posix()
        role = _offline_role(rel)
        if role and p.is_file():
            listing[role][rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    source = sw_source.read_bytes()
    lines = sorted(f"{rel} {digest}\n" for files in listing.values() for rel, digest in files.items())
    lines.append(f"sw.js {hashlib.sha256(source).hexdigest()}\n")
    version = hashlib.sha256("".join(lines).encode()).hexdigest()[:16]
    stamp = 'const SITE_VERSION = "dev";'
    text = source.decode()
    if text.count(stamp) != 1:
        raise SystemExit(f"{sw_source} must hold `{stamp}` once (the site's version is stamped there)")
    # written beside and renamed: a file of dist/ may be a link to another copy, which must not change
    for name, content in (("sw.js", text.replace(stamp, f'const SITE_VERSION = "{version}";')),
                          ("site-manifest.json", json.dumps({"version": version, **listing}, indent=1) + "\n")):
        tmp = dist / f".{name}.tmp"
        tmp.write_text(content)
        tmp.replace(dist / name)
    return version
