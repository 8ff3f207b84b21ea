"""Deterministic English prose for the chunking benchmark: docstrings of the standard library."""

from __future__ import annotations

import importlib
import inspect
import sys

MODULES = ["json", "collections", "itertools", "functools", "pathlib", "subprocess", "argparse", "logging",
           "asyncio", "threading", "email", "http.client", "urllib.request", "unittest", "typing", "dataclasses",
           "decimal", "fractions", "statistics", "random", "datetime", "calendar", "textwrap", "string", "re",
           "difflib", "csv", "configparser", "sqlite3", "zipfile", "tarfile", "shutil", "tempfile", "glob",
           "socket", "ssl", "select", "selectors", "multiprocessing", "concurrent.futures", "pickle", "copy",
           "pprint", "enum", "abc", "contextlib", "inspect", "ast", "dis", "tokenize", "traceback", "warnings",
           "weakref", "heapq", "bisect", "array", "queue", "sched", "io", "os", "codecs", "locale", "gettext"]


def english_text(size: int) -> str:
    """About ``size`` characters of paragraphs from stdlib docstrings (same Python, same text)."""
    seen: set[str] = set()
    parts: list[str] = []
    total = 0
    for name in MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        objects = [module, *(v for _, v in sorted(vars(module).items()) if inspect.isclass(v) or inspect.isfunction(v))]
        for obj in objects:
            doc = inspect.getdoc(obj)
            if not doc or len(doc) < 200 or doc in seen:
                continue
            seen.add(doc)
            parts.append(doc)
            total += len(doc) + 2
    text = "\n\n".join(parts)
    while len(text) < size:  # repeat if this Python has fewer docstrings than asked for
        text = text + "\n\n" + text
    return text[:size] + f"\n\n(Python {sys.version_info.major}.{sys.version_info.minor})"
