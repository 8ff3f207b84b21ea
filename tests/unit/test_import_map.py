"""index.html's import map names exactly the vendored modules the build copies, and every bare
import in the page's code (and in the vendored modules) has an entry."""

from __future__ import annotations

import json
import re
from pathlib import Path

from buildtools.site.assemble import CODEMIRROR, NODE, VENDOR
from tests.support.paths import ROOT

BARE_IMPORT = re.compile(r"""(?:^|[;\s])(?:import|export)\s[^'"]*?from\s*['"]([^'"./][^'"]*)['"]"""
                         r"""|import\(\s*['"]([^'"./][^'"]*)['"]\s*\)""", re.M)


def import_map() -> dict[str, str]:
    html = (ROOT / "index.html").read_text()
    block = re.search(r'<script type="importmap">(.*?)</script>', html, re.S)
    assert block, "index.html has no import map"
    imports: dict[str, str] = json.loads(block.group(1))["imports"]
    return imports


def served(url: str) -> Path:
    """The source file the build copies to a `./vendor/...` URL (or a file of the site's own)."""
    rel = url.removeprefix("./")
    if (ROOT / rel).is_file() and rel.startswith(("web/", "app/")):
        return ROOT / rel
    for package, module in CODEMIRROR.items():
        if rel == f"vendor/codemirror/{package}/{Path(module).name}":
            return NODE / module
    folder, _, name = rel.rpartition("/")
    src_dir, names = VENDOR[folder]
    assert name in names, f"{url} is not copied by the build"
    return src_dir / name


def bare_imports(path: Path) -> set[str]:
    return {a or b for a, b in BARE_IMPORT.findall(path.read_text())}


def test_every_entry_points_at_a_file_the_build_copies() -> None:
    imports = import_map()
    assert set(CODEMIRROR) <= set(imports)
    for specifier, url in imports.items():
        assert served(url).is_file(), specifier


def test_every_bare_import_of_the_page_and_its_libraries_is_mapped() -> None:
    imports = import_map()
    sources = [p for folder in ("web", "app") for p in (ROOT / folder).rglob("*.js")]
    sources += [served(u) for u in imports.values()]
    missing = {(p.name, s) for p in sources for s in bare_imports(p) if s not in imports}
    assert missing == set()
    # the check sees imports: the editor's modules import one another by bare name
    assert "@codemirror/state" in bare_imports(NODE / CODEMIRROR["@codemirror/view"])
