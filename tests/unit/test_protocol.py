"""The worker protocol is declared twice, once per language: the Python routes table and
worker/protocol.js must name the same message types with the same modes."""

from __future__ import annotations

import json
import re
import subprocess

from csi.worker.routes import ROUTES
from tests.support.paths import ROOT


def js_routes() -> dict[str, str]:
    script = "import(process.argv[1]).then((m) => process.stdout.write(JSON.stringify(m.ROUTES)))"
    out = subprocess.run(["node", "--input-type=module", "-e", script, str(ROOT / "worker" / "protocol.js")],
                         capture_output=True, text=True, check=True, timeout=60)
    return json.loads(out.stdout)


def test_python_routes_and_protocol_js_agree() -> None:
    assert js_routes() == {kind: route.mode for kind, route in ROUTES.items()}


def test_every_message_the_page_client_sends_is_declared() -> None:
    """web/engine.js and its parts under web/client/ send message types by name; each must be a
    route (tsc checks the same through protocol.js's typedefs; this catches a type sent without
    going through them), and every route but the boot timings has a method on the page."""
    sources = [ROOT / "web" / "engine.js", *sorted((ROOT / "web" / "client").glob("*.js"))]
    source = "\n".join(path.read_text() for path in sources)
    calls = r'\b(?:send|post|requestCall|streamable|call|skillCall)\((?:\s*[\w.()]+,)*\s*"([a-z_]+)"'
    sent = set(re.findall(calls, source))
    assert sent <= set(ROUTES), sorted(sent - set(ROUTES))
    assert set(ROUTES) - sent == {"boot_timings"}
