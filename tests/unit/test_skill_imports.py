"""Which imports a skill may use (csi.skills.imports), what the hosts do with the packages it names
(LocalHost here; the worker's in tests/browser/test_browser_skill_packages.py), and the registry
asking for them before a skill's module runs."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import jinja2
import pytest

from csi.backends import local_host
from csi.backends.local_host import LocalHost
from csi.core.packages import PRESENT, REFUSED, SERVED
from csi.errors import InvalidInputError, PackageLoadError
from csi.runtime import build_runtime
from csi.skills.imports import skill_imports
from csi.skills.registry import load_skill_source
from csi.testing import ScriptedBackend
from tests.support.aio import run_async
from tests.support.skills import SkillsClient


def refused(source: str) -> InvalidInputError:
    with pytest.raises(InvalidInputError) as err:
        skill_imports(source)
    assert err.value.param == "source"
    return err.value


def test_the_standard_library_pydantic_and_csi_need_nothing_loaded() -> None:
    source = """from __future__ import annotations
import json, os.path
from collections.abc import Iterator
import xml.etree.ElementTree as ET
from pydantic import BaseModel
from pydantic_core import core_schema
import typing_extensions, annotated_types, typing_inspection
"""
    assert skill_imports(source) == []


def test_served_packages_are_returned_once_in_the_order_first_imported() -> None:
    source = """import json
from yaml import safe_load
import jinja2.sandbox
import pharia_skill.testing, yaml
from fastjsonschema import compile as compile_schema
from jinja2 import Template
"""
    assert skill_imports(source) == ["yaml", "jinja2", "pharia_skill", "fastjsonschema"]


def test_imports_nested_in_functions_classes_and_branches_count() -> None:
    source = """import json

class Helper:
    def render(self):
        import jinja2
        return jinja2

def load():
    try:
        from yaml import safe_load
    except ImportError:
        if True:
            import markupsafe
"""
    assert skill_imports(source) == ["jinja2", "yaml", "markupsafe"]
    err = refused("def f():\n    x = 1\n    def g():\n        import numpy as np\n")
    assert err.message.startswith("line 4: ") and "'numpy'" in err.message


@pytest.mark.parametrize(("source", "module", "line"), [
    ("import numpy", "numpy", 1),
    ("import json\n\nfrom numpy import array\n", "numpy", 3),
    ("import os, numpy.linalg", "numpy", 1),
    ("import regex", "regex", 1),
    ("import json\nimport jinja2x\n", "jinja2x", 2),  # a prefix of a served name is not that name
    ("from pandas.core import frame", "pandas", 1),
    ("import yaml\nx = 1\nimport requests\nimport numpy\n", "requests", 3),  # the first, by line
])
def test_a_module_the_worker_does_not_have_is_refused_naming_it_and_its_line(source: str, module: str,
                                                                               line: int) -> None:
    err = refused(source)
    assert err.message.startswith(f"line {line}: ModuleNotFoundError: the skill imports {module!r}, "
                                  "which csi-web does not serve")
    for name in SERVED:  # and says what it can import instead
        assert name in err.message


@pytest.mark.parametrize("module", sorted(REFUSED))
def test_numpy_and_regex_are_refused_with_the_reason(module: str) -> None:
    err = refused(f"from pydantic import BaseModel\nimport {module}\n")
    assert err.message.startswith(f"line 2: ModuleNotFoundError: the skill imports {module!r}")
    assert "no build for Pyodide" in err.message and "CDN" in err.message


@pytest.mark.parametrize(("source", "line", "shown"), [
    ("from . import helpers", 1, "'.'"),
    ("import json\nfrom .helpers import x\n", 2, "'.helpers'"),
    ("def f():\n    from ..pkg import y\n", 2, "'..pkg'"),
])
def test_relative_imports_are_refused(source: str, line: int, shown: str) -> None:
    err = refused(source)
    assert err.message.startswith(f"line {line}: ImportError: the skill imports from {shown}, a relative import")


@pytest.mark.parametrize("source", ["def broken(:\n    pass\n", "import json\nx = (1,\n", "if True:\npass\n",
                                    "from pharia_skill import skill\n\n  x = 1\n"])
def test_a_syntax_error_is_reported_as_the_skill_loader_reports_it(source: str) -> None:
    with pytest.raises(InvalidInputError) as loader:
        load_skill_source("broken", source)
    assert refused(source).message == loader.value.message
    assert loader.value.message.startswith("line ")


def test_what_is_not_an_import_statement_is_not_seen() -> None:
    """A module named in a string, or imported by name at run time, is not an import statement;
    the latter fails when it runs (the worker does not have the module)."""
    assert skill_imports('TEXT = "import numpy"\nmod = __import__("json")\n') == []


def test_pyodide_modules_and_what_the_worker_always_has_are_allowed() -> None:
    assert skill_imports("import js\nfrom pyodide.ffi import to_js\n") == []
    assert set(PRESENT) >= {"pydantic", "pydantic_core", "typing_extensions", "annotated_types",
                            "typing_inspection"}
    assert not set(SERVED) & set(sys.stdlib_module_names) and not set(SERVED) & set(REFUSED)


def test_csi_itself_is_not_for_skills() -> None:
    """A skill that imports csi-web's internals would not run on Pharia Kernel."""
    with pytest.raises(InvalidInputError) as err:
        skill_imports("from pharia_skill import skill\nfrom csi.local import local_csi\n")
    assert err.value.param == "source" and "line 2" in err.value.message and "'csi'" in err.value.message


def test_the_local_host_checks_that_a_served_package_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    host = LocalHost()
    run_async(host.load_packages(list(SERVED)))  # build.py installs every one of them
    run_async(host.load_packages([]))
    with pytest.raises(PackageLoadError, match="serves no package named 'numpy'"):
        run_async(host.load_packages(["jinja2", "numpy"]))
    monkeypatch.setitem(local_host.SERVED, "not_installed_here", ("not-installed-here==1.0",))
    with pytest.raises(PackageLoadError) as err:
        run_async(host.load_packages(["not_installed_here"]))
    assert err.value.message == ("'not_installed_here' is not installed in this Python: "
                                 "pip install not-installed-here==1.0")


JINJA = '''
import jinja2
from pydantic import BaseModel

from pharia_skill import Csi, skill


class Input(BaseModel):
    name: str


class Output(BaseModel):
    html: str


@skill
def greet(csi: Csi, input: Input) -> Output:
    """Greet, HTML-escaped."""
    return Output(html=jinja2.Environment(autoescape=True).from_string(TEMPLATE).render(name=input.name))


TEMPLATE = "<p>Hello {{ name }}!</p>"
'''


class Recording(LocalHost):
    """LocalHost, noting what it was asked to load."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[list[str]] = []

    async def load_packages(self, names: Sequence[str]) -> None:
        self.asked.append(list(names))
        await super().load_packages(names)


def test_the_registry_loads_a_skills_packages_before_its_module_runs_and_refuses_numpy() -> None:
    host = Recording()
    skills = SkillsClient(build_runtime(ScriptedBackend([b"<eos>", b"a"], [1]), host).skills)
    run_async(skills.register("greet", JINJA))
    assert host.asked == [["pharia_skill"], ["jinja2", "pharia_skill"]]  # the SDK first, for the examples
    name = "<b>Ann & 'Bo'</b>"
    want = jinja2.Environment(autoescape=True).from_string("<p>Hello {{ name }}!</p>").render(name=name)
    assert run_async(skills.run("greet", {"name": name})) == {"html": want}

    with pytest.raises(InvalidInputError) as err:  # refused before the module runs: no side effect
        run_async(skills.register("np", "import sys\nsys.modules['csi_test_ran'] = 1\nimport numpy\n"))
    assert err.value.param == "source" and err.value.message.startswith("line 3: ModuleNotFoundError")
    assert "csi_test_ran" not in sys.modules and "np" not in host.skills

    # a stored skill is checked and its packages loaded when the registry reads it
    host.skills["stored-np"] = "import numpy\n"
    again = SkillsClient(build_runtime(ScriptedBackend([b"<eos>", b"a"], [1]), host).skills)
    listed = {s["name"]: s for s in run_async(again.list())}
    assert listed["greet"]["error"] is None and "'numpy'" in listed["stored-np"]["error"]
    assert host.asked[-1] == ["jinja2", "pharia_skill"]
