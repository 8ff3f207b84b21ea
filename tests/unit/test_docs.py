"""The docs cannot rot quietly: links and anchors lead somewhere, every code block says its language
and is checked by something, every `python3 build.py <command>` is one build.py accepts, paths the
docs name exist, and the README stays a quick start.

What runs the examples: `js` blocks in Chromium (tests/browser/test_browser_docs_examples.py),
`python` blocks in CPython (tests/cpython/test_docs_python.py). Here: `json` blocks parse, `sh`
blocks name real build.py commands, `text` blocks are free."""

from __future__ import annotations

import ast
import json
import re
import shlex

import pytest

from tests.support.docs import Block, anchors, blocks, code_spans, doc_files, links, rel
from tests.support.paths import ROOT

README_MAX_LINES = 120
RUN_BY_TESTS = {"js", "python", "html"}  # the browser and CPython example runners
CHECKED_HERE = {"sh", "json", "text", "http", "yaml", "nginx"}
# Pages other branches write; linking to them before they land is fine (their anchors are not checked).
WRITTEN_ELSEWHERE: set[str] = set()
# Where a path in a code span may be relative to: the checkout, the Python package, its parts.
PATH_BASES = [ROOT, ROOT / "py", ROOT / "py" / "csi", ROOT / "py" / "csi" / "backends", ROOT / "tests"]
# Paths the docs name that only exist once built, or are the reader's own.
NOT_IN_GIT = ("dist/", "imported/", ".cache/", ".venv/", "node_modules/", "my_skills/", "out/", "wasi_deps/",
              "vendor/", "models/", "lang/", "wheels/", "site-manifest.json", "my_worker.js", "csi-web/",
              "public/")

ALL_BLOCKS = [b for path in doc_files() for b in blocks(path)]


def build_py_commands() -> set[str]:
    """The `choices` of build.py's positional `command` argument, read from its source."""
    tree = ast.parse((ROOT / "build.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument" and node.args \
                and isinstance(node.args[0], ast.Constant) and node.args[0].value == "command":
            for kw in node.keywords:
                if kw.arg == "choices":
                    return set(ast.literal_eval(kw.value))
    raise AssertionError("build.py declares no `command` argument with choices")


def test_the_readme_is_a_quick_start_that_fits_two_screens() -> None:
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) < README_MAX_LINES
    for must in ("python3 build.py serve", "python3 build.py test", ".venv/", ".cache/", "node_modules/", "dist/",
                 "~/.cache/pip", "~/.npm", "3.11"):
        assert must in text, f"the README no longer says {must!r}"
    assert sum(b.lang == "js" for b in blocks(ROOT / "README.md")) == 1, "one embedding example"


def test_every_docs_page_is_linked_from_the_readme() -> None:
    linked = {target.split("#")[0] for _, target in links(ROOT / "README.md")}
    pages = {rel(p) for p in doc_files()[1:]} | WRITTEN_ELSEWHERE
    assert pages - linked == set()


def test_every_relative_link_leads_to_a_file_and_its_anchor() -> None:
    broken = []
    for path in doc_files():
        for line, target in links(path):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:, ...
                continue
            file_part, _, anchor = target.partition("#")
            dest = (path.parent / file_part).resolve() if file_part else path
            where = f"{rel(path)}:{line}: {target}"
            if not dest.exists():
                if rel(dest) not in WRITTEN_ELSEWHERE:
                    broken.append(f"{where} (no such file)")
                continue
            if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{where} (no heading with that anchor in {rel(dest)})")
    assert not broken, "\n".join(broken)


@pytest.mark.parametrize("block", ALL_BLOCKS, ids=[b.where for b in ALL_BLOCKS])
def test_every_block_names_a_language_something_checks(block: Block) -> None:
    assert block.lang, f"{block.where}: a fenced block without a language tag"
    assert block.lang in RUN_BY_TESTS | CHECKED_HERE, f"{block.where}: nothing checks `{block.lang}` blocks"
    assert set(block.flags) <= {"worker"} and (not block.flags or block.lang == "js"), \
        f"{block.where}: unknown flags {block.flags}"


def test_json_blocks_parse() -> None:
    for block in ALL_BLOCKS:
        if block.lang == "json":
            try:
                json.loads(block.code)
            except json.JSONDecodeError as exc:
                raise AssertionError(f"{block.where}: not JSON: {exc}") from None


def test_yaml_blocks_parse() -> None:
    import yaml

    for block in ALL_BLOCKS:
        if block.lang == "yaml":
            try:
                yaml.safe_load(block.code)
            except yaml.YAMLError as exc:
                raise AssertionError(f"{block.where}: not YAML: {exc}") from None


def test_nginx_blocks_balance_their_braces_and_end_each_directive() -> None:
    for block in ALL_BLOCKS:
        if block.lang == "nginx":
            code = re.sub(r"#[^\n]*", "", block.code)
            assert code.count("{") == code.count("}") > 0, f"{block.where}: unbalanced braces"
            for line in filter(None, (ln.strip() for ln in code.splitlines())):
                assert line.endswith((";", "{", "}")), f"{block.where}: {line!r} does not end its directive"


def test_http_blocks_start_with_a_request_or_status_line() -> None:
    for block in ALL_BLOCKS:
        if block.lang == "http":
            first = block.code.splitlines()[0]
            assert re.match(r"^(GET|POST|PUT|DELETE|HEAD|OPTIONS|PATCH) /\S* HTTP/1\.1$|^HTTP/1\.1 \d{3}", first), \
                f"{block.where}: {first!r}"


def test_every_build_py_command_in_sh_blocks_is_one_build_py_accepts() -> None:
    commands = build_py_commands()
    seen = 0
    for block in ALL_BLOCKS:
        if block.lang != "sh":
            continue
        for offset, line in enumerate(block.code.splitlines()):
            line = line.split(" #")[0]
            if "build.py" not in line:
                continue
            words = shlex.split(line)
            at = words.index("build.py")
            assert words[at - 1] == "python3", f"{block.file}:{block.line + offset}: run it as `python3 build.py`"
            rest = words[at + 1:]
            command = rest[0] if rest and not rest[0].startswith("-") else "build"
            assert command in commands, f"{block.file}:{block.line + offset}: build.py has no command {command!r}"
            seen += 1
    assert seen >= 2  # at least the README's serve and test


def test_build_py_commands_named_in_prose_exist() -> None:
    """Inline `python3 build.py <command>` too."""
    commands = build_py_commands()
    for path in doc_files():
        for line, span in code_spans(path):
            m = re.match(r"python3 build\.py(?: ([a-z][a-z-]*))?", span)
            if m:
                assert (m[1] or "build") in commands, f"{rel(path)}:{line}: `{span}`"


def _is_repo_path(span: str) -> bool:
    return bool(re.fullmatch(r"[\w.-]+(/[\w.-]+)+/?", span)) and not span.startswith(NOT_IN_GIT) \
        and re.search(r"\.(py|js|mjs|md|json|ts|toml|html)$|/$", span) is not None


def test_paths_the_docs_name_exist() -> None:
    """A file or folder of the checkout named in a code span (`web/engine.js`, `core/decode.py`,
    `tests/unit/`) exists, relative to the checkout or to the Python package."""
    missing = []
    for path in doc_files():
        for line, span in code_spans(path):
            if _is_repo_path(span) and not any((base / span).exists() for base in PATH_BASES):
                missing.append(f"{rel(path)}:{line}: `{span}`")
    assert not missing, "\n".join(missing)


def test_site_paths_in_js_blocks_are_served_files() -> None:
    """`/web/...` and `/worker/...` paths in examples are files of the site's sources."""
    missing = []
    for block in ALL_BLOCKS:
        if block.lang in ("js", "html"):
            for m in re.finditer(r"[\"'](/(?:web|worker)/[\w./-]+\.m?js)", block.code):
                if not (ROOT / m[1].lstrip("/")).is_file():
                    missing.append(f"{block.where}: {m[1]}")
    assert not missing, "\n".join(missing)
