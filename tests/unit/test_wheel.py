"""The browser wheel holds what the worker runs and nothing that needs a CPython-only library."""

from __future__ import annotations

import ast
import zipfile
from dataclasses import dataclass
from pathlib import Path

from buildtools.site.csi_wheel import build_wheel
from tests.support.paths import ROOT

CPYTHON_LIBRARIES = {"numpy", "onnxruntime", "onnx", "tokenizers", "xgrammar", "jinja2"}


@dataclass
class Module:
    name: str
    is_package: bool
    tree: ast.Module

    def imports(self) -> set[str]:
        """The modules it imports (relative imports resolved; ``from m import x`` counts as ``m``)."""
        package = self.name if self.is_package else self.name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
                found.add(".".join(base + ([node.module] if node.module else [])))
        return found


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
    assert {"csi.worker.main", "csi.backends.pyodide", "csi.backends.pyodide.generation"} <= names
    assert not {n for n in names if n.startswith("csi.backends.cpython")}
    assert not names & {"csi.local", "csi.backends.local_host"}


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
