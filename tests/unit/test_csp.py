"""No script but ours, read from the sources: index.html's Content-Security-Policy runs the site's
own modules and its one inline script, the import map, by that map's SHA-256 (computed here, so a
changed map with a stale hash fails); its Trusted Types allow one policy, csi-web's; and every DOM
sink in the page's code (web/, app/) takes what that policy made."""

from __future__ import annotations

import base64
import hashlib
import re

import pytest

from buildtools.site.csp import check_page_policy, policy
from tests.support.paths import ROOT

HTML = (ROOT / "index.html").read_text()
_COMMENTS = re.compile(r"/\*.*?\*/|(?<![:\\])//[^\n]*", re.S)


def test_the_import_map_is_allowed_by_its_own_hash() -> None:
    text = re.search(r'<script type="importmap">(.*?)</script>', HTML, re.S)
    assert text, "index.html has no import map"
    digest = base64.b64encode(hashlib.sha256(text.group(1).encode()).digest()).decode()
    assert f"'sha256-{digest}'" in policy(HTML)["script-src"], "the import map changed: update its hash"


def test_scripts_are_the_sites_own_and_sinks_take_only_csi_webs_policy() -> None:
    p = policy(HTML)
    hashes = [s for s in p["script-src"] if s.startswith("'sha256-")]
    assert p["script-src"] == ["'self'", *hashes] and len(hashes) == 1  # no inline, no eval, no other host
    assert p["require-trusted-types-for"] == ["'script'"]
    assert p["trusted-types"] == ["csi-web"]  # one policy, no duplicates
    assert p["object-src"] == ["'none'"] and p["base-uri"] == ["'self'"]
    # the page's other scripts are modules of the site; no inline handler anywhere
    tags = re.findall(r"<script\b([^>]*)>", HTML)
    assert tags == [' type="importmap"', ' type="module" src="app/app.js"']
    assert not re.search(r"<[^>]*\son[a-z]+\s*=", HTML)


def test_the_build_refuses_a_changed_import_map_with_a_stale_hash() -> None:
    check_page_policy(HTML)
    changed = HTML.replace('"imports": {', '"imports": {\n    "evil": "http://127.0.0.1:9/evil.js",', 1)
    assert changed != HTML
    with pytest.raises(SystemExit, match=r"write 'sha256-[A-Za-z0-9+/]+=*' in its script-src"):
        check_page_policy(changed)


def page_code() -> dict[str, str]:
    """The page's JS (the library's page side and the playground), comments left out."""
    files = sorted(p for folder in ("web", "app") for p in (ROOT / folder).rglob("*.js"))
    return {p.relative_to(ROOT).as_posix(): _COMMENTS.sub("", p.read_text()) for p in files}


# A string into these is markup or script: the page's code never does it (the sanitizer parses
# markup for it, inside csi-web's policy, and hands back nodes).
SINKS = re.compile(r"\.(?:innerHTML|outerHTML|srcdoc)\s*=(?!=)|\binsertAdjacentHTML\s*\(|\bdocument\.write(?:ln)?\s*\("
                   r"|\bcreateContextualFragment\s*\(|\bparseFromString\s*\(|\bsetHTMLUnsafe\s*\(|\bparseHTMLUnsafe\s*\("
                   r"|(?<![\w.])eval\s*\(|\bnew\s+Function\s*\(|\bset(?:Timeout|Interval)\s*\(\s*[\"'`]"
                   r"|\b(?:script|\w*Script)\w*\.(?:src|text|textContent|innerText)\s*=(?!=)|\bimportScripts\s*\(")


def test_no_string_reaches_a_dom_sink_in_the_page_code() -> None:
    found = [f"{name}: {m.group(0)}" for name, code in page_code().items() for m in SINKS.finditer(code)]
    assert found == []


def test_every_script_url_goes_through_the_policy_and_the_policy_is_made_in_one_place() -> None:
    code = page_code()
    worker = re.compile(r"new\s+(?:Shared)?Worker\s*\(\s*([\w.]+)")
    workers = [(n, m.group(1)) for n, c in code.items() for m in worker.finditer(c)]
    assert workers and all(arg == "trustedScriptURL" for _, arg in workers), workers
    registers = [(n, m.group(1)) for n, c in code.items() for m in re.finditer(r"\.register\s*\(\s*([\w.]+)\s*\(", c)
                 if "container" in c[max(0, m.start() - 20):m.start()]]
    assert registers == [("web/site_worker.js", "trustedScriptURL")]
    assert [n for n, c in code.items() if "createPolicy(" in c] == ["web/trusted_types.js"]
    # markup is made only for the sanitizer of the Markdown renderer
    users = {n for n, c in code.items() if re.search(r"\bwithSanitizerPolicy\s*\(", c)}
    assert users == {"web/trusted_types.js", "app/render/markdown.js"}
