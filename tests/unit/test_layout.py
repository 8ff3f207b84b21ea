"""The package's layering, read from its imports: no circles, nothing imports a layer above it,
no face reaches the backend, the engine knows no API, the SDK depends on nothing server-side."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.paths import ROOT

PACKAGE = ROOT / "py" / "csi"

# Each top-level part of csi and the parts it may import (itself always allowed).
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "gguf": set(),  # GGUF files read from their headers: the standard library only
    "wire": {"errors"},
    "core": {"gguf", "errors", "wire"},
    "text": {"core", "errors", "wire"},
    "index": {"text", "core", "errors", "wire"},
    "faces": {"index", "text", "core", "errors", "wire"},
    "skills": {"mcp", "faces", "index", "text", "core", "errors", "wire"},
    "testing": {"core", "errors"},
    "servers": {"faces", "core", "errors", "wire"},
    "mcp": {"servers", "core", "errors", "wire"},  # MCP servers' tools, over the servers' HTTP port
    "runtime": {"mcp", "servers", "skills", "faces", "index", "text", "core", "errors", "wire"},
    "backends": {"servers", "index", "gguf", "core", "errors", "wire"},
    "local": {"runtime", "servers", "backends", "skills", "core", "errors"},
    "worker": {"runtime", "mcp", "servers", "backends", "skills", "faces", "index", "text", "core", "errors", "wire"},
    "__init__": {"runtime", "core", "errors"},
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """Every ``csi`` module ``path`` imports, at module level or inside functions."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.add(target)
            found |= {f"{target}.{a.name}" for a in node.names}  # ``from . import x`` imports module x
    return (found & modules) - {name}


def graph() -> dict[str, set[str]]:
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {name: imports_of(path, set(paths)) for name, path in paths.items()}


def part(module: str) -> str:
    rest = module.split(".")[1:]
    return rest[0] if rest else "__init__"


def test_the_layout_has_the_parts_the_architecture_names() -> None:
    for sub in ["core", "text", "text/tables", "index", "faces/openai", "faces/pharia", "skills", "backends",
                "worker"]:
        assert (PACKAGE / sub / "__init__.py").exists(), sub
    assert not [p.name for p in PACKAGE.glob("*.py")
                if p.stem not in {"__init__", "errors", "wire", "runtime", "local", "testing"}]


def test_no_part_imports_a_part_above_it() -> None:
    wrong = []
    for module, targets in graph().items():
        for target in targets:
            if part(target) != part(module) and part(target) not in ALLOWED[part(module)]:
                wrong.append(f"{module} -> {target}")
    assert not wrong


def test_no_import_circles() -> None:
    g = graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in g[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(g):
        if v not in index:
            visit(v)
    assert not cycles


def test_faces_never_reach_the_backend_and_the_engine_knows_no_api() -> None:
    g = graph()
    for module, targets in g.items():
        if part(module) == "faces":
            assert not {t for t in targets if part(t) == "backends" or t == "csi.core.backend"}, module
    engine = g["csi.core.engine"]
    assert not {t for t in engine if part(t) in {"faces", "index", "text", "skills", "runtime"}}


def test_the_worker_boots_without_pharia_skill() -> None:
    """The SDK is fetched the first time a skill is used: nothing the worker imports at boot may
    import it (the modules that do are loaded by the skill registry once it is there)."""
    import subprocess
    import sys

    code = ("import sys; import csi.worker.app, csi.worker.routes, csi.runtime, csi.skills.registry; "
            "print('pharia_skill' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(PACKAGE.parent)}, check=True)
    assert out.stdout.strip() == "False"


def test_only_the_pyodide_backend_package_imports_pyodide_or_js() -> None:
    importers = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n.split(".")[0] in {"pyodide", "js"} for n in names):
                importers.append(module_name(path))
    inside = [m for m in importers if m == "csi.backends.pyodide" or m.startswith("csi.backends.pyodide.")]
    assert importers and inside == importers, sorted(set(importers))


def test_no_face_imports_another_face() -> None:
    """What the faces share (``faces.structured``) sits beside them, not inside one of them."""

    def face(module: str) -> str | None:
        parts = module.split(".")
        return parts[2] if len(parts) > 2 and parts[1] == "faces" and parts[2] != "structured" else None

    wrong = [f"{m} -> {t}" for m, targets in graph().items() for t in targets
             if face(m) and face(t) and face(m) != face(t)]
    assert not wrong
