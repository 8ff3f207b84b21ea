"""The JS wing's layering, read from its imports, and the size of every file a person maintains:
the library (web/: the engine and its client, the Prompt API facade, the /v1/ host; worker/) apart
from the playground app (app/), which uses the library only through the npm package's public names
("csi-web", "csi-web/v1", ...: index.html's import map, package.json's exports); the worker never
loads page code, the page client loads no worker code (it only names its types), nothing loads the
playground's wiring, no import circles; no hand-written file grows past ~400 lines."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.support.paths import ROOT

MAX_LINES = 420  # "about 400"
GENERATED = {"py/csi/text/tables"}
_COMMENTS = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_IMPORTS = re.compile(r"""(?:\bimport\s*(?:[\w*{}\s,]+\s*from\s*)?|\bimport\s*\(\s*|\bexport\s*[\w*{}\s,]+\s*from\s*)"""
                      r"""["'](\.{1,2}/[^"']+)["']""")


def js_files() -> list[Path]:
    return sorted(p for folder in ("web", "app", "worker") for p in (ROOT / folder).rglob("*.js"))


def runtime_imports(path: Path) -> set[Path]:
    """The local modules ``path`` loads when it runs (JSDoc type imports are comments, not loads)."""
    code = _COMMENTS.sub("", path.read_text())
    return {(path.parent / spec).resolve() for spec in _IMPORTS.findall(code)}


def rel(p: Path) -> str:
    return p.relative_to(ROOT).as_posix()


def graph() -> dict[str, set[str]]:
    return {rel(p): {rel(t) for t in runtime_imports(p) if t.is_relative_to(ROOT)} for p in js_files()}


def test_the_imports_resolve_to_files() -> None:
    """(vendor/ is where dist/ serves the npm runtimes)"""
    missing = [f"{a} -> {b}" for a, targets in graph().items() for b in targets
               if not (ROOT / b).exists() and not b.startswith("vendor/")]
    assert not missing


def test_the_worker_never_loads_page_code_and_the_protocol_loads_nothing() -> None:
    g = graph()
    assert not [f"{a} -> {b}" for a, t in g.items() if a.startswith("worker/") for b in t if b.startswith("web/")]
    assert g["worker/protocol.js"] == set()


def test_the_page_client_loads_no_worker_code_and_no_playground() -> None:
    """web/engine.js and what it loads must work in any page: the worker's modules are loaded by
    the worker, the panels and app.js by the playground."""
    g = graph()
    seen: set[str] = set()
    todo = ["web/engine.js"]
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo += sorted(g.get(node, ()))
    assert not [m for m in seen if m.startswith(("worker/", "app/"))]


def test_nothing_loads_the_playground_wiring_and_only_it_mounts_panels() -> None:
    g = graph()
    assert not [a for a, t in g.items() if "app/app.js" in t]
    wrong = [f"{a} -> {b}" for a, t in g.items() for b in t
             if b.startswith("app/panels/") and not (a == "app/app.js" or a.startswith("app/panels/"))]
    assert not wrong


def test_the_library_never_loads_the_app_and_the_app_reaches_the_library_only_by_its_public_names() -> None:
    from buildtools.site.pack import LIBRARY_ENTRIES

    g = graph()
    assert not [f"{a} -> {b}" for a, t in g.items() if not a.startswith("app/") for b in t if b.startswith("app/")]
    # every relative import of the app stays in the app: the library is reached by bare names
    assert not [f"{a} -> {b}" for a, t in g.items() if a.startswith("app/") for b in t if not b.startswith("app/")]
    bare = {spec for p in (ROOT / "app").rglob("*.js")
            for spec in re.findall(r"""(?:from|import\()\s*["'](csi-web[^"']*)["']""", p.read_text())}
    public = {"csi-web" + name.removeprefix(".") for name in LIBRARY_ENTRIES}
    assert bare and bare <= public, bare - public
    # the playground's page maps those names to the same files the package exports
    mapped = json.loads(re.search(r'<script type="importmap">(.*?)</script>', (ROOT / "index.html").read_text(),
                                  re.S).group(1))["imports"]  # type: ignore[union-attr]
    for spec in bare:
        assert mapped[spec] == "./" + LIBRARY_ENTRIES["." + spec.removeprefix("csi-web")], spec
    paths = json.loads((ROOT / "app" / "jsconfig.json").read_text())["compilerOptions"]["paths"]
    for spec in bare:
        assert paths[spec] == ["../" + LIBRARY_ENTRIES["." + spec.removeprefix("csi-web")]], spec


def test_no_import_circles_among_js_modules() -> None:
    g = graph()
    state: dict[str, int] = {}
    cycles: list[str] = []

    def visit(v: str, path: list[str]) -> None:
        state[v] = 1
        for w in sorted(g.get(v, ())):
            if state.get(w) == 1:
                cycles.append(" -> ".join([*path[path.index(w):], w]) if w in path else f"{v} -> {w}")
            elif w not in state:
                visit(w, [*path, w])
        state[v] = 2

    for v in sorted(g):
        if v not in state:
            visit(v, [v])
    assert not cycles


def test_no_hand_written_file_is_over_about_400_lines() -> None:
    files = [*js_files(), *(ROOT / "py" / "csi").rglob("*.py")]
    long = {rel(p): n for p in files
            if not any(rel(p).startswith(g) for g in GENERATED)
            and (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long
