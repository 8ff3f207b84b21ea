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
    """web/engine.js sends message types by name; each must be a route (tsc checks the same
    through protocol.js's typedefs; this catches a type sent without going through them)."""
    source = (ROOT / "web" / "engine.js").read_text()
    sent = set(re.findall(r'(?:send|createStreamable)\(\s*"([a-z_]+)"', source))
    sent |= set(re.findall(r'\(\{ id: .*?type: "([a-z_]+)"', source))  # control messages posted directly
    assert sent and sent <= set(ROUTES), sorted(sent - set(ROUTES))
