"""The site's /v1/ endpoint (service worker -> a page's engine), used by the official `openai` npm
client from another tab: unmodified calls, SSE streaming, OpenAI's errors, aborts, and a 503 when
no page holds an engine. The expected outputs are the engine's own calls in the hosting page, and
HF/sentence-transformers references where they exist."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.support.browser import LOCAL_PREFIXES, boot_engine
from tests.support.openai_client import run_client, v1_tabs
from tests.support.reference import hf_greedy_ids, sentence_transformer

pytestmark = pytest.mark.browser

USER = [{"role": "user", "content": "Name a colour."}]


@pytest.fixture(scope="module")
def tabs(browser, site_url):
    """A host tab (engine + serveV1) and a client tab of the same site; the context's requests."""
    with v1_tabs(browser, site_url, ["tiny-chat", "all-minilm-l6-v2"]) as tabs:
        yield tabs


def test_chat_through_the_openai_client_equals_the_engine_and_hf(tabs):
    host, client, _ = tabs
    out = run_client(client, """const r = await client.chat.completions.create({model: 'tiny-chat', messages: arg,
                            temperature: 0, max_completion_tokens: 16, return_token_ids: true});
                          return r;""", USER)
    assert "thrown" not in out, out
    assert out["choices"][0]["token_ids"] == hf_greedy_ids(USER, 16)
    direct = host.evaluate("async (m) => (await engine.chat.completions.create({messages: m, temperature: 0, "
                           "max_tokens: 16})).choices[0].message.content", USER)
    assert out["choices"][0]["message"]["content"] == direct
    assert out["object"] == "chat.completion"
    assert out["usage"]["completion_tokens"] == len(out["choices"][0]["token_ids"])


def test_streaming_is_server_sent_events_the_client_reads(tabs):
    _, client, _ = tabs
    out = run_client(client, """const stream = await client.chat.completions.create({messages: arg, temperature: 0,
                            max_tokens: 16, stream: true, stream_options: {include_usage: true}});
                          const chunks = [];
                          for await (const c of stream) chunks.push(c);
                          const plain = await client.chat.completions.create({messages: arg, temperature: 0,
                            max_tokens: 16});
                          const raw = await (await fetch('/v1/chat/completions', {method: 'POST',
                            headers: {'content-type': 'application/json'},
                            body: JSON.stringify({messages: arg, max_tokens: 2, stream: true})})).text();
                          return {text: chunks.map((c) => c.choices[0]?.delta?.content ?? '').join(''), chunks,
                                  usage: chunks.at(-1).usage, plain: plain.choices[0].message.content, raw};""",
               USER)
    assert "thrown" not in out, out
    assert out["text"] == out["plain"] and out["usage"]["completion_tokens"] > 0
    events = [e for e in out["raw"].split("\n\n") if e]
    assert all(e.startswith("data: ") for e in events) and events[-1] == "data: [DONE]"
    # OpenAI's chunks: the role in the first only; usage null on each, and with include_usage one more
    # chunk with no choices and the usage
    unasked = [json.loads(e.removeprefix("data: ")) for e in events[:-1]]
    for chunks, extra in ((unasked, 0), (out["chunks"], 1)):
        body = chunks[:len(chunks) - extra]
        assert [c["choices"][0]["delta"].get("role") for c in body] == ["assistant"] + [None] * (len(body) - 1)
        assert all("usage" in c and c["usage"] is None and len(c["choices"]) == 1 for c in body)
    assert out["chunks"][-1]["choices"] == []


def test_completions_embeddings_and_models(tabs):
    _, client, _ = tabs
    out = run_client(client, """const c = await client.completions.create({model: 'tiny-chat', prompt: 'The colour',
                            max_tokens: 5, temperature: 0});
                          const e = await client.embeddings.create({model: 'all-minilm-l6-v2',
                            input: ['A red fox.', 'Ein roter Fuchs.']});
                          const models = [];
                          for await (const m of client.models.list()) models.push(m.id);
                          return {text: c.choices[0].text, e: e.data.map((d) => d.embedding), models};""")
    assert "thrown" not in out, out
    assert isinstance(out["text"], str) and out["text"]
    # the client asks for base64 by default and decodes it itself
    ref = sentence_transformer().encode(["A red fox.", "Ein roter Fuchs."], normalize_embeddings=True)
    assert np.allclose(np.array(out["e"]), ref, atol=1e-4)
    assert sorted(out["models"]) == ["all-minilm-l6-v2", "tiny-chat"]


@pytest.mark.parametrize(("request_", "status", "param", "kind"), [
    ({"messages": USER, "temperature": 9}, 400, "temperature", "BadRequestError"),
    ({"messages": USER, "modalities": ["audio"]}, 400, "modalities", "BadRequestError"),
    ({"messages": USER, "model": "no-such-model"}, 404, "model", "NotFoundError"),
])
def test_errors_are_openai_errors_with_status_and_param(tabs, request_, status, param, kind):
    _, client, _ = tabs
    out = run_client(client, "return await client.chat.completions.create(arg);", request_)
    assert out["thrown"]["status"] == status and out["thrown"]["param"] == param, out
    assert out["thrown"]["name"] == kind


def test_an_aborted_stream_stops_the_generation(tabs):
    host, client, _ = tabs
    out = run_client(client, """const ctrl = new AbortController();
                          const stream = await client.chat.completions.create({messages: arg, max_tokens: 3000,
                            ignore_eos: true, stream: true}, {signal: ctrl.signal});
                          let n = 0;
                          try { for await (const c of stream) { if (++n === 3) ctrl.abort(); } }
                          catch (e) { if (e.constructor.name !== 'APIUserAbortError') throw e; }
                          const t = performance.now();
                          const after = await client.chat.completions.create({messages: arg, max_tokens: 4,
                            temperature: 0});
                          return {n, afterMs: performance.now() - t, after: after.choices[0].finish_reason};""",
               USER)
    assert "thrown" not in out, out
    assert out["n"] == 3 and out["after"] in ("stop", "length")
    # had the 3,000-token generation gone on, the next request would wait for it (minutes on WASM)
    assert out["afterMs"] < 20_000
    assert host.evaluate("engine.pendingCount") == 0


def test_without_a_page_holding_an_engine_the_endpoint_answers_503(browser, site_url):
    context = browser.new_context()
    page = context.new_page()
    page.goto(site_url + "web/engine.js")
    out = page.evaluate("""async () => {
                             await navigator.serviceWorker.register('/sw.js', {scope: '/'});
                             await navigator.serviceWorker.ready;
                             if (!navigator.serviceWorker.controller) {
                               await new Promise((r) => navigator.serviceWorker.addEventListener('controllerchange', r,
                                                                                                 {once: true}));
                             }
                             const r = await fetch('/v1/models');
                             return {status: r.status, body: await r.json()};
                           }""")
    context.close()
    assert out["status"] == 503 and out["body"]["error"]["code"] == "engine_unavailable"


def test_no_request_leaves_127_0_0_1(tabs):
    _, _, requests = tabs
    assert requests and not [u for u in requests if not u.startswith(LOCAL_PREFIXES)]


def test_a_host_tab_closed_mid_stream_ends_the_stream_with_an_error(browser, site_url):
    context = browser.new_context()
    host = context.new_page()
    host.set_default_timeout(300_000)
    boot_engine(host, site_url, ["tiny-chat"])
    host.evaluate("async () => { const { serveV1 } = await import('/web/v1_host.js'); await serveV1(engine); }")
    client = context.new_page()
    client.goto(site_url + "web/engine.js")
    client.evaluate("""async (arg) => {
                         window.outcome = (async () => {
                           const r = await fetch('/v1/chat/completions', {method: 'POST',
                             body: JSON.stringify({messages: arg, max_tokens: 3000, ignore_eos: true, stream: true})});
                           const text = await r.text();
                           return {status: r.status, last: text.trim().split('\\n\\n').at(-1)};
                         })();
                         await new Promise((r) => setTimeout(r, 1500));
                       }""", USER)
    host.close()
    out = client.evaluate("""Promise.race([window.outcome,
                               new Promise((r) => setTimeout(() => r('no end within 15 s'), 15000))])""")
    context.close()
    assert out != "no end within 15 s"
    assert out["status"] == 200 and '"engine_unavailable"' in out["last"], out
