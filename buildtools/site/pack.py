"""``python3 build.py pack``: the embeddable library as an npm package, ``csi-web-<version>.tgz``.

The package holds the library's modules (the engine, the Prompt API facade, the ``/v1/`` host, the
offline helper: the import closure of ``LIBRARY_ENTRIES``, nothing of the playground), the worker
and the runtime it loads (Pyodide, transformers.js and onnxruntime-web, web-xgrammar, the wheels,
the language data), the service worker, TypeScript declarations made from the JSDoc, and a Vite
plugin that copies the runtime into an app's build. Models are not in it (see ``copy-models``).
"""

from __future__ import annotations

import json
import posixpath
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..deps.deps import CACHE, ROOT, log
from .assemble import CSI_VERSION, DIST, NODE

# Public module -> its file in the package (the keys are package.json's "exports").
LIBRARY_ENTRIES = {
    ".": "web/engine.js",
    "./prompt-api": "web/prompt_api.js",
    "./prompt-api/global": "web/prompt_api_global.js",
    "./v1": "web/v1_host.js",
    "./offline": "web/offline.js",
    "./worker": "worker/worker.js",
}
# Runtime folders the worker loads by URL, copied from dist/ whole (vendor/: only the worker's).
RUNTIME_TREES = ["worker", "wheels", "lang", "vendor/pyodide", "vendor/transformers", "vendor/ort", "vendor/xgrammar"]
PACKAGE_FILES = Path(__file__).parent / "package_files"  # package.json's extras, the Vite plugin, README
STAGE = CACHE / "pack" / "csi-web"
IMPORT = re.compile(r"""(?:^|[;\s])(?:import|export)\s[^'"]*?from\s*["'](\.{1,2}/[^"']+)["']"""
                    r"""|import\(\s*["'](\.{1,2}/[^"']+)["']\s*\)""", re.M)


def import_closure(root: Path, entries: list[str], types: bool = False) -> list[str]:
    """The files (relative to ``root``) that ``entries`` import, statically or by a literal
    ``import("./...")``, themselves included; with ``types``, JSDoc's ``import("...")`` types too."""
    seen: set[str] = set()
    todo = list(entries)
    while todo:
        rel = todo.pop()
        if rel in seen:
            continue
        if not (root / rel).exists() and (root / rel).with_suffix(".d.ts").exists():
            rel = rel.removesuffix(".js") + ".d.ts"  # a type-only module (a JSDoc import)
        seen.add(rel)
        if rel.endswith(".d.ts"):
            continue
        code = (root / rel).read_text()
        if not types:
            code = re.sub(r"/\*.*?\*/", "", code, flags=re.S)  # JSDoc: types, not modules
        code = re.sub(r"(?m)^\s*//.*$", "", code)
        for m in IMPORT.finditer(code):
            target = posixpath.normpath(posixpath.join(posixpath.dirname(rel), m.group(1) or m.group(2)))
            if target.startswith("vendor/"):
                continue  # vendored runtimes are copied whole
            todo.append(target)
    return sorted(seen)


def library_modules() -> list[str]:
    """The page-side modules the package ships: the closure of the public entries under web/."""
    entries = [f for f in LIBRARY_ENTRIES.values() if f.startswith("web/")]
    return [rel for rel in import_closure(ROOT, entries, types=True) if rel.startswith("web/")]


def package_json() -> dict[str, object]:
    exports: dict[str, object] = {}
    for name, file in LIBRARY_ENTRIES.items():
        exports[name] = {"types": "./" + file.removesuffix(".js") + ".d.ts", "default": "./" + file}
    exports["./sw.js"] = "./sw.js"
    exports["./vite"] = {"types": "./vite.d.ts", "default": "./vite.js"}
    exports["./package.json"] = "./package.json"
    return {
        "name": "csi-web",
        "version": CSI_VERSION,
        "description": "An LLM runtime that runs entirely in the browser: Python (Pyodide) in a module worker, "
                       "models on WebGPU or WASM; WebLLM's engine API, OpenAI's shapes, Chrome's Prompt API.",
        "type": "module",
        "main": "./web/engine.js",
        "types": "./web/engine.d.ts",
        "exports": exports,
        "sideEffects": ["./web/prompt_api_global.js", "./vendor/**", "./worker/**"],
        "keywords": ["llm", "webgpu", "wasm", "pyodide", "webllm", "openai", "onnx", "in-browser"],
        "engines": {"node": ">=18"},
    }


def _declarations(stage: Path) -> None:
    """``.d.ts`` beside each public module, made by tsc from the JSDoc (checkJs types). tsc reads a
    copy of web/ and worker/ without vendor/, so the runtimes are typed by worker/vendor.d.ts."""
    config = {
        "compilerOptions": {
            "target": "ES2022", "module": "ES2022", "moduleResolution": "bundler",
            "lib": ["ES2022", "DOM", "DOM.Iterable", "WebWorker"], "types": [],
            "allowJs": True, "checkJs": False, "declaration": True, "emitDeclarationOnly": True,
            "rootDir": ".", "outDir": str(stage), "skipLibCheck": True, "strict": True,
        },
        "files": [*LIBRARY_ENTRIES.values(), "worker/vendor.d.ts", "worker/wire_types.d.ts"],
    }
    with tempfile.TemporaryDirectory() as tmp:
        for folder in ("web", "worker"):
            shutil.copytree(stage / folder, Path(tmp) / folder)
        (Path(tmp) / "tsconfig.json").write_text(json.dumps(config, indent=1))
        out = subprocess.run([str(NODE / ".bin" / "tsc"), "-p", "tsconfig.json"], cwd=tmp, capture_output=True,
                             text=True)
    if out.returncode != 0:
        raise SystemExit(f"tsc could not write the package's declarations:\n{out.stdout}{out.stderr}")


def stage_package(dist: Path = DIST, stage: Path = STAGE) -> Path:
    """Lay the package out in ``stage`` (made anew) from the built ``dist``."""
    if stage.exists():
        shutil.rmtree(stage)
    stage.mkdir(parents=True)
    for rel in library_modules():
        (stage / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(dist / rel, stage / rel)
    for tree in RUNTIME_TREES:
        shutil.copytree(dist / tree, stage / tree)
    # type inputs the site does not serve
    for rel in ("worker/vendor.d.ts", "worker/wire_types.d.ts"):
        shutil.copy2(ROOT / rel, stage / rel)
    # the service worker unstamped: an app has no site-manifest.json, so it keeps nothing offline
    # and serves /v1/ (and cross-origin isolation) only
    shutil.copy2(ROOT / "worker" / "service_worker.js", stage / "sw.js")
    for extra in PACKAGE_FILES.iterdir():
        shutil.copy2(extra, stage / extra.name)
    (stage / "package.json").write_text(json.dumps(package_json(), indent=2) + "\n")
    _declarations(stage)
    return stage


def pack(dist: Path = DIST, out_dir: Path = ROOT) -> Path:
    """Stage the package and ``npm pack`` it into ``out_dir``; returns the .tgz."""
    stage = stage_package(dist)
    out = subprocess.run(["npm", "pack", "--json", "--pack-destination", str(out_dir)], cwd=stage,
                         capture_output=True, text=True, check=True)
    info = json.loads(out.stdout)[0]
    tgz = out_dir / info["filename"]
    log(f"{tgz.name}: {info['size'] / 1e6:.1f} MB packed, {info['unpackedSize'] / 1e6:.1f} MB unpacked, "
        f"{info['entryCount']} files")
    return tgz


def copy_models(dest: Path, ids: list[str] | None = None, dist: Path = DIST) -> list[str]:
    """Copy the site's models (``ids``, default all) into ``dest`` with their ``models.json``, as an
    app's ``models/`` folder; returns the ids copied."""
    listing = json.loads((dist / "models" / "models.json").read_text())["models"]
    known = [m["id"] for m in listing]
    wanted = known if ids is None else ids
    unknown = [i for i in wanted if i not in known]
    if unknown:
        raise SystemExit(f"no model {', '.join(map(repr, unknown))} in {dist / 'models'}: "
                         f"known are {', '.join(known)}")
    dest.mkdir(parents=True, exist_ok=True)
    for model_id in wanted:
        shutil.copytree(dist / "models" / model_id, dest / model_id, dirs_exist_ok=True)
    kept = [m for m in listing if m["id"] in wanted]
    (dest / "models.json").write_text(json.dumps({"models": kept}, indent=1) + "\n")
    return wanted
