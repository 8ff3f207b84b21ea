"""The packages a skill may import besides the standard library, in one table: the build ships
what ``SERVED`` names (buildtools/deps/skill_packages.py reads this file), ``csi.skills.imports`` lets
skills import them, and the hosts load them (``PackageLoader``). Plain data without imports, so
that the build reads it without importing csi.

To serve another package: add it to ``SERVED`` and say how its wheel is made in
buildtools/deps/skill_packages.py (``RECIPES``): a pure wheel from PyPI, or one built from its sdist."""

from __future__ import annotations

# Loaded on demand, the first time a skill imports them: import name -> the distributions
# (name==version) whose wheels it needs, its own first, then its dependencies.
SERVED: dict[str, tuple[str, ...]] = {
    "pharia_skill": ("pharia-skill==0.20.0",),
    "fastjsonschema": ("fastjsonschema==2.22.3",),
    "jinja2": ("jinja2==3.1.6", "markupsafe==3.0.3"),
    "markupsafe": ("markupsafe==3.0.3",),
    "yaml": ("pyyaml==6.0.3",),
}

# Always there: the worker installs them at boot (pydantic and its dependencies). csi itself is
# there too, but not for skills: a skill that imports it would not run on Pharia Kernel.
PRESENT: tuple[str, ...] = ("pydantic", "pydantic_core", "typing_extensions", "annotated_types",
                            "typing_inspection")

# Pyodide's own modules: in the worker only (a skill that uses them does not run in CPython).
PYODIDE: tuple[str, ...] = ("js", "pyodide")

_NO_BUILD = ("it has no build for Pyodide 314 (Python 3.14, pyemscripten_2026_0) on PyPI or npm; Pyodide's "
             "own build is only on its CDN, which csi-web does not use")

# Asked for often, not served: why.
REFUSED: dict[str, str] = {"numpy": _NO_BUILD, "regex": _NO_BUILD}
