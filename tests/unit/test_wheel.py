"""The browser wheel holds what the worker runs and nothing that needs a CPython-only library."""

from __future__ import annotations

import ast
import zipfile
from dataclasses import dataclass
from pathlib import Path

from buildtools.site.csi_wheel import build_wheel
from csi.skills.registry import EXAMPLES
from tests.support.paths import ROOT

CPYTHON_LIBRARIES = {"numpy", "onnxruntime", "onnx", "tokenizers", "xgrammar", "jinja2"}


@dataclass
class Module:
    name: str
    is_package: bool
    tree: ast.Module

    def _imported(self) -> list[tuple[str, list[str]]]:
        """(module, the names taken from it) of every import (relative imports resolved)."""
        package = self.name if self.is_package else self.name.rpartition(".")[0]
        found: list[tuple[str, list[str]]] = []
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                found += [(a.name, []) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
                found.append((".".join(base + ([node.module] if node.module else [])), [a.name for a in node.names]))
        return found

    def imports(self) -> set[str]:
        """The modules it imports (``from m import x`` counts as ``m``)."""
        return {module for module, _ in self._imported()}

    def may_import(self) -> set[str]:
        """``imports()``, and ``m.x`` for each ``from m import x`` (x may be a module)."""
        return self.imports() | {f"{module}.{name}" for module, names in self._imported() for name in names}


def wheel_modules(tmp_path: Path) -> dict[str, Module]:
    """Every module of a freshly built browser wheel, by dotted name."""
    wheel = build_wheel(ROOT / "py" / "csi", "0.0.0", tmp_path)
    modules = {}
    with zipfile.ZipFile(wheel) as zf:
        for path in zf.namelist():
            if path.endswith(".py"):
                is_package = path.endswith("/__init__.py")
                name = path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
                modules[name] = Module(name, is_package, ast.parse(zf.read(path)))
    return modules


def test_the_browser_wheel_has_the_worker_and_the_pyodide_backend_but_no_cpython_part(tmp_path: Path) -> None:
    names = set(wheel_modules(tmp_path))
    assert {"csi.worker.main", "csi.backends.pyodide", "csi.backends.pyodide.decoding"} <= names
    assert not {n for n in names if n.startswith("csi.backends.cpython")}
    assert not names & {"csi.local", "csi.backends.local_host", "csi.servers.asyncio_http", "csi.testing"}


def test_every_module_of_the_browser_wheel_is_one_the_worker_imports(tmp_path: Path) -> None:
    """Reached from worker.js's ``pyimport("csi.worker.main")`` and the example skills the registry
    imports by name; a package's ``__init__`` whenever one of its modules is."""
    modules = wheel_modules(tmp_path)
    reached: set[str] = set()
    todo = ["csi.worker.main", *EXAMPLES.values()]
    while todo:
        name = todo.pop()
        if name in reached or name not in modules:
            continue
        reached.add(name)
        parents = [".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)]
        todo += parents + sorted(modules[name].may_import())
    assert sorted(set(modules) - reached) == []


def test_no_module_of_the_browser_wheel_imports_a_cpython_only_library(tmp_path: Path) -> None:
    wrong = {}
    for module in wheel_modules(tmp_path).values():
        libraries = {name.split(".")[0] for name in module.imports()} & CPYTHON_LIBRARIES
        if libraries:
            wrong[module.name] = sorted(libraries)
    assert not wrong


def test_every_csi_module_the_browser_wheel_imports_is_in_it(tmp_path: Path) -> None:
    modules = wheel_modules(tmp_path)
    missing = {}
    for module in modules.values():
        absent = {t for t in module.imports() if t.split(".")[0] == "csi" and t not in modules}
        if absent:
            missing[module.name] = sorted(absent)
    assert not missing
