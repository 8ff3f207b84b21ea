"""Mine the Python standard library's docstrings for tiny chat's training corpus: ``DocItem`` and
``collect_doc_items`` (which modules are read, and how a docstring becomes a short prose answer)."""

from __future__ import annotations

import contextlib
import importlib
import inspect
import io
import re
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

# Fixed, sorted list of standard-library modules mined for docstrings.  Modules
# with import-time side effects (antigravity, this, idlelib, tkinter, turtle),
# test packages and deprecated modules are deliberately absent.
# fmt: off
STDLIB_MODULES: tuple[str, ...] = (
    "abc", "argparse", "array", "ast", "asyncio", "base64", "bdb", "binascii",
    "bisect", "builtins", "bz2", "calendar", "cmath", "cmd", "code", "codecs",
    "codeop", "collections", "collections.abc", "colorsys", "compileall",
    "concurrent.futures", "configparser", "contextlib", "contextvars", "copy",
    "copyreg", "csv", "ctypes", "dataclasses", "datetime", "dbm", "decimal",
    "difflib", "dis", "doctest", "email", "email.message", "email.utils", "enum",
    "errno", "faulthandler", "filecmp", "fileinput", "fnmatch", "fractions",
    "ftplib", "functools", "gc", "getopt", "getpass", "gettext", "glob",
    "graphlib", "gzip", "hashlib", "heapq", "hmac", "html", "html.parser",
    "http", "http.client", "http.cookies", "http.server", "imaplib", "importlib",
    "importlib.metadata", "importlib.resources", "inspect", "io", "ipaddress",
    "itertools", "json", "keyword", "linecache", "locale", "logging",
    "logging.handlers", "lzma", "mailbox", "marshal", "math", "mimetypes",
    "mmap", "modulefinder", "multiprocessing", "netrc", "numbers", "opcode",
    "operator", "optparse", "os", "os.path", "pathlib", "pdb", "pickle",
    "pickletools", "pkgutil", "platform", "plistlib", "poplib", "pprint",
    "profile", "pstats", "py_compile", "pyclbr", "pydoc", "queue", "quopri",
    "random", "re", "reprlib", "runpy", "sched", "secrets", "select",
    "selectors", "shelve", "shlex", "shutil", "signal", "smtplib", "socket",
    "socketserver", "sqlite3", "ssl", "stat", "statistics", "string", "struct",
    "subprocess", "symtable", "sys", "sysconfig", "tabnanny", "tarfile",
    "tempfile", "textwrap", "threading", "time", "timeit", "token", "tokenize",
    "tomllib", "trace", "traceback", "tracemalloc", "types", "typing",
    "unicodedata", "unittest", "unittest.mock", "urllib.error", "urllib.parse",
    "urllib.request", "uuid", "warnings", "wave", "weakref", "webbrowser",
    "wsgiref.util", "xml.dom.minidom", "xml.etree.ElementTree", "xml.sax",
    "xmlrpc.client", "zipapp", "zipfile", "zipimport", "zlib", "zoneinfo",
)
# fmt: on

MAX_ANSWER_CHARS = 400
MIN_ANSWER_CHARS = 25
MAX_METHODS_PER_CLASS = 12


@dataclass(frozen=True)
class DocItem:
    """One documented object: its kind, dotted name and cleaned answer text."""

    kind: str  # "module" | "function" | "class" | "method"
    module: str
    qualname: str
    answer: str
    signature: str | None = None


_SIGNATURE_LINE = re.compile(r"^[A-Za-z_][\w.]*\(.*\)(\s*->.*)?$")
_NON_PROSE = re.compile(r"^(>>>|\.\.\.|[-*+] |:|\d+[.)] |[A-Z][a-z]+( [A-Za-z]+)?:$)")
_GENERIC_DOC_PREFIXES = (
    "Return self",
    "Initialize self",
    "Implement ",
    "Create and return a new object",
    "Helper for pickle",
    "See help(",
    "Return repr(self)",
    "Return str(self)",
    "Return hash(self)",
    "Return state information",
    "Default object formatter",
)


def _is_prose(paragraph: str) -> bool:
    lines = paragraph.splitlines()
    if any(line.startswith((" ", "\t")) for line in lines):
        return False
    if any(_NON_PROSE.match(line.strip()) for line in lines):
        return False
    return not any(marker in paragraph for marker in ("---", "===", ">>>"))


def _summarize(doc: str | None) -> str | None:
    """Return the leading prose paragraph(s) of a docstring, reflowed and truncated."""
    if not doc or not isinstance(doc, str):
        return None
    text = inspect.cleandoc(doc)
    lines = text.splitlines()
    while lines and _SIGNATURE_LINE.match(lines[0].strip()):
        lines = lines[1:]
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", "\n".join(lines)) if p.strip()]
    chosen: list[str] = []
    for paragraph in paragraphs:
        if not _is_prose(paragraph):
            break
        flat = " ".join(line.strip() for line in paragraph.splitlines()).replace("``", "`")
        flat = re.sub(r" {2,}", " ", flat)
        if flat.endswith("::"):  # introduces a literal block that is not kept
            if chosen:
                break
            flat = flat[:-2].rstrip() + "."
        if chosen and len(" ".join(chosen)) + len(flat) + 1 > MAX_ANSWER_CHARS:
            break
        chosen.append(flat)
        if len(chosen) == 2:
            break
    if chosen and chosen[-1].endswith(":"):  # announces a list or example that is not kept
        if len(chosen) > 1:
            chosen.pop()
        else:
            chosen[-1] = chosen[-1][:-1].rstrip() + "."
    if not chosen:
        return None
    answer = "\n\n".join(chosen)
    if len(answer) > MAX_ANSWER_CHARS:
        cut = answer.rfind(". ", 0, MAX_ANSWER_CHARS)
        if cut < MIN_ANSWER_CHARS:
            return None
        answer = answer[: cut + 1]
    if len(answer) < MIN_ANSWER_CHARS or answer.startswith(_GENERIC_DOC_PREFIXES):
        return None
    return answer


_MACHINE_PATHS = tuple(p for p in (sys.executable, sys.prefix, sys.base_prefix, str(Path.cwd())) if p)


def _signature(obj: object) -> str | None:
    try:
        sig = str(inspect.signature(obj))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    # Reprs of default values may embed memory addresses, or the interpreter's path (which holds
    # the checkout's: platform.architecture), and the model would differ from one machine to another.
    if len(sig) > 80 or "<" in sig or any(part in sig for part in _MACHINE_PATHS):
        return None
    return sig


def _import_quietly(name: str) -> object | None:
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            return importlib.import_module(name)
    except Exception:  # noqa: BLE001 - any import failure just skips the module
        return None


def _public_members(module: object, name: str) -> list[tuple[str, object]]:
    exported = getattr(module, "__all__", None)
    if exported is not None:
        names = sorted({n for n in exported if isinstance(n, str) and not n.startswith("_")})
    else:
        names = sorted(n for n in vars(module) if not n.startswith("_"))
    members = []
    for attr in names:
        obj = getattr(module, attr, None)
        if not (inspect.isroutine(obj) or inspect.isclass(obj)):
            continue
        if exported is None and getattr(obj, "__module__", None) != name:
            continue
        members.append((attr, obj))
    return members


def collect_doc_items() -> list[DocItem]:
    """Mine ``STDLIB_MODULES`` for modules, functions, classes and methods with docstrings."""
    items: list[DocItem] = []
    seen: set[int] = set()

    def add(kind: str, module: str, qualname: str, obj: object, doc: str | None) -> None:
        if id(obj) in seen and kind != "module":
            return
        seen.add(id(obj))
        answer = _summarize(doc)
        if answer is not None:
            sig = _signature(obj) if kind in ("function", "method") else None
            items.append(DocItem(kind, module, qualname, answer, sig))

    for name in sorted(STDLIB_MODULES):
        module = _import_quietly(name)
        if module is None:
            continue
        prefix = "" if name == "builtins" else name + "."
        if name != "builtins":
            add("module", name, name, module, module.__doc__)
        for attr, obj in _public_members(module, name):
            if inspect.isclass(obj):
                add("class", name, prefix + attr, obj, obj.__doc__)
                methods = 0
                for meth_name in sorted(vars(obj)):
                    if meth_name.startswith("_") or methods >= MAX_METHODS_PER_CLASS:
                        continue
                    raw = vars(obj)[meth_name]
                    if isinstance(raw, (staticmethod, classmethod)):
                        raw = raw.__func__
                    if inspect.isroutine(raw):
                        before = len(items)
                        add("method", name, f"{prefix}{attr}.{meth_name}", raw, raw.__doc__)
                        methods += len(items) - before
            else:
                add("function", name, prefix + attr, obj, obj.__doc__)
    return items
