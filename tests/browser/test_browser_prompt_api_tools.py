"""Tools in the Prompt API facade (`LanguageModel.create({tools})`, web/prompt_api_tools.js), in
Chromium: the explainer's weather example in our words on SmolLM2, where the answer must use the
tool's result; the mechanics on tiny-chat (a call forced with csi-web's `toolChoice: "required"`).
What reached the model is read from the requests the real engine received (a wrapper that records
them and passes them on); arguments are checked with `jsonschema`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest

from tests.browser.test_browser_prompt_api import PromptPage
from tests.support.browser import boot_engine, tracked_context

pytestmark = pytest.mark.browser

CITY = {"type": "object", "additionalProperties": False, "required": ["city"],
        "properties": {"city": {"type": "string", "maxLength": 12, "description": "The city's name."}}}
RATING = {"type": "object", "required": ["rating"], "additionalProperties": False,
          "properties": {"rating": {"type": "integer", "minimum": 0, "maximum": 5}}}
WEATHER = {"name": "get_weather", "description": "The current weather in a city.", "inputSchema": CITY}
# `spy`: the page's engine, recording each chat completion request (a copy) in `seen`
SPY = """
    const seen = [];
    const spy = {modelIds: engine.modelIds, completions: engine.completions,
      chatTokens: (r, o) => engine.chatTokens(r, o),
      chat: {completions: {create: (r, o) => {
        seen.push(JSON.parse(JSON.stringify(r)));
        return engine.chat.completions.create(r, o);
      }}}};
    const tiny = (extra) => LanguageModel.create({engine: spy, model: 'tiny-chat', samplingMode: 'most-predictable',
                                                 toolChoice: 'required', ...extra});
"""


@pytest.fixture(scope="module")
def page(browser: Any, site_url: str) -> Iterator[PromptPage]:
    """One worker with both models: tiny-chat for the mechanics, SmolLM2 where answers must make sense."""
    context, requests = tracked_context(browser)
    p = context.new_page()
    p.set_default_timeout(300_000)
    boot_engine(p, site_url, ["tiny-chat", "smollm2-135m-instruct"], "wasm")
    yield PromptPage(p, requests)
    assert PromptPage(p, requests).foreign_requests() == []
    context.close()


@pytest.fixture
def tools(page: PromptPage) -> PromptPage:
    page.value("LanguageModel.configure({engine, model: 'tiny-chat', maxTokens: 48});")
    return page


def calls_and_results(request: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The assistant's calls in a recorded request, and the tool results by call id."""
    calls = [c for m in request["messages"] if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    results = {m["tool_call_id"]: m["content"] for m in request["messages"] if m["role"] == "tool"}
    return calls, results


def test_the_explainers_weather_example_answers_with_the_tools_result(page: PromptPage) -> None:
    """SmolLM2, greedy, the explainer's options (tool-call and tool-response expected), with csi-web's
    `toolChoice: "required"` (SmolLM2-135M answers from its own guesses otherwise): it calls the tool
    for Seattle, execute's report goes back, and the answer uses it; without the tool, it does not."""
    out = page.value(SPY + """
        LanguageModel.configure({engine, model: 'smollm2-135m-instruct', maxTokens: 64});
        const system = 'You are a helpful assistant. You can use tools to help the user.';
        const asked = [];
        const session = await LanguageModel.create({
          engine: spy, model: 'smollm2-135m-instruct', samplingMode: 'most-predictable', toolChoice: 'required',
          initialPrompts: [{role: 'system', content: system}],
          expectedInputs: [{type: 'text', languages: ['en']}, {type: 'tool-response'}],
          expectedOutputs: [{type: 'text', languages: ['en']}, {type: 'tool-call'}],
          tools: [{
            name: 'getWeather', description: 'Get the weather in a location.',
            inputSchema: {type: 'object', required: ['location'], properties: {
              location: {type: 'string', description: 'The city to check for the weather condition.'}}},
            async execute({location}) {
              asked.push(location);
              return '14°C, foggy';
            },
          }]});
        const answer = await session.prompt('What is the weather in Seattle?');
        const guess = await (await LanguageModel.create({samplingMode: 'most-predictable',
          initialPrompts: [{role: 'system', content: system}]}))
          .prompt('What is the weather in Seattle?');
        return {asked, answer, guess, seen};""")
    assert out["asked"] and all("Seattle" in city for city in out["asked"]), out
    calls, results = calls_and_results(out["seen"][-1])
    assert [json.loads(c["function"]["arguments"])["location"] for c in calls] == out["asked"]
    assert all(results[c["id"]] == "14°C, foggy" for c in calls)
    assert "fog" in out["answer"].lower() and "fog" not in out["guess"].lower(), out
    assert out["answer"] == out["answer"].lstrip()  # the line break before the call is not part of it


def test_execute_gets_schema_valid_arguments_and_its_result_goes_back_to_the_model(tools: PromptPage) -> None:
    out = tools.value(SPY + """
        const got = [];
        const tool = {...arg, async execute(args, options) {
          got.push({args, signal: options.signal instanceof AbortSignal && !options.signal.aborted});
          return 'REPORT: 14 degrees and fog';
        }};
        const s = await tiny({tools: [tool]});
        const created = s.contextUsage;
        const reply = await s.prompt('What is the weather in Oslo?');
        return {got, reply, seen, created, usage: s.contextUsage,
                declared: (await engine.chatTokens({model: 'tiny-chat', messages: [{role: 'user', content: ''}],
                                                    tools: seen[0].tools})).count};""", WEATHER)
    assert out["got"] and all(g["signal"] for g in out["got"])
    for g in out["got"]:
        jsonschema.validate(g["args"], CITY)
    first, second = out["seen"][:2]
    assert first["tool_choice"] == "required" and second["tool_choice"] == "auto"
    assert [t["function"]["name"] for t in first["tools"]] == ["get_weather"]
    calls, results = calls_and_results(second)
    ran = [c for c in calls if results[c["id"]] == "REPORT: 14 degrees and fog"]  # (a parallel call cut short: not)
    assert ran and [json.loads(c["function"]["arguments"]) for c in ran] == [g["args"] for g in out["got"]][:len(ran)]
    assert isinstance(out["reply"], str)
    # the declarations are in the context from create() on
    assert out["created"] == out["declared"] > 0 and out["usage"] > out["created"]


def test_a_throwing_execute_and_cut_arguments_are_errors_the_model_reads(tools: PromptPage) -> None:
    """execute throws: its message goes back as the call's result. A call cut short by maxTokens
    (the first limit, going up, that cuts it inside its arguments) has arguments that are not
    JSON: execute does not run and the model is told why. Both prompts still answer."""
    out = tools.value(SPY + """
        const broken = {...arg, execute() { throw new Error('the weather station is offline'); }};
        const thrown = await (await tiny({tools: [broken]})).prompt('Weather in Oslo?');
        let ran = 0;
        const long = {...arg, inputSchema: {type: 'object', required: ['city'], properties: {
          city: {type: 'string', minLength: 40, maxLength: 60}}}, execute() { ran++; return 'x'; }};
        const errorOf = (m) => { try { return JSON.parse(m.content).error ?? ''; } catch { return ''; } };
        for (const maxTokens of [16, 20, 24, 28, 32, 40, 48]) {
          LanguageModel.configure({engine, model: 'tiny-chat', maxTokens});
          const from = seen.length;
          const cut = await (await tiny({tools: [long]})).prompt('Weather in Oslo?');
          const told = (seen[from + 1]?.messages ?? []).filter((m) => m.role === 'tool').map(errorOf);
          if (told.length) return {thrown, cut, ran, told, maxTokens, seen: seen.slice(0, 2)};
        }
        return {thrown, ran, told: null};""", WEATHER)
    assert isinstance(out["thrown"], str)
    calls, results = calls_and_results(out["seen"][1])
    assert {"error": "the tool failed: the weather station is offline"} in [json.loads(results[c["id"]]) for c in calls]
    assert out["told"], "no limit cut the call inside its arguments"
    assert all(e.startswith("the arguments are not JSON") for e in out["told"]), out["told"]
    assert out["ran"] == 0 and isinstance(out["cut"], str)


def test_an_abort_reaches_a_running_execute_and_ends_the_prompt(tools: PromptPage) -> None:
    """execute waits forever (it even ignores its signal): aborting the prompt's signal, or
    destroying the session, aborts the signal execute got and rejects the prompt with an
    AbortError at once; the session (after an abort) goes on."""
    out = tools.value(SPY + """
        const signals = [];
        let hang = true;
        const tool = {...arg, execute(args, {signal}) {
          signals.push(signal);
          return hang ? new Promise(() => {}) : 'sunny';
        }};
        const started = () => new Promise((resolve) => {
          const n = signals.length;
          const t = setInterval(() => { if (signals.length > n) { clearInterval(t); resolve(); } }, 10);
        });
        const s = await tiny({tools: [tool]});
        const controller = new AbortController();
        const pending = s.prompt('Weather in Oslo?', {signal: controller.signal}).then(() => 'ok', (e) => e.name);
        await started();
        const t0 = performance.now();
        controller.abort();
        const aborted = await pending;
        const ms = performance.now() - t0;
        const first = {aborted: signals[0].aborted, reason: signals[0].reason?.name};
        hang = false;
        const after = await s.prompt('Weather in Bergen?');
        hang = true;
        const d = await tiny({tools: [tool]});
        const destroyed = d.prompt('Weather in Oslo?').then(() => 'ok', (e) => e.name);
        await started();
        d.destroy();
        return {aborted, ms, first, after: typeof after, destroyed: await destroyed,
                last: {aborted: signals.at(-1).aborted, reason: signals.at(-1).reason?.name}};""", WEATHER)
    assert out["aborted"] == "AbortError" and out["ms"] < 2000
    assert out["first"] == {"aborted": True, "reason": "AbortError"}
    assert out["after"] == "string"
    assert out["destroyed"] == "AbortError" and out["last"] == {"aborted": True, "reason": "AbortError"}
    assert tools.value("return (await engine.completions.create({model: 'tiny-chat', prompt: 'The json module',"
                       " max_tokens: 8, temperature: 0})).choices[0].text;")  # the engine still serves


def test_streaming_clones_and_measuring_with_tools(tools: PromptPage) -> None:
    """promptStreaming runs the tools too and streams the answer's text; a clone keeps the tools
    (greedy: the same calls and answer); measureContextUsage plus the usage after create() is
    what the prompt takes, tool declarations included; append() runs no tool, nor does a prompt
    with a response constraint (its reply follows the constraint)."""
    out = tools.value(SPY + """
        const got = [];
        const tool = {...arg, async execute({city}) { got.push(city); return `${city}: 9 degrees`; }};
        const a = await tiny({tools: [tool]});
        const b = await a.clone();
        const created = a.contextUsage;
        const measured = await a.measureContextUsage('Weather in Oslo?');
        const declared = [{type: 'function', function: {name: arg.name, description: arg.description,
                                                         parameters: arg.inputSchema}}];
        const total = (await engine.chatTokens({model: 'tiny-chat', tools: declared,
                                                messages: [{role: 'user', content: 'Weather in Oslo?'}]})).count;
        const plain = await (await LanguageModel.create()).measureContextUsage('Weather in Oslo?');
        const chunks = [];
        for await (const c of a.promptStreaming('Weather in Oslo?')) chunks.push(c);
        const streamedCalls = got.length;
        const whole = await b.prompt('Weather in Oslo?');
        const calls = got.length, before = a.contextUsage;
        await a.append('Thanks. And in Bergen?');
        const appended = a.contextUsage > before && got.length === calls;
        const rated = await b.prompt('Rate the weather from 0 to 5.', {responseConstraint: arg.rating});
        return {chunks, whole, got, streamedCalls, created, measured, total, plain, appended, rated,
                constrainedCalls: got.length - calls};""", {**WEATHER, "rating": RATING})
    n = out["streamedCalls"]
    assert n >= 1 and out["got"][:n] == out["got"][n:]
    assert "".join(out["chunks"]) == out["whole"]
    assert out["created"] + out["measured"] == out["total"] and out["plain"] < out["total"]
    assert out["appended"] and out["constrainedCalls"] == 0
    jsonschema.validate(json.loads(out["rated"]), RATING)


def test_tools_are_checked_when_the_session_is_created(tools: PromptPage) -> None:
    out = tools.value("""
        const names = [];
        const execute = () => '';
        const bad = [
          [{name: 't', description: 'd', inputSchema: {type: 'object'}}],                  // no execute
          [{name: 't', description: 'd', inputSchema: null, execute}],
          [{name: 't', description: 'd', inputSchema: {}, execute}],                       // no type
          [{name: 't', description: 'd', inputSchema: {type: 'string'}, execute}],
          [{name: 'has space', description: 'd', inputSchema: {type: 'object'}, execute}],
          [{name: 't', description: 'd', inputSchema: {type: 'object'}, execute},
           {name: 't', description: 'e', inputSchema: {type: 'object'}, execute}],
          'not a list'];
        for (const t of bad) names.push(await LanguageModel.create({tools: t}).then(() => 'ok', (e) => e.name));
        const ok = [{name: 't', description: 'd', inputSchema: {type: 'object'}, execute}];
        names.push(await LanguageModel.create({tools: ok, toolChoice: 'always'}).then(() => 'ok', (e) => e.name));
        const unenforceable = [{name: 't', description: 'd', execute,
                                inputSchema: {type: 'object', properties: {x: {not: {type: 'string'}}}}}];
        names.push(await LanguageModel.create({tools: unenforceable}).then(() => 'ok', (e) => e.name));
        return {names, available: await LanguageModel.availability({tools: ok,
                  expectedInputs: [{type: 'tool-response'}], expectedOutputs: [{type: 'tool-call'}]}),
                callsIn: await LanguageModel.availability({expectedInputs: [{type: 'tool-call'}]}),
                session: typeof (await LanguageModel.create({tools: ok})).prompt};""")
    assert out["names"] == ["TypeError"] * 8 + ["NotSupportedError"]
    assert out["available"] == "available" and out["callsIn"] == "unavailable" and out["session"] == "function"
