"""Which modules a skill's source may import, read from its syntax before it runs: the standard
library, what the worker always has (``PRESENT``: pydantic), Pyodide's own modules, and the
packages the site serves on demand (``SERVED``), which the caller then loads."""

from __future__ import annotations

import ast
import sys

from ..core.packages import PRESENT, PYODIDE, REFUSED, SERVED
from ..errors import InvalidInputError

_ALLOWED = frozenset(sys.stdlib_module_names) | frozenset(PRESENT) | frozenset(PYODIDE)


def _imports(tree: ast.AST) -> list[tuple[int, int, str]]:
    """(line, column, top-level module) of every import anywhere in ``tree`` (functions included),
    in source order; a relative import is refused."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, node.col_offset, a.name.split(".")[0]) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                what = "." * node.level + (node.module or "")
                raise InvalidInputError(f"line {node.lineno}: ImportError: the skill imports from {what!r}, a "
                                        "relative import; a skill is one module, with no package around it",
                                        "source")
            found.append((node.lineno, node.col_offset, (node.module or "").split(".")[0]))
    return sorted(found)


def _listed(names: list[str]) -> str:
    return f"{', '.join(names[:-1])} and {names[-1]}"


def skill_imports(source: str) -> list[str]:
    """The served packages ``source`` imports (import names, in the order it first imports them),
    for the host to load before the module runs.

    ``InvalidInputError`` (param ``source``, with the line) for a syntax error, as the skill loader
    reports it, for a relative import, and for a module the worker does not have. Imports made by
    name at run time (``importlib.import_module``) are not seen here: they fail when they run.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise InvalidInputError(f"line {exc.lineno}: SyntaxError: {exc.msg}", "source") from None
    except ValueError:  # null bytes, under Python 3.11: the loader reports it
        return []
    wanted: list[str] = []
    for line, _, module in _imports(tree):
        if module in SERVED:
            if module not in wanted:
                wanted.append(module)
        elif module not in _ALLOWED:
            why = f" ({REFUSED[module]})" if module in REFUSED else ""
            raise InvalidInputError(
                f"line {line}: ModuleNotFoundError: the skill imports {module!r}, which csi-web does not serve{why}. "
                f"A skill can import the standard library, pydantic, {_listed(sorted(SERVED))}.", "source")
    return wanted
