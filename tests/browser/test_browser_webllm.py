"""WebLLM's engine interface in Chromium: its exports and methods, with WebLLM's semantics, and the
OpenAI request fields (README's table) crossing the page and the worker."""

from __future__ import annotations

import base64
import re

import numpy as np
import pytest

from tests.support.browser import EnginePage, tracked_context
from tests.support.reference import hf_greedy_ids, hf_prompt_ids, reference_token_embeddings, sentence_transformer

pytestmark = pytest.mark.browser

USER = [{"role": "user", "content": "Name a colour."}]
STATS = re.compile(r"^prefill: (\d+\.\d{4}) tokens/sec, decoding: (\d+\.\d{4}) tokens/sec$")


@pytest.fixture(scope="module")
def webllm_page(browser, site_url):
    """An engine made by WebLLM's `CreateMLCEngine` (its worker created for it), with chat options."""
    context, requests = tracked_context(browser)
    page = context.new_page()
    page.set_default_timeout(300_000)
    page.goto(site_url + "web/engine.js")  # a same-origin document
    page.evaluate(
        """async () => {
             const webllm = await import('/web/engine.js');
             window.webllm = webllm;
             window.reports = [];
             window.engine = await webllm.CreateMLCEngine(['tiny-chat', 'all-minilm-l6-v2'],
               {initProgressCallback: (r) => window.reports.push(r)},
               [{temperature: 0, context_window_size: 2048}, {}]);
           }""")
    yield EnginePage(page, requests)
    context.close()


def test_create_mlc_engine_reports_progress_and_takes_chat_options_as_defaults(webllm_page):
    out = webllm_page.ok(
        """const reports = window.reports.length;
           const a = await engine.chatCompletion({messages: arg, max_tokens: 8, seed: 1});
           const b = await engine.chatCompletion({messages: arg, max_tokens: 8, seed: 2});
           const greedy = await engine.chat.completions.create({messages: arg, max_tokens: 8, temperature: 0});
           const hot = await engine.chat.completions.create({messages: arg, max_tokens: 8, temperature: 2,
                                                             seed: 3, n: 4});
           return {reports, last: window.reports.at(-1), a: a.choices[0].message.content,
                   b: b.choices[0].message.content, greedy: greedy.choices[0].message.content,
                   hot: hot.choices.map((c) => c.message.content),
                   alias: webllm.CreateWebWorkerMLCEngine === webllm.CreateWebWorkerEngine};""", USER)
    assert out["reports"] > 0 and out["last"]["progress"] == 1 and isinstance(out["last"]["text"], str)
    assert out["a"] == out["b"] == out["greedy"]  # temperature 0 from chatOpts: the seed does not matter
    assert len(set(out["hot"])) > 1  # a request's own temperature wins
    assert out["alias"]


def test_get_message_and_runtime_stats_follow_plain_and_streamed_replies(webllm_page):
    out = webllm_page.ok(
        """await engine.resetChat();
           const empty = await engine.runtimeStatsText();
           const r = await engine.chat.completions.create({messages: arg, max_tokens: 12});
           const afterPlain = await engine.getMessage();
           const plainStats = await engine.runtimeStatsText();
           let streamed = '';
           const chunks = [];
           for await (const c of await engine.chat.completions.create({messages: arg, max_tokens: 12, stream: true,
                                                                       temperature: 1, seed: 5})) {
             streamed += c.choices[0]?.delta?.content ?? '';
             chunks.push(c);
           }
           const afterStream = await engine.getMessage('tiny-chat');
           const stats = await engine.runtimeStatsText();
           await engine.resetChat(true);
           const kept = await engine.runtimeStatsText();
           const keptMessage = await engine.getMessage();
           await engine.resetChat();
           return {empty, plain: r.choices[0].message.content, afterPlain, streamed, afterStream, stats, kept,
                   keptMessage, reset: await engine.runtimeStatsText(), plainStats, chunks};""", USER)
    assert out["afterPlain"] == out["plain"] and out["plain"]
    assert out["afterStream"] == out["streamed"] and out["streamed"]
    assert STATS.match(out["empty"]).groups() == ("0.0000", "0.0000")
    prefill, decoding = map(float, STATS.match(out["stats"]).groups())
    assert prefill > 0 and decoding > 0
    # the stream counts in the stats although it did not ask for usage, and its caller sees none
    assert out["stats"] != out["plainStats"]
    assert all(c["usage"] is None and len(c["choices"]) == 1 for c in out["chunks"])
    assert out["kept"] == out["stats"] and out["keptMessage"] == ""
    assert STATS.match(out["reset"]).groups() == ("0.0000", "0.0000")


def test_completion_and_embedding_are_the_namespaced_calls(webllm_page):
    out = webllm_page.ok(
        """const a = await engine.completion({prompt: 'The colour', max_tokens: 6, temperature: 0});
           const b = await engine.completions.create({prompt: 'The colour', max_tokens: 6, temperature: 0});
           const e = await engine.embedding({input: ['A red fox.'], model: 'all-minilm-l6-v2'});
           const f = await engine.embeddings.create({input: ['A red fox.'], model: 'all-minilm-l6-v2'});
           return {a: a.choices[0].text, b: b.choices[0].text, e: e.data[0].embedding, f: f.data[0].embedding};""")
    assert out["a"] == out["b"] and out["e"] == out["f"]


def test_token_ids_as_a_prompt_and_as_embedding_input(webllm_page):
    ids = hf_prompt_ids(USER)
    rows = [[101, 1037, 2417, 4419, 1012, 102], [7592]]
    out = webllm_page.ok(
        """const c = await engine.completions.create({prompt: arg.ids, max_tokens: 6, temperature: 0,
                                                      ignore_eos: true, return_token_ids: true});
           const e = await engine.embeddings.create({input: arg.rows, model: 'all-minilm-l6-v2'});
           return {prompt: c.prompt_token_ids, ids: c.choices[0].token_ids, e: e.data.map((d) => d.embedding)};""",
        {"ids": ids, "rows": rows})
    assert out["prompt"] == ids and out["ids"][:len(greedy := hf_greedy_ids(USER, 6))] == greedy
    assert np.abs(np.array(out["e"]) - reference_token_embeddings(rows)).max() < 1e-4


def test_init_progress_callback_can_be_set_and_read(webllm_page):
    out = webllm_page.ok(
        """const mine = (r) => window.mine.push(r);
           window.mine = [];
           engine.setInitProgressCallback(mine);
           const same = engine.getInitProgressCallback() === mine;
           await engine.reload(['tiny-chat', 'all-minilm-l6-v2'], [{temperature: 0}, {}]);
           return {same, reports: window.mine.length, last: window.mine.at(-1)};""")
    assert out["same"] and out["reports"] > 0 and out["last"]["progress"] == 1


def test_gpu_queries_answer_or_say_there_is_no_webgpu(webllm_page):
    out = webllm_page.call(
        """const adapter = navigator.gpu ? await navigator.gpu.requestAdapter() : null;
           const vendor = await engine.getGPUVendor().then((v) => ({v}), (e) => ({e: e.name}));
           const size = await engine.getMaxStorageBufferBindingSize().then((v) => ({v}), (e) => ({e: e.name}));
           return {adapter: !!adapter, vendor, size};""")
    assert out["ok"], out
    v = out["value"]
    if v["adapter"]:
        assert isinstance(v["vendor"]["v"], str) and v["size"]["v"] >= 128 * 1024 * 1024
    else:
        assert v["vendor"] == v["size"] == {"e": "WebGPUNotAvailableError"}


@pytest.mark.parametrize(("chat_opts", "param"), [
    ({"conv_template": "llama-2"}, "chatOpts.conv_template"),
    ([{}, {}, {}], "chatOpts"),
    ("hot", "chatOpts"),
])
def test_chat_options_that_cannot_be_honored_are_refused(webllm_page, chat_opts, param):
    out = webllm_page.call("return await engine.reload(['tiny-chat', 'all-minilm-l6-v2'], arg);", chat_opts)
    assert not out["ok"] and out["error"]["name"] == "InvalidInputError" and out["error"]["param"] == param


def test_openai_fields_cross_the_page_and_the_worker(webllm_page):
    msgs = [{"role": "developer", "content": "Answer briefly."},
            {"role": "assistant", "content": None, "refusal": "No."}, *USER]
    out = webllm_page.ok(
        """const chat = await engine.chat.completions.create({messages: arg, max_completion_tokens: 3,
             ignore_eos: true, return_token_ids: true, store: false, metadata: {app: 'test'}, service_tier: 'auto',
             extra_body: {enable_thinking: false}});
           const emb = await engine.embeddings.create({input: 'A red fox.', model: 'all-minilm-l6-v2',
                                                       encoding_format: 'base64', dimensions: 384});
           const refused = await engine.chat.completions.create({messages: arg, modalities: ['audio']})
             .then(() => null, (e) => ({name: e.name, param: e.param}));
           return {ids: chat.prompt_token_ids, n: chat.usage.completion_tokens, emb: emb.data[0].embedding,
                   refused};""",
        msgs)
    assert out["ids"] == hf_prompt_ids([{"role": "system", "content": "Answer briefly."},
                                        {"role": "assistant", "content": "No."}, *USER])
    assert out["n"] == 3
    values = np.frombuffer(base64.b64decode(out["emb"]), dtype="<f4")
    assert np.allclose(values, sentence_transformer().encode(["A red fox."], normalize_embeddings=True)[0],
                       atol=1e-4)
    assert out["refused"] == {"name": "InvalidInputError", "param": "modalities"}
    assert not webllm_page.foreign_requests()


def test_an_abort_signal_ends_its_own_request_only(webllm_page):
    out = webllm_page.ok(
        """const ctrl = new AbortController();
           const long = {messages: arg, max_tokens: 4000, ignore_eos: true, temperature: 0};
           const aborted = engine.chat.completions.create(long, {signal: ctrl.signal});
           const other = engine.completions.create({prompt: 'The colour', max_tokens: 6, temperature: 0});
           setTimeout(() => ctrl.abort(), 300);
           const a = await aborted;
           const o = await other;
           const chunks = [];
           const ctrl2 = new AbortController();
           for await (const c of await engine.chat.completions.create({...long, stream: true},
                                                                        {signal: ctrl2.signal})) {
             chunks.push(c);
             if (chunks.length === 3) ctrl2.abort();
           }
           return {a: a.choices[0].finish_reason, n: a.usage.completion_tokens, o: o.choices[0].finish_reason,
                   finishes: chunks.map((c) => c.choices[0]?.finish_reason).filter(Boolean),
                   pending: engine.pendingCount};""", USER)
    assert out["a"] == "abort" and 0 < out["n"] < 4000
    assert out["o"] in ("stop", "length")
    assert out["finishes"] == ["abort"] and out["pending"] == 0


def test_latency_breakdown_comes_from_the_worker_one_entry_per_token(webllm_page):
    """``extra_body.enable_latency_breakdown`` timed by the JS bridge around the real forward pass
    and the sampler on the worker: one entry per generated token, the parts adding up."""
    usage = webllm_page.ok(
        """const r = await engine.chat.completions.create({messages: arg, max_tokens: 5, ignore_eos: true,
             temperature: 0.8, top_p: 0.9, logit_bias: {'5': 1}, presence_penalty: 0.3, logprobs: true,
             extra_body: {enable_latency_breakdown: true}});
           return r.usage;""", USER)
    breakdown = usage["extra"]["latencyBreakdown"]
    assert usage["completion_tokens"] == 5
    assert {k: len(v) for k, v in breakdown.items()} == {k: 5 for k in (
        "forwardTime", "logitProcessorTime", "grammarBitmaskTime", "penaltyTime", "logitBiasTime", "sampleTime",
        "totalTime")}
    assert all(f > 0 for f in breakdown["forwardTime"])
    assert sum(breakdown["forwardTime"]) < usage["extra"]["e2e_latency_s"]
    for i in range(5):
        parts = sum(breakdown[k][i] for k in ("logitProcessorTime", "grammarBitmaskTime", "penaltyTime",
                                               "logitBiasTime", "sampleTime"))
        assert parts == pytest.approx(breakdown["totalTime"][i], abs=1e-4)
