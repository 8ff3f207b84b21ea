"""index.html's Content-Security-Policy allows the page's one inline script, its import map, by the
map's SHA-256: the build refuses a page whose policy does not hold the hash of the map it has (the
page would load nothing), and says which hash to write."""

from __future__ import annotations

import base64
import hashlib
import re

_SCRIPTS = re.compile(r"<script\b([^>]*)>(.*?)</script>", re.S | re.I)
_POLICY = re.compile(r'<meta\s+http-equiv="Content-Security-Policy"\s+content="([^"]*)"', re.S | re.I)


def inline_scripts(html: str) -> list[str]:
    """The text of every inline <script> (those without src) of ``html``, as the browser hashes it."""
    return [body for attrs, body in _SCRIPTS.findall(html) if not re.search(r"\bsrc\s*=", attrs)]


def source_hash(text: str) -> str:
    """A CSP hash source for an inline script's text: ``'sha256-<base64>'``."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def policy(html: str) -> dict[str, list[str]]:
    """The page's Content-Security-Policy (its <meta>), directive -> sources."""
    found = _POLICY.search(html)
    if not found:
        raise SystemExit("index.html has no Content-Security-Policy <meta>")
    directives = (d.split() for d in found.group(1).split(";") if d.strip())
    return {d[0]: d[1:] for d in directives}


def check_page_policy(html: str) -> None:
    """Fail the build unless script-src holds the hash of each of the page's inline scripts."""
    allowed = policy(html).get("script-src", [])
    for text in inline_scripts(html):
        want = source_hash(text)
        if want not in allowed:
            raise SystemExit(f"index.html's Content-Security-Policy does not allow its inline script "
                             f"(the import map changed?): write {want} in its script-src")
