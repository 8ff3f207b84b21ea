"""WebLLM's examples (github.com/mlc-ai/web-llm, examples/), their engine calls ported with only the
import (`/web/engine.js`) and the model id changed, in Chromium. Each test checks what the
example shows against a reference where one exists (HF transformers, sentence-transformers)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.support.browser import EnginePage, tracked_context
from tests.support.reference import hf_greedy_ids, hf_prompt_ids, sentence_transformer

pytestmark = pytest.mark.browser

MODEL = "tiny-chat"  # WebLLM's examples use e.g. "Llama-3.1-8B-Instruct-q4f32_1-MLC"
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}},
                   "required": ["city"], "additionalProperties": False}}}


@pytest.fixture(scope="module")
def example_page(browser, site_url):
    """get-started: `CreateMLCEngine(selectedModel, {initProgressCallback})`."""
    context, requests = tracked_context(browser)
    page = context.new_page()
    page.set_default_timeout(300_000)
    page.goto(site_url + "web/engine.js")
    page.evaluate(
        """async (model) => {
             window.webllm = await import('/web/engine.js');
             window.labels = [];
             const initProgressCallback = (report) => window.labels.push(report.text);
             window.engine = await webllm.CreateMLCEngine([model, 'all-minilm-l6-v2'], {initProgressCallback});
           }""", MODEL)
    yield EnginePage(page, requests)
    context.close()


def test_get_started(example_page):
    messages = [{"role": "system", "content": "You are a helpful AI assistant."},
                {"role": "user", "content": "List three US states."}]
    out = example_page.ok(
        """const reply = await engine.chat.completions.create({messages: arg, n: 3, temperature: 1.5,
             max_tokens: 12, logprobs: true, top_logprobs: 2});
           return {reply, stats: await engine.runtimeStatsText(), labels: window.labels};""", messages)
    reply = out["reply"]
    assert len(reply["choices"]) == 3 and len({c["message"]["content"] for c in reply["choices"]}) > 1
    assert reply["usage"]["prompt_tokens"] == len(hf_prompt_ids(messages))
    for c in reply["choices"]:
        content = c["logprobs"]["content"]
        assert content and all(t["logprob"] <= 0 and len(t["top_logprobs"]) == 2 for t in content)
    assert out["stats"].startswith("prefill: ") and out["labels"] and all(out["labels"])


def test_streaming(example_page):
    messages = [{"role": "user", "content": "Tell me a story."}]
    out = example_page.ok(
        """const chunks = await engine.chat.completions.create({messages: arg, temperature: 1, stream: true,
             stream_options: {include_usage: true}, max_tokens: 24, seed: 7});
           let reply = '';
           let usage = null;
           for await (const chunk of chunks) {
             reply += chunk.choices[0]?.delta.content || '';
             if (chunk.usage) usage = chunk.usage;
           }
           return {reply, usage, message: await engine.getMessage()};""", messages)
    assert out["reply"] and out["reply"] == out["message"]
    assert out["usage"]["prompt_tokens"] == len(hf_prompt_ids(messages)) and out["usage"]["completion_tokens"] > 0


def test_multi_round_chat(example_page):
    messages = [{"role": "user", "content": "Name a colour."}]
    out = example_page.ok(
        """const messages = [...arg];
           const first = await engine.chat.completions.create({messages, temperature: 0, max_tokens: 8});
           messages.push(first.choices[0].message);
           messages.push({role: 'user', content: 'And another one?'});
           const second = await engine.chat.completions.create({messages, temperature: 0, max_tokens: 8});
           return {messages, usage: second.usage};""", messages)
    history = [{"role": m["role"], "content": m["content"]} for m in out["messages"]]
    assert out["usage"]["prompt_tokens"] == len(hf_prompt_ids(history))


def test_seed_to_reproduce(example_page):
    out = example_page.ok(
        """const request = {messages: arg, temperature: 1.5, max_tokens: 12, seed: 42};
           const a = await engine.chat.completions.create(request);
           const b = await engine.chat.completions.create(request);
           const c = await engine.chat.completions.create({...request, seed: 43});
           return [a, b, c].map((r) => r.choices[0].message.content);""",
        [{"role": "user", "content": "Write a line of a poem."}])
    assert out[0] == out[1] != out[2]


def test_text_completion(example_page):
    out = example_page.ok(
        """const reply = await engine.completions.create({prompt: 'The capital of France is', echo: true,
             n: 2, max_tokens: 6, temperature: 0, logprobs: true, top_logprobs: 2, ignore_eos: true});
           return reply;""")
    assert [c["text"].startswith("The capital of France is") for c in out["choices"]] == [True, True]
    assert out["choices"][0]["text"] == out["choices"][1]["text"]
    assert out["usage"]["completion_tokens"] == 12


def test_embeddings(example_page):
    docs = ["[CLS] The Data Cloud!", "[CLS] Mexico City of Course!"]
    out = example_page.ok(
        """const r = await engine.embeddings.create({input: arg, model: 'all-minilm-l6-v2'});
           return r.data.map((d) => d.embedding);""", docs)
    reference = sentence_transformer().encode(docs, normalize_embeddings=True)
    assert np.abs(np.array(out) - reference).max() < 1e-4


def test_json_mode(example_page):
    out = example_page.ok(
        """const reply = await engine.chat.completions.create({messages: arg, max_tokens: 64, seed: 3,
             response_format: {type: 'json_object'}});
           return reply.choices[0];""", [{"role": "user", "content": "Describe a cat in JSON."}])
    if out["finish_reason"] == "stop":
        assert isinstance(json.loads(out["message"]["content"]), dict)
    else:
        assert out["finish_reason"] == "length" and out["message"]["content"].lstrip().startswith("{")


def test_function_calling(example_page):
    out = example_page.ok(
        """const reply = await engine.chat.completions.create({messages: arg.messages, tools: arg.tools,
             tool_choice: 'required', max_tokens: 96, seed: 4});
           return reply.choices[0];""",
        {"messages": [{"role": "user", "content": "Weather in Oslo?"}], "tools": [WEATHER]})
    assert out["finish_reason"] == "tool_calls"
    call = out["message"]["tool_calls"][0]
    assert call["function"]["name"] == "get_weather" and set(json.loads(call["function"]["arguments"])) == {"city"}


def test_forward_tokens_and_sample_is_greedy_decoding_step_by_step(example_page):
    messages = [{"role": "user", "content": "Name a colour."}]
    out = example_page.ok(
        """await engine.reload(['tiny-chat', 'all-minilm-l6-v2'], [{temperature: 0}, {}]);
           const ids = [];
           let next = await engine.forwardTokensAndSample(arg, true);
           for (let i = 0; i < 7; i++) {
             ids.push(next);
             next = await engine.forwardTokensAndSample([next], false);
           }
           ids.push(next);
           const bad = await engine.forwardTokensAndSample([], true).then(() => null, (e) => [e.name, e.param]);
           await engine.reload(['tiny-chat', 'all-minilm-l6-v2']);
           return {ids, bad};""", hf_prompt_ids(messages))
    reference = hf_greedy_ids(messages, 8)
    assert out["ids"][:len(reference)] == reference and len(reference) >= 4
    assert out["bad"] == ["InvalidInputError", "inputIds"]


def test_multi_models_and_cache_usage(example_page):
    out = example_page.ok(
        """const engine2 = await webllm.CreateMLCEngine(['tiny-chat', 'tiny-gpt2']);
           const a = await engine2.chat.completions.create({messages: arg, model: 'tiny-chat', max_tokens: 4,
                                                            temperature: 0, return_token_ids: true});
           const b = await engine2.completions.create({prompt: 'def f(x):', model: 'tiny-gpt2', max_tokens: 4});
           const cached = await webllm.hasModelInCache('tiny-gpt2', webllm.prebuiltAppConfig);
           await webllm.deleteModelAllInfoInCache('tiny-gpt2', webllm.prebuiltAppConfig);
           const after = await webllm.hasModelInCache('tiny-gpt2', webllm.prebuiltAppConfig);
           await engine2.reload('tiny-gpt2');  // from the site again
           const c = await engine2.completions.create({prompt: 'def f(x):', max_tokens: 4, temperature: 0});
           engine2.terminate();
           return {a: a.choices[0].token_ids, models: [a.model, b.model, c.model], cached, after};""",
        [{"role": "user", "content": "Name a colour."}])
    assert out["a"] == hf_greedy_ids([{"role": "user", "content": "Name a colour."}], 4)
    assert out["models"] == ["tiny-chat", "tiny-gpt2", "tiny-gpt2"]
    assert out["cached"] and not out["after"]


def test_abort_reload(example_page):
    out = example_page.ok(
        """const engine2 = new webllm.MLCEngine({initProgressCallback: () => {}});
           const loading = engine2.reload('tiny-chat').then(() => 'loaded', (e) => e.name);
           await new Promise((r) => setTimeout(r, 50));
           const unloaded = await engine2.unload().then(() => 'unloaded', (e) => e.name);
           const first = await loading;
           await engine2.reload('tiny-chat');
           const r = await engine2.chat.completions.create({messages: arg, max_tokens: 3});
           engine2.terminate();
           return {unloaded, first, reply: r.choices[0].message.content};""",
        [{"role": "user", "content": "Hi"}])
    assert out["unloaded"] == "unloaded" and out["first"] == "ModelLoadError" and isinstance(out["reply"], str)


def test_service_worker_engine_serves_the_other_tabs(browser, site_url):
    context, requests = tracked_context(browser)
    try:
        page = context.new_page()
        page.set_default_timeout(300_000)
        page.goto(site_url + "web/engine.js")
        page.evaluate("""async () => {
                           const webllm = await import('/web/engine.js');
                           window.engine = await webllm.CreateServiceWorkerMLCEngine('tiny-chat');
                         }""")
        other = context.new_page()
        other.goto(site_url + "web/engine.js")
        out = other.evaluate("""async () => {
                                  const models = await (await fetch('/v1/models')).json();
                                  const r = await fetch('/v1/chat/completions', {method: 'POST',
                                    headers: {'content-type': 'application/json'},
                                    body: JSON.stringify({messages: [{role: 'user', content: 'Hi'}], max_tokens: 3})});
                                  return {models: models.data.map((m) => m.id), status: r.status,
                                          reply: (await r.json()).choices[0].message.content};
                                }""")
    finally:
        context.close()
    assert out["models"] == ["tiny-chat"] and out["status"] == 200 and isinstance(out["reply"], str)
    assert not [u for u in requests if not u.startswith(("http://127.0.0.1:", "blob:", "data:"))]


# logit-processor: its worker script, with only the import changed. The processor forces token
# 40, 41, 42, 40, ... by how many tokens it has seen sampled, and starts over when reset: by
# resetChat(), and (as in WebLLM) by a prompt that does not continue the cached conversation.
PROCESSOR_WORKER = """
import * as webllm from "%s/worker/worker.js";
class MyLogitProcessor {
  constructor() { this.tokenSequence = []; }
  processLogits(logits) { logits[40 + this.tokenSequence.length %% 3] = 100.0; return logits; }
  processSampledToken(token) { this.tokenSequence.push(token); }
  resetState() { this.tokenSequence = []; }
}
const logitProcessorRegistry = new Map();
logitProcessorRegistry.set("tiny-chat", new MyLogitProcessor());
const handler = new webllm.WebWorkerMLCEngineHandler();
handler.setLogitProcessorRegistry(logitProcessorRegistry);
self.onmessage = (msg) => { handler.onmessage(msg); };
"""


def test_logit_processor(example_page, site_url):
    out = example_page.ok(
        """const src = new Blob([arg], {type: 'text/javascript'});
           const worker = new Worker(URL.createObjectURL(src), {type: 'module'});
           const engine2 = await webllm.CreateWebWorkerMLCEngine(worker, 'tiny-chat');
           const prompt = [1, 2, 3];
           const first = [await engine2.forwardTokensAndSample(prompt, true)];
           first.push(await engine2.forwardTokensAndSample([first[0]], false));
           const r = await engine2.chat.completions.create({messages: [{role: 'user', content: 'Hi'}],
             max_tokens: 4, temperature: 1, seed: 1, ignore_eos: true, return_token_ids: true});
           await engine2.resetChat();
           const again = await engine2.forwardTokensAndSample(prompt, true);
           const onPage = (() => { try { engine2.setLogitProcessorRegistry(new Map()); }
                                   catch (e) { return [e.name, e.param]; } })();
           engine2.terminate();
           return {first, chat: r.choices[0].token_ids, again, onPage};""",
        PROCESSOR_WORKER % site_url.rstrip("/"))
    assert out["first"] == [40, 41] and out["chat"] == [40, 41, 42, 40] and out["again"] == 40
    assert out["onPage"] == ["NotSupportedError", "registry"]


def test_no_request_left_127_0_0_1(example_page):
    assert example_page.requests and not example_page.foreign_requests()
