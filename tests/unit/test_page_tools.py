"""Tools skills call (csi.skills.page_tools): specs checked when registered, arguments checked
against the tool's schema and named by field (fastjsonschema, held to the ``jsonschema`` package
on a corpus and on random arguments), results as ``ToolOutput`` contents, failures as
``ToolFailed``, and a cancelled scope ending the wait (``AbortError``) and the tool."""

from __future__ import annotations

import asyncio
import http.server
import json
import subprocess
import threading
import time
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from csi.backends.local_host import LocalHost
from csi.core.engine import Engine
from csi.core.scope import Scope
from csi.errors import AbortError, CsiError, InvalidInputError, NotFoundError, ToolFailed
from csi.runtime import build_runtime
from csi.skills.page_tools import ToolRegistry, ToolSpec, tool_contents
from csi.skills.tool_schema import UNSUPPORTED
from csi.testing import ScriptedBackend
from csi.worker.app import WorkerApp
from tests.support.aio import run_async
from tests.support.tool_schemas import CORPUS, reference, reference_params

WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def registry() -> ToolRegistry:
    return ToolRegistry(Engine(ScriptedBackend([b"<eos>"], [0])))


def refusal(call: Any) -> dict[str, Any]:
    with pytest.raises(InvalidInputError) as info:
        call()
    return info.value.to_dict()


def invoke(reg: ToolRegistry, name: Any, arguments: Any, scope: Scope | None = None) -> list[str]:
    return run_async(reg.invoke(name, arguments, scope))


# ---- specs ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("spec", "param"), [
    ("weather", "spec"),
    ({"description": "d", "input_schema": WEATHER}, "name"),
    ({"name": "", "input_schema": WEATHER}, "name"),
    ({"name": "a b", "input_schema": WEATHER}, "name"),
    ({"name": "x" * 65, "input_schema": WEATHER}, "name"),
    ({"name": 5, "input_schema": WEATHER}, "name"),
    ({"name": "w", "description": 5, "input_schema": WEATHER}, "description"),
    ({"name": "w"}, "input_schema"),
    ({"name": "w", "input_schema": []}, "input_schema"),
    ({"name": "w", "input_schema": {"type": "string"}}, "input_schema.type"),
    ({"name": "w", "input_schema": {"type": "strin"}}, "input_schema.type"),
    ({"name": "w", "input_schema": {"properties": {"a": {"type": "strin"}}}}, "input_schema"),
    ({"name": "w", "input_schema": {"properties": []}}, "input_schema"),
    ({"name": "w", "input_schema": {"properties": {"a": {"pattern": "("}}}}, "input_schema"),
    ({"name": "w", "input_schema": {"properties": {"a": {"$ref": "#/$defs/nope"}}}}, "input_schema"),
    ({"name": "w", "input_schema": {"required": "city"}}, "input_schema"),
    ({"name": "w", "input_schema": {"properties": {"a": {"minimum": float("nan")}}}}, "input_schema"),
    ({"name": "w", "input_schema": {"properties": {"a": {"$ref": "other.json"}}}}, "input_schema.properties.a.$ref"),
    ({"name": "w", "input_schema": {"properties": {"a": {"items": [{}, {"$ref": "https://x.example/s"}]}}}},
     "input_schema.properties.a.items[1].$ref"),
    ({"name": "w", "input_schema": {"properties": {"a": {"prefixItems": [{}]}}}},
     "input_schema.properties.a.prefixItems"),
    ({"name": "w", "input_schema": {"dependentRequired": {"a": ["b"]}}}, "input_schema.dependentRequired"),
    ({"name": "w", "input_schema": {"$defs": {"x": {"unevaluatedProperties": False}}}},
     "input_schema.$defs.x.unevaluatedProperties"),
    ({"name": "w", "input_schema": WEATHER, "parameters": {}}, "parameters"),
])
def test_a_bad_spec_is_refused_naming_its_field(spec: Any, param: str) -> None:
    reg = registry()
    assert refusal(lambda: reg.register(spec, lambda a: "x"))["param"] == param
    assert reg.list() == []


def test_a_good_spec_is_kept_as_given_and_its_name_may_be_64_characters() -> None:
    reg = registry()
    name = "A-z_0" * 12 + "abcd"
    spec = reg.register({"name": name, "description": "Weather by city", "input_schema": WEATHER}, lambda a: "x")
    assert spec == ToolSpec(name, "Weather by city", WEATHER) and reg.list() == [spec]
    assert reg.register(spec, lambda a: "y").description == "Weather by city"  # a ToolSpec registers too
    assert reg.register({"name": "bare", "input_schema": {}}, lambda a: "x").description == ""
    assert refusal(lambda: reg.register({"name": "w", "input_schema": {}}, "not callable"))["param"] == "invoke"


def test_a_property_named_ref_is_a_property_and_draft_7_ignores_2019_keywords() -> None:
    reg = registry()
    reg.register({"name": "c", "input_schema": {"properties": {"$ref": {"type": "integer"}}}}, lambda a: "ok")
    assert invoke(reg, "c", {"$ref": 1}) == ["ok"]
    assert refusal(lambda: invoke(reg, "c", {"$ref": "x"}))["param"] == "arguments.$ref"
    # fastjsonschema resolves a "$ref" even inside data (const, enum, default): one that leaves the
    # schema is refused there too, and nothing is fetched (test_nothing_is_fetched_for_a_schema)
    err = refusal(lambda: reg.register({"name": "d", "input_schema": {"properties": {
        "a": {"const": {"$ref": "http://x.example/"}}}}}, lambda a: "ok"))
    assert err["param"] == "input_schema" and "only references inside the schema" in err["message"]
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#", "dependentRequired": {"a": ["b"]}}
    reg.register({"name": "d7", "input_schema": draft7}, lambda a: "ok")  # an unknown keyword in draft 7
    assert invoke(reg, "d7", {"a": 1}) == ["ok"]
    assert set(UNSUPPORTED) >= {"prefixItems", "unevaluatedProperties", "dependentRequired"}


@pytest.fixture
def schema_server() -> Iterator[tuple[str, list[str]]]:
    """An HTTP server that serves a schema at any path and records every request."""
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            hits.append(self.path)
            body = json.dumps({"type": "string"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", hits
    server.shutdown()


def test_nothing_is_fetched_for_a_schema(schema_server: tuple[str, list[str]]) -> None:
    url, hits = schema_server
    reg = registry()
    for ref in (f"{url}/s.json", f"{url}/s.json#/x"):
        err = refusal(lambda ref=ref: reg.register(
            {"name": "r", "input_schema": {"properties": {"a": {"$ref": ref}}}}, lambda a: "x"))
        assert err["param"] == "input_schema.properties.a.$ref"
        assert "only references starting with '#'" in err["message"]
        err = refusal(lambda ref=ref: reg.register(  # data beside an assertion: fastjsonschema resolves it
            {"name": "r", "input_schema": {"properties": {"a": {"type": "string", "default": {"$ref": ref}}}}},
            lambda a: "x"))
        assert err["param"] == "input_schema"
    # an $id that is a URL: references inside the schema resolve against it, without a fetch
    local = {"$id": f"{url}/root.json", "type": "object", "properties": {"a": {"$ref": "#/$defs/s"}},
             "$defs": {"s": {"type": "integer"}}}
    reg.register({"name": "local", "input_schema": local}, lambda a: "ok")
    assert invoke(reg, "local", {"a": 1}) == ["ok"]
    assert refusal(lambda: invoke(reg, "local", {"a": "x"}))["param"] == "arguments.a"
    assert hits == []


def test_the_registry_keeps_its_own_copy_replaces_by_name_lists_by_name_and_removes() -> None:
    reg = registry()
    schema = json.loads(json.dumps(WEATHER))
    reg.register({"name": "weather", "input_schema": schema}, lambda a: "old")
    schema["properties"]["city"]["type"] = "integer"  # the caller's dict changes afterwards
    assert invoke(reg, "weather", {"city": "Paris"}) == ["old"]
    reg.register({"name": "weather", "description": "new", "input_schema": {}}, lambda a: "new")
    reg.register({"name": "alpha", "input_schema": {}}, lambda a: "a")
    assert [(s.name, s.description) for s in reg.list()] == [("alpha", ""), ("weather", "new")]
    assert invoke(reg, "weather", {"city": 5}) == ["new"]  # the new schema took the old one's place
    reg.remove("weather")
    assert [s.name for s in reg.list()] == ["alpha"]
    for name in ("weather", 5, None):
        assert refusal(lambda name=name: reg.remove(name))["param"] == "name"
        assert refusal(lambda name=name: invoke(reg, name, {}))["param"] == "name"


# ---- arguments ------------------------------------------------------------------------------------


CASES = [(label, i, args) for label, (_, instances) in CORPUS.items() for i, args in enumerate(instances)]


@pytest.mark.parametrize(("label", "index", "arguments"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_arguments_are_judged_as_the_jsonschema_package_judges_them(label: str, index: int, arguments: Any) -> None:
    schema = CORPUS[label][0]
    reg = registry()
    reg.register({"name": "t", "input_schema": schema}, lambda a: "ran")
    valid = reference(schema).is_valid(arguments)
    if valid:
        assert invoke(reg, "t", arguments) == ["ran"]
    else:
        err = refusal(lambda: invoke(reg, "t", arguments))
        assert err["param"] in reference_params(schema, arguments), (err, reference_params(schema, arguments))
        assert err["message"].startswith(f"`{err['param']}`")


def test_the_corpus_has_both_verdicts_for_every_schema() -> None:
    for label, (schema, instances) in CORPUS.items():
        verdicts = {reference(schema).is_valid(i) for i in instances}
        assert verdicts == {True, False} or label in ("empty", "boolean schemas"), label


_SCALARS = (st.none() | st.booleans() | st.integers(-(2**60), 2**60) | st.floats(allow_nan=False, allow_infinity=False)
            | st.sampled_from(["", "x", "a.b", "12345", "é", "😀😀", "c", "f"]))
_NAMES = st.sampled_from(["value", "children", "name", "zip", "x", "a", "b"]) | st.text(max_size=4)
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4)
                       | st.dictionaries(_NAMES, inner, max_size=4), max_leaves=12)


def _keys(schema: Any) -> list[str]:
    """Every property name the schema mentions (so random arguments hit its rules)."""
    out: list[str] = []
    if isinstance(schema, dict):
        for k, v in schema.items():
            if k in ("properties", "$defs", "definitions", "dependencies", "patternProperties") and isinstance(v, dict):
                out += list(v)
            out += _keys(v)
    elif isinstance(schema, list):
        for v in schema:
            out += _keys(v)
    return out + ["x_1", "other", "toolongname"]


@st.composite
def schema_and_arguments(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    label = draw(st.sampled_from(sorted(CORPUS)))
    keys = st.sampled_from(sorted(set(_keys(CORPUS[label][0]))))
    return label, draw(st.dictionaries(keys, _VALUES, max_size=5))


_REGISTRIES: dict[str, ToolRegistry] = {}


@settings(max_examples=600, deadline=None, database=None)
@given(schema_and_arguments())
def test_random_arguments_are_judged_as_the_jsonschema_package_judges_them(case: tuple[str, dict[str, Any]]) -> None:
    label, arguments = case
    schema = CORPUS[label][0]
    if label not in _REGISTRIES:
        _REGISTRIES[label] = registry()
        _REGISTRIES[label].register({"name": "t", "input_schema": schema}, lambda a: "ran")
    reg = _REGISTRIES[label]
    if "multipleOf" in json.dumps(schema) and any(isinstance(v, float) for v in arguments.values()):
        return  # the reference divides floats (see test_multiple_of_is_decimal_arithmetic)
    if reference(schema).is_valid(arguments):
        assert invoke(reg, "t", arguments) == ["ran"]
    else:
        err = refusal(lambda: invoke(reg, "t", arguments))
        assert err["param"] in reference_params(schema, arguments), (err, reference_params(schema, arguments))


@pytest.mark.parametrize(("arguments", "param"), [
    ({"city": 5}, "arguments.city"),
    ({}, "arguments.city"),
    ({"city": "x", "items": [1, 2, "3"]}, "arguments.items[2]"),
    ({"city": "x", "address": {}}, "arguments.address.zip"),
    ({"city": "x", "stops": [{"name": "a"}, {"name": 2}]}, "arguments.stops[1].name"),
    ({"city": "x", "a.b": {"c[0]": "no"}}, "arguments.a.b.c[0]"),
    ({"city": "x", "unknown": 1}, "arguments.unknown"),
    ({"city": "x", "from": "2026-01-01"}, "arguments.to"),
    ([], "arguments"),
    ({"city": "x", "n": {1, 2}}, "arguments"),
    ({"city": "x", "n": float("nan")}, "arguments"),
])
def test_an_error_names_the_field(arguments: Any, param: str) -> None:
    schema = {"type": "object", "additionalProperties": False, "dependencies": {"from": ["to"]}, "required": ["city"],
              "properties": {"city": {"type": "string"}, "items": {"type": "array", "items": {"type": "integer"}},
                             "address": {"type": "object", "required": ["zip"]}, "n": {}, "from": {}, "to": {},
                             "stops": {"type": "array", "items": {"properties": {"name": {"type": "string"}}}},
                             "a.b": {"properties": {"c[0]": {"type": "integer"}}}}}
    reg = registry()
    reg.register({"name": "t", "input_schema": schema}, lambda a: "ran")
    assert refusal(lambda: invoke(reg, "t", arguments))["param"] == param


def _ecma_test(pattern: str, text: str) -> bool:
    script = "process.stdout.write(String(new RegExp(process.argv[1], 'u').test(process.argv[2])))"
    out = subprocess.run(["node", "-e", script, pattern, text], capture_output=True, text=True, check=True, timeout=60)
    return out.stdout == "true"


@pytest.mark.parametrize(("pattern", "text"), [("^a+$", "aaa\n"), ("^a+$", "aaa"), ("^[0-9]{5}$", "12345\n"),
                                               ("b$", "ab"), ("^x", "yx")])
def test_a_pattern_matches_as_an_ecma_regular_expression_does(pattern: str, text: str) -> None:
    """Node's RegExp is the reference: JSON Schema patterns are ECMA-262, where `$` is the end."""
    reg = registry()
    reg.register({"name": "t", "input_schema": {"properties": {"s": {"pattern": pattern}}}}, lambda a: "ran")
    try:
        ours = invoke(reg, "t", {"s": text}) == ["ran"]
    except InvalidInputError as exc:
        assert exc.param == "arguments.s"
        ours = False
    assert ours == _ecma_test(pattern, text)


@pytest.mark.parametrize("value", [0.3, 0.7, 1.1, 0.35, 2.5e-7, 19.01, 3])
def test_multiple_of_is_decimal_arithmetic(value: float) -> None:
    reg = registry()
    reg.register({"name": "t", "input_schema": {"properties": {"m": {"multipleOf": 0.1}}}}, lambda a: "ran")
    expected = Decimal(repr(value)) % Decimal("0.1") == 0
    try:
        ours = invoke(reg, "t", {"m": value}) == ["ran"]
    except InvalidInputError:
        ours = False
    assert ours == expected


# ---- results and failures -------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "contents"), [
    ("sunny", ["sunny"]),
    (["a", "b"], ["a", "b"]),
    (("a", "b"), ["a", "b"]),
    ([], []),
    (None, []),
    ("", [""]),
    ({"temp": 21.5, "sky": "clear"}, ['{"temp": 21.5, "sky": "clear"}']),
    ([1, "a"], ['[1, "a"]']),
    (3, ["3"]),
    (True, ["true"]),
    ({"city": "Zürich"}, ['{"city": "Zürich"}']),
])
def test_a_result_becomes_the_contents_of_a_tool_output(value: Any, contents: list[str]) -> None:
    assert tool_contents(value) == contents
    for text, expected in zip(tool_contents(value), contents, strict=True):
        if not isinstance(value, str | list | tuple) or (isinstance(value, list) and value and
                                                          not all(isinstance(v, str) for v in value)):
            assert json.loads(text) == json.loads(expected)


@pytest.mark.parametrize("value", [{1, 2}, float("nan"), {"x": float("inf")}, object(), "\ud800", ["a", "\udfff"]])
def test_a_result_that_is_not_json_text_fails_the_tool(value: Any) -> None:
    with pytest.raises(ToolFailed):
        tool_contents(value)


def test_sync_and_async_tools_get_the_arguments_and_give_contents() -> None:
    reg = registry()
    seen: list[Any] = []

    def sync(arguments: dict[str, Any]) -> str:
        seen.append(arguments)
        return f"sunny in {arguments['city']}"

    async def later(arguments: dict[str, Any]) -> list[str]:
        await asyncio.sleep(0.01)
        seen.append(arguments)
        return [arguments["city"], "tomorrow"]

    reg.register({"name": "now", "input_schema": WEATHER}, sync)
    reg.register({"name": "later", "input_schema": WEATHER}, later)
    assert invoke(reg, "now", {"city": "Oslo"}) == ["sunny in Oslo"]
    assert invoke(reg, "later", {"city": "Rome"}) == ["Rome", "tomorrow"]
    assert seen == [{"city": "Oslo"}, {"city": "Rome"}]


def test_what_a_tool_raises_is_its_own_failure() -> None:
    reg = registry()

    def raises(arguments: dict[str, Any]) -> str:
        raise ValueError("no such city")

    async def rejects(arguments: dict[str, Any]) -> str:
        await asyncio.sleep(0)
        raise LookupError("the weather service is down")

    def typed(arguments: dict[str, Any]) -> str:
        raise NotFoundError("no station near here", "city")

    def bare(arguments: dict[str, Any]) -> str:
        raise KeyError

    for name, fn, message in [("raises", raises, "no such city"), ("rejects", rejects, "the weather service is down"),
                              ("typed", typed, "no station near here"), ("bare", bare, "KeyError")]:
        reg.register({"name": name, "input_schema": {}}, fn)
        with pytest.raises(ToolFailed) as info:
            invoke(reg, name, {})
        assert info.value.message == message and not isinstance(info.value, CsiError)


# ---- cancelling -----------------------------------------------------------------------------------


class SlowTool:
    """An async tool that waits until released, recording whether it was cancelled."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled = False

    async def __call__(self, arguments: dict[str, Any]) -> str:
        self.started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return "late"


def _cancel_case(how: str) -> tuple[str, float, bool, int]:
    async def scenario() -> tuple[str, float, bool, int]:
        engine = Engine(ScriptedBackend([b"<eos>"], [0]))
        reg, tool = ToolRegistry(engine), SlowTool()
        reg.register({"name": "slow", "input_schema": {}}, tool)
        call = asyncio.ensure_future(reg.invoke("slow", {}, Scope("r1", engine.interrupt_epoch)))
        await tool.started.wait()
        started = time.perf_counter()
        engine.abort("r1") if how == "abort" else engine.interrupt()
        try:
            await call
        except AbortError as exc:
            await asyncio.sleep(0)  # the tool's task sees its cancellation
            return exc.message, time.perf_counter() - started, tool.cancelled, engine.scheduler.waiting
        raise AssertionError("the call was not cancelled")

    return run_async(scenario())


@pytest.mark.parametrize(("how", "reason"), [("abort", "was cancelled"),
                                             ("interrupt", "was stopped by interruptGenerate()")])
def test_cancelling_the_scope_ends_the_wait_at_once_and_cancels_the_tool(how: str, reason: str) -> None:
    message, waited, tool_cancelled, wakers = _cancel_case(how)
    assert message == f"the call of tool 'slow' {reason} while the tool ran"
    assert waited < 0.5 and tool_cancelled and wakers == 0


def test_a_call_whose_scope_is_already_cancelled_never_starts_the_tool() -> None:
    engine = Engine(ScriptedBackend([b"<eos>"], [0]))
    reg, calls = ToolRegistry(engine), []
    reg.register({"name": "t", "input_schema": {}}, calls.append)
    engine.abort("gone")
    with pytest.raises(AbortError):
        invoke(reg, "t", {}, Scope("gone", engine.interrupt_epoch))
    stale = Scope("fresh", engine.interrupt_epoch)
    engine.interrupt()
    with pytest.raises(AbortError):
        invoke(reg, "t", {}, stale)
    assert calls == []


def test_a_call_outside_a_scope_or_finished_leaves_nothing_waiting() -> None:
    async def scenario() -> tuple[list[str], list[str], int]:
        engine = Engine(ScriptedBackend([b"<eos>"], [0]))
        reg = ToolRegistry(engine)

        async def quick(arguments: dict[str, Any]) -> str:
            await asyncio.sleep(0.05)
            return "done"

        reg.register({"name": "q", "input_schema": {}}, quick)
        unscoped = asyncio.ensure_future(reg.invoke("q", {}))
        await asyncio.sleep(0.01)
        engine.interrupt()  # no scope: nothing to stop
        scoped = await reg.invoke("q", {}, Scope("r2", engine.interrupt_epoch))
        await asyncio.sleep(0)  # the watch of the finished call ends
        return await unscoped, scoped, engine.scheduler.waiting

    assert run_async(scenario()) == (["done"], ["done"], 0)


def test_cancelling_the_caller_cancels_the_tool_and_a_late_failure_is_no_unhandled_error() -> None:
    async def scenario() -> tuple[bool, list[Any]]:
        loop = asyncio.get_running_loop()
        unhandled: list[Any] = []
        loop.set_exception_handler(lambda _, context: unhandled.append(context))
        engine = Engine(ScriptedBackend([b"<eos>"], [0]))
        reg, tool = ToolRegistry(engine), SlowTool()
        reg.register({"name": "slow", "input_schema": {}}, tool)

        async def fails_when_cancelled(arguments: dict[str, Any]) -> str:
            try:
                await asyncio.sleep(60)
            finally:
                raise RuntimeError("failed while being cancelled")

        reg.register({"name": "messy", "input_schema": {}}, fails_when_cancelled)
        call = asyncio.ensure_future(reg.invoke("slow", {}, Scope("r3", engine.interrupt_epoch)))
        await tool.started.wait()
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        messy = asyncio.ensure_future(reg.invoke("messy", {}, Scope("r4", engine.interrupt_epoch)))
        await asyncio.sleep(0.01)
        engine.abort("r4")
        with pytest.raises(AbortError):
            await messy
        for _ in range(3):
            await asyncio.sleep(0)
        import gc

        gc.collect()
        await asyncio.sleep(0)
        return tool.cancelled, unhandled

    cancelled, unhandled = run_async(scenario())
    assert cancelled and unhandled == []


# ---- through the worker's messages ----------------------------------------------------------------


def test_the_worker_messages_register_list_remove_and_page_calls_reach_the_page() -> None:
    asked: list[tuple[str, dict[str, Any]]] = []

    async def call_page(name: str, arguments: dict[str, Any]) -> Any:
        asked.append((name, arguments))
        return {"forecast": "rain", "for": arguments["city"]}

    runtime = build_runtime(ScriptedBackend([b"<eos>"], [0]), LocalHost())
    sent: list[str] = []
    app = WorkerApp(runtime, sent.append, call_page)
    bare = WorkerApp(build_runtime(ScriptedBackend([b"<eos>"], [0]), LocalHost()), sent.append)

    def reply(which: WorkerApp, kind: str, request: Any = None) -> dict[str, Any]:
        sent.clear()
        body = {"id": "t1", "type": kind} | ({} if request is None else {"request": request})
        run_async(which.serve(json.dumps(body)))
        return json.loads(sent[-1])

    spec = {"name": "weather", "description": "Rain or shine", "input_schema": WEATHER}
    assert reply(app, "tools_register", spec) == {"id": "t1", "type": "result", "result": spec}
    assert reply(app, "tools_register", {"name": "w2", "input_schema": {}})["result"]["description"] == ""
    assert reply(app, "tools_list")["result"] == [{"name": "w2", "description": "", "input_schema": {}}, spec]
    assert invoke(runtime.tools, "weather", {"city": "Bergen"}) == ['{"forecast": "rain", "for": "Bergen"}']
    assert asked == [("weather", {"city": "Bergen"})]
    for request, param in [({"name": 5, "input_schema": {}}, "name"), ({"name": "a b", "input_schema": {}}, "name"),
                           ({"name": "w", "input_schema": {"type": "strin"}}, "input_schema.type"),
                           ({"name": "w", "input_schema": []}, "input_schema"),
                           ({"name": "w", "input_schema": {}, "fn": "x"}, "fn"),
                           ({"name": "w"}, "input_schema")]:
        err = reply(app, "tools_register", request)["error"]
        assert (err["name"], err["param"]) == ("InvalidInputError", param), (request, err)
    assert reply(app, "tools_remove", {"name": "weather"})["result"] is None
    assert reply(app, "tools_remove", {"name": "weather"})["error"]["param"] == "name"
    assert [s["name"] for s in reply(app, "tools_list")["result"]] == ["w2"]
    # a worker without a page (CPython) takes the spec; a call says there is no page to run it
    reply(bare, "tools_register", spec)
    with pytest.raises(ToolFailed, match="no page is connected"):
        run_async(bare.runtime.tools.invoke("weather", {"city": "x"}))
