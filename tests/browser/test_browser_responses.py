"""OpenAI's Responses API in Chromium: `engine.responses` in the page, and `/v1/responses` (service
worker -> a page's engine) used by the official `openai` npm client unmodified: `responses.create`,
`responses.stream`, stored responses, errors, aborts, and `previous_response_id` across a reload
(IndexedDB). References: HF transformers (greedy ids, the chat template's prompt) and the `openai`
Python package's types for every event and object."""

from __future__ import annotations

import json

import pytest

from tests.cpython.test_structured import valid
from tests.support.browser import LOCAL_PREFIXES, boot_engine, open_engine_page
from tests.support.mcp_server import CITIES
from tests.support.openai_client import run_client, v1_tabs
from tests.support.reference import hf_chat, hf_greedy_ids, hf_prompt_ids
from tests.support.responses import EVENTS, checked

pytestmark = pytest.mark.browser

ASK = "Name a colour."


@pytest.fixture(scope="module")
def tabs(browser, site_url):
    """A host tab (engine + serveV1) and a client tab of the same site; the context's requests."""
    with v1_tabs(browser, site_url, ["tiny-chat"]) as tabs:
        yield tabs


def test_the_openai_client_creates_and_streams_responses_as_transformers_decodes(tabs):
    host, client, requests = tabs
    out = run_client(client, """
        const whole = await client.responses.create({model: 'tiny-chat', input: arg, temperature: 0,
                                                     max_output_tokens: 16, instructions: 'Answer briefly.'});
        const events = [];
        const stream = client.responses.stream({model: 'tiny-chat', input: arg, temperature: 0,
                                                max_output_tokens: 16, instructions: 'Answer briefly.'});
        for await (const e of stream) events.push(e);
        const final = await stream.finalResponse();
        const raw = await (await fetch('/v1/responses', {method: 'POST',
          headers: {'content-type': 'application/json'},
          body: JSON.stringify({input: arg, max_output_tokens: 2, stream: true})})).text();
        return {whole, events, final: final.output_text, raw};""", ASK)
    assert "thrown" not in out, out
    messages = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": ASK}]
    tok, _ = hf_chat()
    expected = tok.decode(hf_greedy_ids(messages, 16))
    assert out["whole"]["output_text"] == out["final"] == expected
    assert out["whole"]["usage"]["input_tokens"] == len(hf_prompt_ids(messages))
    assert checked(out["events"])["output_text"] == expected
    blocks = [b for b in out["raw"].split("\n\n") if b]
    # named events, each `event:` line naming its data's type; no [DONE] (a Responses stream ends with its last event)
    for block in blocks:
        name, data = block.split("\n")
        assert name.startswith("event: ") and data.startswith("data: ") and f'"type":"{name[7:]}"' in data
    assert blocks[-1].startswith("event: response.incomplete")
    direct = host.evaluate("""async (input) => (await engine.responses.create({input, temperature: 0,
                                max_output_tokens: 16, instructions: 'Answer briefly.'})).output_text""", ASK)
    assert direct == expected
    outside = [u for u in requests if not u.startswith(LOCAL_PREFIXES)]
    assert not outside, outside


def test_stored_responses_through_the_client_and_openai_errors(tabs):
    _, client, _ = tabs
    out = run_client(client, """
        const r = await client.responses.create({
          input: [{role: 'user', content: 'One.'}, {role: 'user', content: 'Two.'}],
          max_output_tokens: 3, metadata: {app: 'test'}});
        const got = await client.responses.retrieve(r.id);
        const items = [];
        for await (const item of client.responses.inputItems.list(r.id, {order: 'asc'})) items.push(item);
        await client.responses.delete(r.id);
        let gone = null;
        try { await client.responses.retrieve(r.id); }
        catch (e) { gone = {status: e.status, name: e.constructor.name}; }
        let refused = null;
        try { await client.responses.create({input: 'x', background: true}); }
        catch (e) { refused = {status: e.status, param: e.param}; }
        let tool = null;
        try { await client.responses.create({input: 'x', tools: [{type: 'web_search'}]}); }
        catch (e) { tool = {status: e.status, param: e.param}; }
        return {r, got, items, gone, refused, tool};""")
    assert "thrown" not in out, out
    assert out["got"] == out["r"] and out["r"]["metadata"] == {"app": "test"}
    assert [i["content"][0]["text"] for i in out["items"]] == ["One.", "Two."]
    assert out["gone"] == {"status": 404, "name": "NotFoundError"}
    assert out["refused"] == {"status": 400, "param": "background"}
    assert out["tool"] == {"status": 400, "param": "tools[0].type"}
    EVENTS["response.completed"].model_validate({"type": "response.completed", "sequence_number": 0,
                                                 "response": out["got"]})


def test_an_abort_ends_the_request_and_the_engine_serves_on(tabs):
    host, client, _ = tabs
    out = run_client(client, """
        const ctrl = new AbortController();
        const stream = await client.responses.create({input: 'Tell me a very long story.', max_output_tokens: 400,
                                                      stream: true}, {signal: ctrl.signal});
        let n = 0, aborted = null;
        try {
          for await (const e of stream) if (e.type === 'response.output_text.delta' && ++n === 3) ctrl.abort();
        }
        catch (e) { aborted = e.constructor.name; }
        const next = await client.responses.create({input: arg, temperature: 0, max_output_tokens: 4});
        return {n, aborted, next: next.status};""", ASK)
    assert "thrown" not in out, out
    # the client ends its iteration quietly on an abort (openai-node's Stream)
    assert out["n"] == 3 and out["aborted"] is None and out["next"] in ("completed", "incomplete")
    host.wait_for_function("() => engine.pendingCount === 0")
    # in the page: the aborted response ends `cancelled`, its items closed
    events = host.evaluate("""async () => {
        const ctrl = new AbortController();
        const events = [];
        const stream = await engine.responses.create({input: 'Tell me a very long story.', max_output_tokens: 400,
                                                      stream: true}, {signal: ctrl.signal});
        for await (const e of stream) {
          events.push(e);
          if (events.filter((x) => x.type === 'response.output_text.delta').length === 3) ctrl.abort();
        }
        return events;
      }""")
    final = checked(events)
    assert final["status"] == "cancelled" and final["incomplete_details"] is None
    assert final["usage"]["output_tokens"] < 400


def test_previous_response_id_continues_a_conversation_after_a_reload(browser, site_url):
    tab = open_engine_page(browser, site_url, ["tiny-chat"])
    page = tab.page
    first = page.evaluate("""async (input) => await engine.responses.create({input, temperature: 0,
                               max_output_tokens: 12})""", ASK)
    boot_engine(page, site_url, ["tiny-chat"])  # a reload: a new page, worker and engine
    second = page.evaluate("""async (id) => {
        const r = await engine.responses.create({previous_response_id: id, input: 'Another one.', temperature: 0,
                                                 max_output_tokens: 12});
        return {r, first: await engine.responses.retrieve(id)};
      }""", first["id"])
    history = [{"role": "user", "content": ASK}, {"role": "assistant", "content": first["output_text"]},
               {"role": "user", "content": "Another one."}]
    tok, _ = hf_chat()
    assert second["r"]["usage"]["input_tokens"] == len(hf_prompt_ids(history))
    assert second["r"]["output_text"] == tok.decode(hf_greedy_ids(history, 12))
    assert second["first"]["output_text"] == first["output_text"]
    page.context.close()


AI_SDK = """const ai = await import('/vendor/ai-sdk/index.mjs');
            const provider = ai.createOpenAI({baseURL: location.origin + '/v1', apiKey: 'unused'});
            const model = provider('tiny-chat');  // the provider's default: OpenAI's Responses API"""
WEATHER = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}}, "required": ["city"],
           "additionalProperties": False}
TRIP = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
                                         "days": {"type": "integer", "minimum": 1, "maximum": 9}},
        "required": ["city", "days"], "additionalProperties": False}


def test_the_ai_sdks_openai_provider_generates_streams_calls_tools_and_outputs_objects(tabs):
    _, client, requests = tabs
    out = client.evaluate(f"""async ([ask, weather, trip]) => {{
        {AI_SDK}
        const seen = [];
        const text = await ai.generateText({{model, prompt: ask, temperature: 0, maxOutputTokens: 16}});
        const streamed = ai.streamText({{model, prompt: ask, temperature: 0, maxOutputTokens: 16}});
        let joined = '';
        for await (const t of streamed.textStream) joined += t;
        const getWeather = ai.tool({{description: 'The weather in a city', inputSchema: ai.jsonSchema(weather),
                                     execute: async (args) => {{ seen.push(args); return {{celsius: 21}}; }}}});
        const called = await ai.generateText({{model, prompt: 'What is the weather in Paris?', toolChoice: 'required',
                                              maxOutputTokens: 80, tools: {{get_weather: getWeather}}}});
        const object = await ai.generateText({{model, prompt: 'Plan a trip.', maxOutputTokens: 80,
          output: ai.Output.object({{schema: ai.jsonSchema(trip)}})}});
        return {{text: text.text, finish: text.finishReason, joined, seen, object: object.output,
                 results: called.toolResults.map((r) => r.output)}};
      }}""", [ASK, WEATHER, TRIP])
    tok, _ = hf_chat()
    assert out["text"] == out["joined"] == tok.decode(hf_greedy_ids([{"role": "user", "content": ASK}], 16))
    assert out["finish"] in ("stop", "length")
    assert out["seen"] and all(valid(args, WEATHER) for args in out["seen"])
    assert out["results"] == [{"celsius": 21}] * len(out["seen"])
    assert valid(out["object"], TRIP)
    assert any(u.endswith("/v1/responses") for u in requests)


def test_an_mcp_server_s_tool_is_called_by_the_engine_in_the_page(tabs, mcp_server):
    host, client, requests = tabs
    body = {"model": "tiny-chat", "input": "Tell me about Berlin.", "seed": 1, "max_output_tokens": 80,
            "parallel_tool_calls": False, "max_tool_calls": 1,
            "tools": [{"type": "mcp", "server_label": "tests", "server_url": mcp_server.mcp,
                       "allowed_tools": ["lookup"], "require_approval": "never"}],
            "tool_choice": {"type": "mcp", "server_label": "tests", "name": "lookup"}}
    out = host.evaluate("""async (body) => {
        const events = [], at = {};
        for await (const e of await engine.responses.create({...body, stream: true})) {
          events.push(e);
          at[e.type] ??= performance.now();
        }
        return {events, ms: at['response.mcp_call.completed'] - at['response.mcp_call.in_progress']};
      }""", body)
    final = checked(out["events"])
    call = next(i for i in final["output"] if i["type"] == "mcp_call")
    city = json.loads(call["arguments"])["city"]
    assert call["status"] == "completed" and call["output"] == CITIES.get(city.lower(), f"no entry for {city}")
    assert final["output"][-1]["type"] == "message"
    print(f"an MCP round trip (lookup) in the page: {out['ms']:.0f} ms")
    through = run_client(client, "return await client.responses.create(arg);", body)  # the same, over /v1/
    assert "thrown" not in through, through
    assert [i["type"] for i in through["output"]][:2] == ["mcp_list_tools", "mcp_call"]
    outside = [u for u in requests if not u.startswith(LOCAL_PREFIXES)]
    assert not outside, outside
