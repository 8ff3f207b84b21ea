"""Models on a server, in Chromium: an engine configured with `remotes` sends a remote model's requests
from its worker (fetch) to a real llama.cpp server on 127.0.0.1, through the OpenAI, CSI and Spin
faces and the site's /v1/ endpoint; the server asked directly (Python `requests`) is the reference.
Aborts reach the server, a server that is down is a typed error, and `prefer-local` falls back."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.browser import EnginePage, tracked_context
from tests.support.llama_server import LlamaServer

pytestmark = pytest.mark.browser

ASK = [{"role": "user", "content": "What is the capital of France?"}]


def make_engine(page: Any, models: list[str], remotes: list[dict[str, Any]], hub: str | None = None) -> None:
    page.evaluate(
        """async ([models, remotes, hub]) => {
             const { CreateWebWorkerEngine } = await import('/web/engine.js');
             const worker = new Worker('/worker/worker.js', { type: 'module' });
             window.engine = await CreateWebWorkerEngine(worker, models, { remotes, hubMirror: hub });
             window.loaded = window.engine.modelIds;
           }""", [models, remotes, hub])


@pytest.fixture(scope="module")
def remote_page(browser, site_url, llama_server: LlamaServer):
    context, seen = tracked_context(browser)
    page = context.new_page()
    page.set_default_timeout(300_000)
    page.goto(site_url + "web/engine.js")
    make_engine(page, ["smollm2-remote", "tiny-chat", "all-minilm-l6-v2"], [
        {"baseURL": llama_server.url + "/v1", "apiKey": "test-key",
         "models": [{"id": "smollm2-remote", "serverModel": llama_server.model}]}])
    yield EnginePage(page, seen)
    context.close()



def test_chat_streamed_and_whole_is_the_servers_answer(remote_page, llama_server):
    out = remote_page.ok(
        """const whole = await engine.chat.completions.create({model: 'smollm2-remote', messages: arg,
                                                               max_tokens: 16, temperature: 0});
           const chunks = [];
           for await (const c of await engine.chat.completions.create({model: 'smollm2-remote', messages: arg,
                                                                       max_tokens: 16, temperature: 0, stream: true,
                                                                       stream_options: {include_usage: true}}))
             chunks.push(c);
           const local = await engine.chat.completions.create({model: 'tiny-chat', messages: arg, max_tokens: 4});
           return {whole, text: chunks.map((c) => c.choices[0]?.delta?.content ?? '').join(''),
                   last: chunks.at(-1), local: local.usage.extra};""", ASK)
    reference = llama_server.ask("chat/completions", {"messages": ASK, "max_tokens": 16, "temperature": 0})
    answer = reference["choices"][0]["message"]["content"]
    assert out["whole"]["choices"][0]["message"]["content"] == answer == out["text"]
    assert out["whole"]["model"] == "smollm2-remote"
    assert out["whole"]["usage"]["extra"]["served_by"] == "remote"
    assert out["whole"]["usage"]["extra"]["server"] == llama_server.url + "/v1"
    assert out["last"]["usage"]["extra"]["served_by"] == "remote"
    assert out["local"]["served_by"] == "local"
    assert remote_page.foreign_requests() == []


def test_csi_spin_and_embeddings_reach_the_server(remote_page, llama_server):
    prompt = "<|im_start|>user\nName a primary colour.<|im_end|>\n<|im_start|>assistant\n"
    out = remote_page.ok(
        """const [done] = await engine.csi.complete([{model: 'smollm2-remote', prompt: arg,
                                                       params: {max_tokens: 10, temperature: 0}}]);
           const infer = await engine.llm.infer('smollm2-remote', arg, {max_tokens: 10, temperature: 0,
                                                                        repeat_penalty: 1.0});
           const emb = await engine.embeddings.create({model: 'smollm2-remote', input: ['Paris']});
           return {done, infer, dims: emb.data[0].embedding.length};""", prompt)
    expected = llama_server.ask("completions", {"prompt": prompt, "max_tokens": 10,
                                                    "temperature": 0})["choices"][0]["text"]
    assert out["done"]["text"] == expected
    assert out["infer"]["text"] == expected
    assert out["dims"] == 576


def test_interrupting_a_stream_cancels_the_servers_request(remote_page, llama_server):
    since = llama_server.mark()
    out = remote_page.ok(
        """const chunks = [];
           for await (const c of await engine.chat.completions.create({model: 'smollm2-remote', stream: true,
               messages: [{role: 'user', content: 'Write a long story about a dragon.'}], max_tokens: 1500})) {
             chunks.push(c);
             if (chunks.length === 3) engine.interruptGenerate();
           }
           return {n: chunks.length, finish: chunks.at(-1).choices[0].finish_reason};""")
    assert out["finish"] == "abort" and out["n"] < 40
    llama_server.wait_for_disconnect(since)
    again = remote_page.ok("""return (await engine.chat.completions.create({model: 'smollm2-remote', messages: arg,
                                max_tokens: 4, temperature: 0})).choices[0].finish_reason;""", ASK)
    assert again == "length"


def test_a_server_that_is_down_is_a_typed_error_and_local_models_serve_on(browser, site_url, llama_server_down):
    context, _ = tracked_context(browser)
    page = context.new_page()
    page.set_default_timeout(300_000)
    page.goto(site_url + "web/engine.js")
    make_engine(page, ["gone", "tiny-chat"], [{"baseURL": llama_server_down + "/v1", "models": ["gone"]}])
    ep = EnginePage(page, [])
    err = ep.call("""await engine.chat.completions.create({model: 'gone', messages: arg});""", ASK)
    assert not err["ok"] and err["error"]["name"] == "ServerUnavailableError"
    assert llama_server_down in err["error"]["message"]
    bad = ep.call("""await engine.setRemotes([{baseURL: 'file:///etc', models: ['x']}]);""")
    assert bad["error"]["name"] == "InvalidInputError" and bad["error"]["param"] == "remotes[0].base_url"
    reply = ep.ok("""return (await engine.chat.completions.create({model: 'tiny-chat', messages: arg,
                      max_tokens: 4})).usage.extra.served_by;""", ASK)
    assert reply == "local"
    context.close()


def test_prefer_local_falls_back_to_the_server_when_the_local_load_fails(browser, site_url, llama_server,
                                                                          llama_server_down):
    context, _ = tracked_context(browser)
    page = context.new_page()
    page.set_default_timeout(300_000)
    page.goto(site_url + "web/engine.js")
    # a Hub model whose mirror is down cannot load here: the server serves it
    make_engine(page, ["org/absent-model"], [{"baseURL": llama_server.url + "/v1", "models": [
        {"id": "org/absent-model", "policy": "prefer-local", "serverModel": llama_server.model}]}],
        hub=llama_server_down + "/")
    ep = EnginePage(page, [])
    out = ep.ok("""const r = await engine.chat.completions.create({messages: arg, max_tokens: 6, temperature: 0});
                   return {text: r.choices[0].message.content, extra: r.usage.extra};""", ASK)
    assert out["extra"]["served_by"] == "remote"
    reference = llama_server.ask("chat/completions", {"messages": ASK, "max_tokens": 6, "temperature": 0})
    assert out["text"] == reference["choices"][0]["message"]["content"]
    context.close()


def test_the_v1_endpoint_serves_a_remote_model_to_the_openai_client(remote_page, llama_server, site_url):
    host = remote_page.page
    host.evaluate("""async () => {
                       const { serveV1 } = await import('/web/v1_host.js');
                       window.served = await serveV1(window.engine);
                     }""")
    client = host.context.new_page()
    client.goto(site_url + "web/engine.js")
    out = client.evaluate(
        """async (messages) => {
             const { OpenAI } = await import('/vendor/openai/index.mjs');
             const openai = new OpenAI({baseURL: location.origin + '/v1', apiKey: 'unused',
                                        dangerouslyAllowBrowser: true, maxRetries: 0});
             const r = await openai.chat.completions.create({model: 'smollm2-remote', messages, max_tokens: 12,
                                                              temperature: 0});
             return {text: r.choices[0].message.content, extra: r.usage.extra};
           }""", ASK)
    reference = llama_server.ask("chat/completions", {"messages": ASK, "max_tokens": 12, "temperature": 0})
    assert out["text"] == reference["choices"][0]["message"]["content"]
    assert out["extra"]["served_by"] == "remote"
    client.close()


def test_a_built_in_model_served_by_its_server_downloads_nothing(browser, site_url, llama_server):
    context, seen = tracked_context(browser)
    page = context.new_page()
    page.set_default_timeout(300_000)
    page.goto(site_url + "web/engine.js")
    make_engine(page, ["tiny-chat"], [{"baseURL": llama_server.url + "/v1", "models": [
        {"id": "tiny-chat", "serverModel": llama_server.model}]}])
    ep = EnginePage(page, seen)
    out = ep.ok("""const r = await engine.chat.completions.create({messages: arg, max_tokens: 4});
                   return {extra: r.usage.extra, memory: await engine.memoryStats()};""", ASK)
    assert out["extra"]["served_by"] == "remote"
    assert out["memory"]["models"] == 0 and out["memory"]["preloads"] == 0
    assert not [u for u in seen if "/models/tiny-chat/" in u], "the preload fetched the model's files"
    context.close()


def test_the_prompt_api_facade_refuses_a_model_on_a_server(remote_page):
    out = remote_page.call("""const { LanguageModel } = await import('/web/prompt_api.js');
                              await LanguageModel.create({engine, model: 'smollm2-remote'});""")
    assert not out["ok"] and out["error"]["name"] == "NotSupportedError"
    assert "server" in out["error"]["message"]
