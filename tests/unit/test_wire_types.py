"""The page's message types are the Python models: worker/wire_types.d.ts and the generated part of
worker/protocol.js are what the generator makes of the routes' pydantic models today, and tsc holds
the page's messages and replies to them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from pydantic import RootModel

from buildtools.codegen.wire_types import OUT, PROTOCOL, render, render_protocol
from csi.worker.routes import ROUTES
from tests.support.paths import ROOT

TSC = ROOT / "node_modules" / ".bin" / "tsc"


def test_the_typescript_declarations_are_generated_from_the_current_models() -> None:
    assert OUT.read_text() == render(), "a request model changed: run `python3 -m buildtools.codegen.wire_types`"


def test_the_protocols_message_types_modes_and_load_defaults_are_generated_from_the_routes() -> None:
    text = PROTOCOL.read_text()
    assert text == render_protocol(text), "the routes changed: run `python3 -m buildtools.codegen.wire_types`"


def test_every_route_declares_its_reply_and_the_page_has_its_type() -> None:
    text = OUT.read_text()
    results = text[text.index("export interface Results {"):]
    results = results[:results.index("}")]
    chunks = text[text.index("export interface Chunks {"):]
    for kind, route in ROUTES.items():
        assert route.reply is not None and f"  {kind}: " in results, kind
        assert (route.chunk is not None) == (route.mode == "stream") == (f"  {kind}: " in chunks), kind


def test_every_route_with_a_body_has_its_type_and_every_field_of_its_model() -> None:
    whole = OUT.read_text()
    text = whole[:whole.index("// ---- replies")]  # the requests (every route has a reply)
    for kind, route in ROUTES.items():
        if route.request is None:
            assert f"  {kind}: " not in text
            continue
        assert f"  {kind}: " in text, kind
        for name in route.request.model_fields:
            assert f"  {name}: " in text or f"  {name}?: " in text, (kind, name)
    replies = whole[whole.index("// ---- replies"):]
    for kind, route in ROUTES.items():
        for model in (route.reply, route.chunk):
            if model is not None:
                assert f"export type {model.__name__} = " in replies, (kind, model)
                fields = {} if issubclass(model, RootModel) else model.model_fields  # a root model: its value
                for name, field in fields.items():  # a field always sent is never optional
                    optional = not field.is_required() and field.default is None
                    assert f"  {name}{'?' if optional else ''}: " in replies, (kind, name)


def _tsc(tmp_path: Path, message: str) -> str:
    check = tmp_path / "check.js"
    protocol = json.dumps(str(ROOT / "worker" / "protocol.js"))
    check.write_text(f"// @ts-check\n/** @type {{import({protocol}).PageMessage}} */\nexport const m = {message};\n")
    config = tmp_path / "jsconfig.json"
    config.write_text(json.dumps({"compilerOptions": {
        "target": "ES2022", "module": "ES2022", "moduleResolution": "bundler", "lib": ["ES2022"], "types": [],
        "allowJs": True, "checkJs": True, "noEmit": True, "strict": True, "skipLibCheck": True},
        "files": [str(check)]}))
    out = subprocess.run([str(TSC), "-p", str(config)], capture_output=True, text=True, timeout=300)
    return out.stdout + out.stderr


@pytest.mark.parametrize(("message", "wrong"), [
    ('{id: "1", type: "chat", request: {messages: [{role: "user", content: "hi"}], max_tokens: 3}}', None),
    ('{id: "1", type: "chat", request: {messages: [{role: "user", content: "hi"}], max_token: 3}}', "max_token"),
    ('{id: "1", type: "skills_run", request: {name: "s", input: {a: 1}, time_limit_ms: 5}}', None),
    ('{id: "1", type: "skills_run", request: {nam: "s"}}', "nam"),
    ('{id: "1", type: "csi_complete", request: [{model: "m", prompt: "x", params: {max_tokens: 1}}]}', None),
    ('{id: "1", type: "csi_complete", request: {model: "m", prompt: "x"}}', "PhariaCompletionRequest[]"),
    ('{id: "1", type: "interrupt"}', None),
    ('{id: "1", type: "interrupt", request: {}}', "request"),
    ('{id: "1", type: "index_list"}', None),
    ('{id: "1", type: "load", request: {model_ids: ["tiny-chat"], device: "gpu"}}', "device"),
])
def test_tsc_rejects_a_message_its_model_would_refuse(tmp_path: Path, message: str, wrong: str | None) -> None:
    out = _tsc(tmp_path, message)
    if wrong is None:
        assert "error" not in out, out
    else:
        assert "error TS" in out and (wrong in out or "not assignable" in out), out
