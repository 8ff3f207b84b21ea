"""worker/wire_types.d.ts from the routes' pydantic request models: one TypeScript type per model
(through its JSON Schema) and ``Requests``, message type -> the type of its ``request``. The
models are the one source of truth; tsc then checks the page's messages against them, and
tests/unit/test_wire_types.py fails when the file and the models disagree.

    python3 -m buildtools.codegen.wire_types      # rewrite worker/wire_types.d.ts
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "worker" / "wire_types.d.ts"
_PREFIXES = {"openai": "OpenAI", "pharia": "Pharia"}


def _type_name(key: str) -> str:
    """pydantic's name for a model: ``csi__faces__openai__protocol__CompletionRequest`` (two models
    share a class name) -> ``OpenAICompletionRequest``."""
    if "__" not in key:
        return key
    parts = key.split("__")
    prefix = next((_PREFIXES[p] for p in parts if p in _PREFIXES), parts[-2].title().replace("_", ""))
    return prefix + parts[-1]


def _literal(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _comment(text: str | None, indent: str) -> list[str]:
    if not text:
        return []
    lines = text.replace("*/", "*\\/").replace("``", "`").splitlines()
    return [f"{indent}/**", *[f"{indent} * {line}".rstrip() for line in lines], f"{indent} */"]


class _Writer:
    def __init__(self, replies: bool = False) -> None:
        self.replies = replies
        """Reply models: a field with a default other than null is always sent, so it is not optional."""

    def ts(self, s: Any, indent: str = "") -> str:
        """The TypeScript type of schema ``s``."""
        if s is True or s == {}:
            return "unknown"
        if "$ref" in s:
            return _type_name(s["$ref"].rsplit("/", 1)[1])
        if "const" in s:
            return _literal(s["const"])
        if "enum" in s:
            return " | ".join(_literal(v) for v in s["enum"])
        for key in ("anyOf", "oneOf"):
            if key in s:
                return " | ".join(dict.fromkeys(self._member(m, indent) for m in s[key]))
        if "allOf" in s and len(s["allOf"]) == 1:
            return self.ts(s["allOf"][0], indent)
        kind = s.get("type")
        if isinstance(kind, list):
            return " | ".join(self.ts({**s, "type": k}, indent) for k in kind)
        if kind in ("integer", "number"):
            return "number"
        if kind in ("string", "boolean", "null"):
            return str(kind)
        if kind == "array":
            if "prefixItems" in s:
                return "[" + ", ".join(self.ts(i, indent) for i in s["prefixItems"]) + "]"
            return f"Array<{self.ts(s.get('items', {}), indent)}>"
        if kind == "object" or "properties" in s:
            return self._object(s, indent)
        return "unknown"

    def _member(self, s: Any, indent: str) -> str:
        t = self.ts(s, indent)
        return f"({t})" if " | " in t and not t.startswith("{") else t

    def _object(self, s: dict[str, Any], indent: str) -> str:
        props = s.get("properties", {})
        extra = s.get("additionalProperties")
        if not props:
            return f"{{[key: string]: {self.ts(extra if isinstance(extra, dict) else {}, indent)}}}"
        required = set(s.get("required", []))
        if self.replies:
            required |= {name for name, prop in props.items() if prop.get("default") is not None}
        inner = indent + "  "
        lines = ["{"]
        for name, prop in props.items():
            lines += _comment(prop.get("description"), inner)
            key = name if re.fullmatch(r"[A-Za-z_$][\w$]*", name) else _literal(name)
            lines.append(f"{inner}{key}{'' if name in required else '?'}: {self.ts(prop, inner)};")
        if isinstance(extra, dict):
            lines.append(f"{inner}[key: string]: {self.ts(extra, inner)};")
        lines.append(indent + "}")
        return "\n".join(lines)


def _types(models: list[type[Any]], replies: bool) -> tuple[dict[Any, Any], list[str]]:
    """pydantic's refs of ``models`` and the TypeScript declarations of every model they use."""
    from pydantic.json_schema import models_json_schema

    refs, top = models_json_schema([(m, "validation") for m in models], ref_template="#/$defs/{model}")
    defs: dict[str, Any] = top["$defs"]
    w = _Writer(replies)
    out: list[str] = []
    for key in sorted(defs, key=_type_name):
        schema = defs[key]
        out += _comment(schema.get("description"), "")
        body = w.ts({k: v for k, v in schema.items() if k not in ("title", "description")})
        out.append(f"export type {_type_name(key)} = {body};")
        out.append("")
    return refs, out


def _name(refs: dict[Any, Any], model: type[Any]) -> str:
    return _type_name(refs[(model, "validation")]["$ref"].rsplit("/", 1)[1])


def render() -> str:
    """The text of worker/wire_types.d.ts."""
    sys.path.insert(0, str(ROOT / "py"))
    from csi.worker.routes import ROUTES

    def by_name(found: set[Any]) -> list[Any]:
        return sorted(found, key=lambda m: m.__qualname__)

    requests = by_name({r.request for r in ROUTES.values() if r.request is not None})
    replies = by_name({m for r in ROUTES.values() for m in (r.reply, r.chunk) if m is not None})
    out = ["// Generated by `python3 -m buildtools.codegen.wire_types` from the routes' pydantic models",
           "// (py/csi/worker/routes.py): do not edit. tests/unit/test_wire_types.py keeps it current.", "",
           "// ---- requests " + "-" * 84, ""]
    refs, lines = _types(requests, replies=False)
    out += lines
    out += _comment("Message type -> the type of its `request` (types absent here take no `request`).", "")
    out.append("export interface Requests {")
    for kind, route in ROUTES.items():
        if route.request is not None:
            name = _name(refs, route.request)
            body = f'{name}["{route.batch}"]' if route.batch else name
            out.append(f"  {kind}: {body};")
    out.append("}")
    out += ["", "/** Message types whose `request` may be left out. */",
            "export type OptionalRequest = " + (" | ".join(
                _literal(k) for k, r in ROUTES.items() if r.optional) or "never") + ";", "",
            "// ---- replies " + "-" * 85, ""]
    reply_refs, lines = _types(replies, replies=True)
    out += lines
    for title, attr, doc in (("Results", "reply", "Message type -> its `result` (where a model declares it)."),
                             ("Chunks", "chunk", "Message type -> each streamed `chunk`.")):
        out += _comment(doc, "")
        out.append(f"export interface {title} {{")
        out += [f"  {kind}: {_name(reply_refs, getattr(route, attr))};" for kind, route in ROUTES.items()
                if getattr(route, attr) is not None]
        out.append("}")
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    OUT.write_text(render())
    print(f"wrote {OUT.relative_to(ROOT)}")
