"""Tools the page provides (engine.tools): registered, listed, replaced and removed from the page,
bad specs refused naming the field, and called by skills written for pharia-skill 0.20.0
(``csi.list_tools()``, ``csi.invoke_tool(...)``, ``invoke_tool_concurrent``) through a real
round trip: Python in the worker -> the page's JS function -> back, sync, async and throwing, and
a skill cancelled while it waits on a page tool (the tool's AbortSignal aborts)."""

from __future__ import annotations

import json

import pytest

from tests.support.browser import open_engine_page

pytestmark = pytest.mark.browser

WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}

# window.calls records what each page function received; window.aborted the reasons of its signals
PAGE_TOOLS = """
window.calls = []; window.aborted = [];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
await engine.tools.register({name: 'weather', description: 'The weather in a city', input_schema: arg},
  (args) => { calls.push(['weather', args]); return {city: args.city, temp_c: 21}; });
await engine.tools.register({name: 'later', input_schema: {type: 'object', properties: {words: {type: 'array',
    items: {type: 'string'}}}}},
  async ({words}) => { calls.push(['later', words]); await sleep(30); return words.map((w) => w.toUpperCase()); });
await engine.tools.register({name: 'broken', input_schema: {}},
  () => { calls.push(['broken']); throw new Error('station offline'); });
await engine.tools.register({name: 'ping', input_schema: {}}, () => 'pong');
await engine.tools.register({name: 'forever', input_schema: {}}, (args, {signal}) => new Promise((_, reject) => {
  calls.push(['forever']);
  signal.addEventListener('abort', () => { aborted.push(signal.reason.name); reject(signal.reason); });
}));
"""

USE_TOOLS = '''
"""Call the page's tools and report what came back."""
from pydantic import BaseModel, JsonValue

from pharia_skill import Csi, InvokeRequest, ToolError, ToolOutput, skill


class Input(BaseModel):
    city: str


class Output(BaseModel):
    tools: list[dict[str, JsonValue]]
    weather: list[str]
    weather_text: str
    later: list[str]
    broken: str
    concurrent: list[str]


@skill
def use_tools(csi: Csi, input: Input) -> Output:
    tools = [{"name": t.name, "description": t.description, "input_schema": t.input_schema}
             for t in csi.list_tools()]
    weather = csi.invoke_tool("weather", city=input.city)
    later = csi.invoke_tool("later", words=["rain", "sun"])
    try:
        csi.invoke_tool("broken", city=input.city)
        broken = "no error"
    except ToolError as exc:
        broken = exc.message
    both = csi.invoke_tool_concurrent([InvokeRequest("weather", {"city": "Rome"}), InvokeRequest("broken", {})])
    concurrent = [r.text() if isinstance(r, ToolOutput) else f"error: {r.message}" for r in both]
    return Output(tools=tools, weather=weather.contents, weather_text=weather.text(), later=later.contents,
                  broken=broken, concurrent=concurrent)
'''

WAIT_FOR_TOOL = '''
from pydantic import BaseModel

from pharia_skill import Csi, skill


class Input(BaseModel):
    tool: str


class Output(BaseModel):
    text: str


@skill
def wait_for_tool(csi: Csi, input: Input) -> Output:
    return Output(text=csi.invoke_tool(input.tool).text())
'''


@pytest.fixture(scope="module")
def tools_page(browser, site_url):
    """A page of its own, with tiny-chat only."""
    ep = open_engine_page(browser, site_url, ["tiny-chat"])
    yield ep
    ep.page.context.close()


def _specs(ep) -> list[dict]:
    return ep.ok("return await engine.tools.list();")


def test_register_list_replace_and_remove(tools_page):
    ep = tools_page
    for name in [s["name"] for s in _specs(ep)]:
        ep.ok("await engine.tools.remove(arg);", name)
    spec = {"name": "weather", "description": "The weather in a city", "input_schema": WEATHER}
    assert ep.ok("return await engine.tools.register(arg, (a) => 'sunny');", spec) == spec
    assert ep.ok("return await engine.tools.register({name: 'clock', input_schema: {}}, async () => 'noon');") == {
        "name": "clock", "description": "", "input_schema": {}}
    assert _specs(ep) == [{"name": "clock", "description": "", "input_schema": {}}, spec]
    replaced = {**spec, "description": "Weather, in Celsius"}
    assert ep.ok("return await engine.tools.register(arg, (a) => 'warm');", replaced) == replaced
    assert _specs(ep) == [{"name": "clock", "description": "", "input_schema": {}}, replaced]
    ep.ok("await engine.tools.remove('clock');")
    assert _specs(ep) == [replaced]
    gone = ep.call("await engine.tools.remove('clock');")
    assert (gone["error"]["name"], gone["error"]["param"]) == ("InvalidInputError", "name")
    ep.ok("await engine.tools.remove('weather');")
    assert _specs(ep) == []


@pytest.mark.parametrize(("script", "name", "param"), [
    ("return await engine.tools.register({name: 'w', input_schema: {}}, 'not a function');", "TypeError", "fn"),
    ("return await engine.tools.register({name: 'w', input_schema: {}});", "TypeError", "fn"),
    ("return await engine.tools.register('w', () => 1);", "InvalidInputError", "spec"),
    ("return await engine.tools.register({name: 'w w', input_schema: {}}, () => 1);", "InvalidInputError", "name"),
    ("return await engine.tools.register({name: 'x'.repeat(65), input_schema: {}}, () => 1);",
     "InvalidInputError", "name"),
    ("return await engine.tools.register({input_schema: {}}, () => 1);", "InvalidInputError", "name"),
    ("return await engine.tools.register({name: 'w', description: 5, input_schema: {}}, () => 1);",
     "InvalidInputError", "description"),
    ("return await engine.tools.register({name: 'w'}, () => 1);", "InvalidInputError", "input_schema"),
    ("return await engine.tools.register({name: 'w', input_schema: {type: 'string'}}, () => 1);",
     "InvalidInputError", "input_schema.type"),
    ("return await engine.tools.register({name: 'w', input_schema: {properties: {a: {type: 'strin'}}}}, () => 1);",
     "InvalidInputError", "input_schema"),
    ("return await engine.tools.register({name: 'w', input_schema: {properties: {a: {$ref: 'https://x.example/s'}}}},"
     " () => 1);", "InvalidInputError", "input_schema.properties.a.$ref"),
    ("return await engine.tools.register({name: 'w', input_schema: {}, parameters: {}}, () => 1);",
     "InvalidInputError", "parameters"),
    ("return await engine.tools.register({name: 'w', input_schema: {n: NaN}}, () => 1);",
     "InvalidInputError", "input_schema.n"),
])
def test_a_bad_spec_is_refused_naming_the_field(tools_page, script, name, param):
    ep = tools_page
    before = _specs(ep)
    err = ep.call(script)["error"]
    assert (err["name"], err["param"]) == (name, param), err
    assert _specs(ep) == before


def test_a_skill_lists_the_page_tools_and_calls_them(tools_page):
    """Run after the skills' SDK rewrite: skills written for pharia-skill 0.20.0."""
    ep = tools_page
    ep.ok(PAGE_TOOLS, WEATHER)
    ep.ok("await engine.skills.register({name: 'use-tools', source: arg});", USE_TOOLS)
    out = ep.ok("return await engine.skills.run('use-tools', {city: 'Oslo'});")
    listed = {t["name"]: t for t in out.pop("tools")}
    assert listed == {s["name"]: s for s in _specs(ep)}
    assert listed["weather"] == {"name": "weather", "description": "The weather in a city", "input_schema": WEATHER}
    weather = json.dumps({"city": "Oslo", "temp_c": 21})  # a JSON value: one item, its JSON text
    assert out == {"weather": [weather], "weather_text": weather, "later": ["RAIN", "SUN"],
                   "broken": "station offline",
                   "concurrent": [json.dumps({"city": "Rome", "temp_c": 21}), "error: station offline"]}
    calls = ep.ok("return window.calls;")
    assert calls[:3] == [["weather", {"city": "Oslo"}], ["later", ["rain", "sun"]], ["broken"]]
    assert sorted(map(json.dumps, calls[3:])) == sorted(map(json.dumps, [["weather", {"city": "Rome"}], ["broken"]]))

    # replaced on the page: the skill sees the new spec and calls the new function
    ep.ok("""await engine.tools.register({name: 'weather', description: 'Weather, briefly', input_schema: arg},
               (args) => ['cold in ' + args.city]);""", WEATHER)
    again = ep.ok("return await engine.skills.run('use-tools', {city: 'Tromsø'});")
    assert {t["name"]: t["description"] for t in again["tools"]}["weather"] == "Weather, briefly"
    assert again["weather"] == ["cold in Tromsø"] and again["concurrent"][0] == "cold in Rome"
    assert ep.foreign_requests() == []


@pytest.mark.parametrize("how", ["time limit", "interruptGenerate"])
def test_a_skill_waiting_on_a_page_tool_is_stopped_and_the_tool_is_told(tools_page, how):
    """Run after the skills' SDK rewrite. The page tool never answers by itself."""
    ep = tools_page
    ep.ok(PAGE_TOOLS, WEATHER)
    ep.ok("await engine.skills.register({name: 'wait-for-tool', source: arg});", WAIT_FOR_TOOL)
    if how == "time limit":
        script = """const t = performance.now();
                    try { await engine.skills.run('wait-for-tool', {tool: 'forever'}, {timeLimitMs: 1500}); }
                    catch (e) { return [e.name, e.message, performance.now() - t, window.aborted]; }"""
    else:
        script = """const run = engine.skills.run('wait-for-tool', {tool: 'forever'});
                    while (!window.calls.some((c) => c[0] === 'forever')) await new Promise((r) => setTimeout(r, 20));
                    const t = performance.now();
                    engine.interruptGenerate();
                    try { await run; }
                    catch (e) { return [e.name, e.message, performance.now() - t, window.aborted]; }"""
    name, message, waited_ms, aborted = ep.ok(script)
    assert name == "SkillError" and "wait_for_tool" in message.replace("-", "_"), message
    assert ("time limit" in message) if how == "time limit" else ("interruptGenerate" in message), message
    assert waited_ms < (1500 if how == "time limit" else 0) + 1000
    assert aborted == ["AbortError"]
    # the worker goes on: the next call of a page tool is answered
    assert ep.ok("return await engine.skills.run('wait-for-tool', {tool: 'ping'});") == {"text": "pong"}
