"""pharia-skill skills unchanged in the worker (Chromium, real models): the same sources as
tests/cpython/test_pharia_sdk.py, with the same greedy answers as CPython; streamed events pushed
one by one; cancel mid-stream; aliases; page tools; on-demand packages; refused imports."""

from __future__ import annotations

from typing import Any

import pytest

from csi.local import local_runtime
from csi.skills.registry import load_skill_source
from tests.cpython.test_pharia_sdk import register_tools
from tests.support import sdk_skills
from tests.support.browser import open_engine_page
from tests.support.paths import DIST

pytestmark = pytest.mark.browser

REAL = "smollm2-135m-instruct"
ALIASES = {"llama-3.1-8b-instruct": REAL, "tool-model": "tiny-chat"}


@pytest.fixture(scope="module")
def sdk_page(browser, site_url):
    ep = open_engine_page(browser, site_url, [REAL, "tiny-chat"])
    ep.ok("await engine.setModelAliases(arg); return true;", ALIASES)
    yield ep
    ep.page.context.close()


def cpython_run(source: str, name: str, input: dict[str, Any], setup: Any = None) -> Any:
    skill = load_skill_source(name, source)
    with local_runtime(DIST, [REAL, "tiny-chat"], ALIASES) as (runtime, csi):
        if setup is not None:
            setup(runtime)
        return skill.func(csi, skill.input_model.model_validate(input)).model_dump(mode="json")


STREAM = """
const events = [];
const started = performance.now();
for await (const e of engine.skills.stream(arg.name, arg.input)) events.push({...e, at: performance.now() - started});
return events;
"""


def test_a_skill_naming_a_kernel_model_runs_through_the_alias_as_in_cpython(sdk_page):
    ep = sdk_page
    meta = ep.ok("return await engine.skills.register(arg);", {"name": "haiku", "source": sdk_skills.HAIKU})
    assert meta["kind"] == "skill" and meta["description"] == "Write a short poem about a topic."
    out = ep.ok("return await engine.skills.run('haiku', arg);", {"topic": "the sea"})
    assert out == cpython_run(sdk_skills.HAIKU, "haiku", {"topic": "the sea"}) and out["haiku"]
    # without the alias the skill fails, and says how to alias the model
    ep.ok("await engine.setModelAliases({}); return true;")
    missing = ep.call("return await engine.skills.run('haiku', arg);", {"topic": "the sea"})
    ep.ok("await engine.setModelAliases(arg); return true;", ALIASES)
    assert missing["error"]["name"] == "SkillError"
    assert "ModelNotSupportedError" in missing["error"]["message"] and "modelAliases" in missing["error"]["message"]


def test_a_message_stream_skill_pushes_its_events_as_it_writes_them(sdk_page):
    ep = sdk_page
    meta = ep.ok("return await engine.skills.register(arg);", {"name": "haiku-stream",
                                                                "source": sdk_skills.HAIKU_STREAM})
    assert meta["kind"] == "message_stream" and meta["output_schema"] is None
    events = ep.ok(STREAM, {"name": "haiku-stream", "input": {"topic": "the sea"}})
    assert events[0]["type"] == "message_begin" and events[0]["role"] == "assistant"
    appends = [e for e in events if e["type"] == "message_append"]
    assert events[-1]["type"] == "message_end" and len(appends) >= 3
    assert appends[0]["at"] < events[-1]["at"] / 2  # the first piece arrives long before the end
    ep.ok("return await engine.skills.register(arg);", {"name": "haiku", "source": sdk_skills.HAIKU})
    whole = ep.ok("return await engine.skills.run('haiku', arg);", {"topic": "the sea"})
    assert "".join(e["text"] for e in appends).strip() == whole["haiku"]
    assert events[-1]["payload"]["completion_tokens"] >= len(appends)
    # run/stream of the wrong kind, and bad input, are typed errors
    wrong = ep.call("return await engine.skills.run('haiku-stream', {topic: 'x'});")
    assert wrong["error"]["name"] == "InvalidInputError" and wrong["error"]["param"] == "name"
    bad = ep.call("for await (const e of engine.skills.stream('haiku-stream', {topic: 5})) {} return 1;")
    assert bad["error"]["name"] == "InvalidInputError" and bad["error"]["param"] == "input.topic"


def test_the_stream_answer_example_streams_a_sensible_answer(sdk_page):
    from pharia_skill import ChatParams, Message

    ep = sdk_page
    events = ep.ok(STREAM, {"name": "stream-answer", "input": {"question": "What is the capital of France?"}})
    text = "".join(e["text"] for e in events if e["type"] == "message_append")
    with local_runtime(DIST, [REAL], {}) as (_, csi):
        reply = csi.chat(REAL, [Message.system("You are a helpful assistant. Answer briefly."),
                                Message.user("What is the capital of France?")],
                         ChatParams(max_tokens=96, temperature=0.0))
    assert text == reply.message.content and "Paris" in text
    assert events[-1]["payload"] == {"finish_reason": reply.finish_reason.value, "prompt_tokens": reply.usage.prompt,
                                     "completion_tokens": reply.usage.completion}


def test_cancel_and_interrupt_end_a_stream_mid_way_and_the_engine_goes_on(sdk_page):
    ep = sdk_page
    long = sdk_skills.HAIKU_STREAM.replace("max_tokens=40", "max_tokens=300")
    ep.ok("return await engine.skills.register(arg);", {"name": "long-stream", "source": long})
    out = ep.ok("""
const seen = [];
const controller = new AbortController();
let error = null;
try {
  for await (const e of engine.skills.stream('long-stream', {topic: 'a long story'}, {signal: controller.signal})) {
    seen.push(e.type);
    if (seen.length === 4) controller.abort();
  }
} catch (e) { error = {name: e.name, message: e.message}; }
const seen2 = [];
let error2 = null;
try {
  for await (const e of engine.skills.stream('long-stream', {topic: 'another story'})) {
    seen2.push(e.type);
    if (seen2.length === 4) engine.interruptGenerate();
  }
} catch (e) { error2 = {name: e.name, message: e.message}; }
const after = await engine.chat.completions.create({messages: [{role: 'user', content: 'Say hi.'}], max_tokens: 4,
                                                    model: 'tiny-chat'});
return {seen, error, seen2, error2, after: after.choices[0].message.content};
""")
    assert out["error"]["name"] == "SkillError" and "cancelled" in out["error"]["message"], out
    assert out["error2"]["name"] == "SkillError" and "interruptGenerate" in out["error2"]["message"], out
    assert "message_end" not in out["seen"] and "message_end" not in out["seen2"]
    assert out["after"]


def test_page_tools_serve_the_sdks_tool_calls_and_its_tool_loop(sdk_page):
    ep = sdk_page
    ep.ok("""
await engine.tools.register(arg.weather, async ({city}) => `{"city": "${city}", "celsius": 18}`);
await engine.tools.register(arg.broken, () => { throw new Error('the weather station is offline'); });
return true;""", {"weather": sdk_skills.WEATHER_TOOL, "broken": sdk_skills.BROKEN_TOOL})
    listed = ep.ok("return await engine.tools.list();")
    assert {t["name"] for t in listed} >= {"get_weather", "broken_tool"}
    ep.ok("return await engine.skills.register(arg);", {"name": "tool-user", "source": sdk_skills.TOOL_USER})
    out = ep.ok("return await engine.skills.run('tool-user', arg);", {"question": "What is the weather in Oslo?"})
    assert out["direct"] == '{"city": "Oslo", "celsius": 18}'
    assert out["failed"] == "the weather station is offline"

    expected = cpython_run(sdk_skills.TOOL_USER, "tool-user", {"question": "What is the weather in Oslo?"},
                           register_tools)
    assert out["answer"] == expected["answer"]  # greedy, the same tool loop
    assert set(out["tools"]) >= {"get_weather", "broken_tool"}


def test_a_skill_importing_jinja2_loads_it_on_demand_and_numpy_is_refused(sdk_page):
    from jinja2 import Environment

    ep = sdk_page
    ep.ok("return await engine.skills.register(arg);", {"name": "listing", "source": sdk_skills.JINJA})
    items = ["<b>owl</b>", "tea & cake", "'quoted'"]
    out = ep.ok("return await engine.skills.run('listing', arg);", {"items": items})
    reference = Environment(autoescape=True).from_string(
        "<ul>{% for i in items %}<li>{{ i }}</li>{% endfor %}</ul>").render(items=items)
    assert out["html"] == reference and "&lt;b&gt;" in out["html"]
    refused = ep.call("return await engine.skills.register(arg);", {"name": "np", "source": sdk_skills.NUMPY})
    assert refused["error"]["name"] == "InvalidInputError" and refused["error"]["param"] == "source"
    assert "numpy" in refused["error"]["message"]
    assert ep.foreign_requests() == []


def test_a_rag_skill_and_a_structured_output_skill_answer_as_in_cpython(sdk_page):
    from tests.support.faces import index as index_face
    from tests.support.skill_sources import SEARCH_DOCS

    ep = sdk_page
    where = {"namespace": "skills", "collection": "docs", "index": "small"}
    documents = [{"path": {"namespace": "skills", "collection": "docs", "name": name}, "contents": [{"text": text}]}
                 for name, text in SEARCH_DOCS.items()]
    ep.ok("return await engine.index.createIndex(arg);", {**where, "max_tokens": 16})
    ep.ok("return await engine.index.put(arg);", documents)
    for name, source in [("rag", sdk_skills.RAG), ("extract", sdk_skills.STRUCTURED)]:
        ep.ok("return await engine.skills.register(arg);", {"name": name, "source": source})
    question = {"question": "What does json.dumps return?"}
    rag = ep.ok("return await engine.skills.run('rag', arg);", question)
    extracts = [ep.ok("return await engine.skills.run('extract', arg);", {"text": text}) for text in sdk_skills.PEOPLE]

    rag_skill, extract_skill = load_skill_source("rag", sdk_skills.RAG), load_skill_source("extract",
                                                                                            sdk_skills.STRUCTURED)
    with local_runtime(DIST, [REAL, "tiny-chat"], ALIASES) as (_, csi):
        csi._run(index_face.create(csi.index, {**where, "max_tokens": 16}))
        csi._run(index_face.put(csi.index, documents))
        rag_cpython = rag_skill.func(csi, rag_skill.input_model(**question)).model_dump(mode="json")
        extracts_cpython = [extract_skill.func(csi, extract_skill.input_model(text=text)).model_dump(mode="json")
                            for text in sdk_skills.PEOPLE]
    assert rag == rag_cpython and rag["sources"][0] == "json.txt" and "string" in rag["answer"].lower()
    assert extracts == extracts_cpython
    called = [out for out in extracts if out["called"]]
    assert called and all(out["name"] == "record_person" for out in called)
    assert all(isinstance(out["parameters"]["name"], str) and isinstance(out["parameters"]["age"], int)
               for out in called)
