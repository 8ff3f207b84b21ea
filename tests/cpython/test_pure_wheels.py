"""The pure markupsafe and PyYAML wheels the site serves to skills (built from their sdists without
their C code) behave as CPython's installed builds of the same versions with their C code:
markupsafe's _speedups, and libyaml when present. Each side runs the same probe in a Python of its
own, the served wheel first on sys.path for the one and the installed package for the other."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.paths import DIST

WHEELS = DIST / "wheels" / "packages"

PROBE = r'''
import datetime, json, sys

module, wheel = sys.argv[1], sys.argv[2]
if wheel:
    sys.path.insert(0, wheel)
corpus = json.load(sys.stdin)


def shown(value):
    return [type(value).__name__, str(value) if isinstance(value, str) else repr(value)]


def attempt(f):
    try:
        return shown(f())
    except Exception as exc:  # YAMLError, and ValueError for a few bad scalars (`!!int x`)
        return ["error", type(exc).__name__]


if module == "markupsafe":
    import markupsafe
    from markupsafe import Markup, escape, escape_silent, soft_str

    class Html:
        def __init__(self, s):
            self.s = s

        def __html__(self):
            return self.s

    class Sub(str):
        pass

    def cases(s):
        return [escape(s), escape(Sub(s)), escape(Html(s)), escape(Markup(s)), escape_silent(s), soft_str(s),
                Markup(s).striptags(), Markup(s).unescape(), Markup("<em>%s</em>") % s,
                Markup("<em>%s|%s</em>") % (s, Html(s)), Markup("<em>{}</em>").format(s),
                Markup("<i>{x}</i>").format(x=s), Markup(", ").join([s, Markup(s), Html(s)]), Markup(s) + s,
                Markup("<b>{0!r}</b>").format(s), Markup(s).split("<"), escape(s).replace("&", "+")]

    results = [[shown(v) for v in cases(s)] for s in corpus["strings"]]
    results.append([shown(v) for v in (escape(5), escape(3.5), escape(None), escape_silent(None), escape(True),
                                        escape(b"<b>"), escape(["<"]), Markup(7), soft_str(Markup("<x>")))])
    origin = {"file": markupsafe.__file__, "escape": markupsafe._escape_inner.__module__}
else:
    import yaml

    loader = yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader
    loads = [attempt(lambda: list(yaml.load_all(doc, Loader=loader))) for doc in corpus["docs"]]
    values = corpus["values"] + [datetime.datetime(2001, 12, 14, 21, 59, 43, 100000), datetime.date(2002, 12, 14),
                                 b"\x00\xff bytes", {"when": datetime.date(2020, 2, 29), "raw": b"\x01"},
                                 {1: "int key", 2.5: "float key", None: "null key", False: "bool key"}]
    dumps = []
    for value in values:
        for options in ({}, {"allow_unicode": True}, {"default_flow_style": True}, {"width": 20},
                        {"sort_keys": False, "indent": 4}, {"explicit_start": True, "canonical": True}):
            text = yaml.safe_dump(value, **options)
            dumps.append([text, yaml.load(text, Loader=loader) == value])
    results = {"loads": loads, "dumps": dumps}
    origin = {"file": yaml.__file__, "libyaml": yaml.__with_libyaml__}
json.dump({"origin": origin, "results": results}, sys.stdout)
'''

# markupsafe: what a template escapes, every string width CPython stores (the C code has one loop each)
STRINGS = [
    "", "plain", "<script>alert('x')</script>", "\"'&<>", "&amp;&lt;&#39;&#34;&#x27;", "<<<>>>&&&'''\"\"\"",
    "\x00<\x00>", "é<ü>ß&", "ā<ē>&'", "😀<&>😀\"", "\ud800<\udfff", "\u2028\u2029<", "<img src=x onerror=alert(1)>",
    "javascript:alert(1)//<", "a" * 10_000 + "<", "<" * 5_000, "&" * 3_000 + "'" * 3_000 + "é" * 10, "😀" * 2_000 + ">",
    "\t\n\r<b>\n</b>", "<!-- c --><b>x</b><![CDATA[<]]>", "%s %r {} {0} %%", "%(name)s {__class__}",
    "<a href='&quot;'>x</a>", "&#0; &#xFFFFFF; &unknown; &amp", "</script><script>", "\"onmouseover=\"x",
    "<style>@import 'x'</style>", "ﬀ<ǅ>İ", "\x7f\x80\x9f<", "\ufeff<\ufffe",
]

# PyYAML: documents to read, malformed ones included (the error's class is compared)
DOCS = [
    "a: 1\nb: [1, 2, {c: d}]\n", "- &x {a: 1}\n- *x\n- <<: *x\n  b: 2\n", "? [1, 2]\n: complex\n",
    "s: |\n  line1\n  line2\n\nf: >-\n  folded\n  text\n\nk: |+\n  kept\n\n",
    'q: "\\x41\\u263A\\U0001F600\\t\\n\\N\\_"\n',
    "n: [.inf, -.inf, .nan, 0o17, 017, 0x1f, 1_000, 1e3, +12, 0.5, -.5, 1:20, 0b101, 190:20:30]\n",
    "b: [yes, No, on, OFF, true, ~, null, '', Null, y, n]\n",
    "d: [2001-12-14t21:59:43.10-05:00, 2002-12-14, 2001-12-14 21:59:43.10 -5, 2001-12-15T02:59:43.1Z]\n",
    "bin: !!binary aGVsbG8=\nset: !!set {a, b}\nomap: !!omap [a: 1, b: 2]\npairs: !!pairs [a: 1, a: 2]\n",
    "--- 1\n--- [2]\n...\n--- {c: 3}\n", "%YAML 1.1\n---\na: 1\n", "%TAG !e! tag:example.com,2000:\n--- !e!x 1\n",
    "\ufeffa: 1\n", "[" * 40 + "]" * 40, "{a: 1, b: [x, y], c: {d: e}}", "", "# only a comment\n",
    "plain: it's a 'string' with: colons # and a comment\n", "multi: first\n  second\n   third\n",
    "'single ''quoted''': \"double \\\"quoted\\\"\"\n", "unicode: ☺ 😀 é\n", "long: " + "word " * 300 + "\n",
    "key: value\nkey: duplicate\n", "a: !!str 123\nb: !!int '7'\nc: !!float 1\n", "- - - deep\n    - x\n  - y\n",
    # malformed, or refused by the safe loader
    "a:\n\tb: 1\n", "a: 'unclosed\n", "a: *nope\n", "a: !!python/object:os.system x\n", "a: b: c\n",
    "%YAML 2.0\n---\na: 1\n", "- !custom x\n", "a: \x07\n", "a: [1, 2\n", "- &a x\n- &a y\n- *a\n", "{a: 1}}",
    "? |\n  block key\n: v\n", "a: !!binary '***'\n", "a: !!int x\n", "--- |\n text\n--- >\n  more\n",
]

# PyYAML: values to write (and read back), each with several options (the probe adds those JSON
# cannot carry: dates, bytes, keys that are not strings)
VALUES: list[Any] = [
    {"a": 1, "b": [1, 2.5, None, True, False], "c": {"d": "e"}}, "yes", "null", "1.0", "", "~", "0o17", "0x1f",
    "1_000", "2001-12-14", "multi\nline\n", "x" * 200 + " " + "y" * 100, "word " * 50, {"k": float("inf"), "n": -0.0},
    {"nested": {"empty": {}, "list": [], "none": None}}, "unicode ☺ 😀 é", "\t tab", "# not a comment", "- dash",
    "a: b", "'quoted'", '"dq"', " leading", "trailing ", "\n", "\x00 nul \x07 bell", [[1, [2, [3, [4]]]]],
    {"z": 1, "a": 2, "m": [3, 1, 2]},
    list(range(30)), {"text": "line one\nline two\n  indented\n"}, "\u2028 separator", "é" * 300,
]


def probe(module: str, wheel: Path | None, corpus: dict[str, Any]) -> dict[str, Any]:
    env = {**os.environ, "PYTHONHASHSEED": "0"}  # sets print in the same order on both sides
    out = subprocess.run([sys.executable, "-c", PROBE, module, str(wheel or "")], input=json.dumps(corpus),
                         capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def wheel(name: str) -> Path:
    path = WHEELS / name
    if not path.exists():
        pytest.fail("dist/ is not built: run `python3 build.py`")
    return path


def test_pure_markupsafe_escapes_as_the_c_speedups_do() -> None:
    corpus = {"strings": STRINGS}
    served = wheel("markupsafe-3.0.3-py3-none-any.whl")
    ours = probe("markupsafe", served, corpus)
    reference = probe("markupsafe", None, corpus)
    assert ours["origin"] == {"file": f"{served}/markupsafe/__init__.py", "escape": "markupsafe._native"}
    assert reference["origin"]["escape"] == "markupsafe._speedups"  # the C code is what it is compared with
    assert len(ours["results"]) == len(STRINGS) + 1
    for s, got, want in zip([*STRINGS, "(not strings)"], ours["results"], reference["results"], strict=True):
        assert got == want, s[:80]


def test_pure_pyyaml_reads_as_libyaml_does_and_writes_what_libyaml_reads_back() -> None:
    corpus = {"docs": DOCS, "values": VALUES}
    served = wheel("pyyaml-6.0.3-py3-none-any.whl")
    ours = probe("yaml", served, corpus)
    reference = probe("yaml", None, corpus)
    assert ours["origin"] == {"file": f"{served}/yaml/__init__.py", "libyaml": False}
    assert reference["origin"]["libyaml"] is yaml.__with_libyaml__
    assert ours["results"]["loads"] == reference["results"]["loads"]
    assert ["error", "ConstructorError"] in ours["results"]["loads"]  # the safe loader refuses python tags
    assert sum(r[0] == "error" for r in ours["results"]["loads"]) >= 10
    # writing: the same text as the installed package's writer, and libyaml (when present) reads it back
    assert ours["results"]["dumps"] == reference["results"]["dumps"]
    assert all(ok for _, ok in ours["results"]["dumps"])
