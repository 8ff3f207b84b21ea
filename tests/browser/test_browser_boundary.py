"""The page API as a hostile caller uses it: every call returns a promise that settles once, with a
typed error naming the argument when it cannot be honoured; nothing stays pending; a dead worker
rejects what was pending."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from buildtools.soak.interrupts import SPIN
from tests.support.browser import EnginePage, open_engine_page

CALLS = int(os.environ.get("CSI_PAGE_FUZZ_CALLS", "300"))
TYPED = ["InvalidInputError", "ModelNotSupportedError", "ContextWindowExceededError", "ModelLoadError",
         "NotFoundError", "SkillError"]

# Runs `calls` (functions of engine returning whatever the API returns), each bounded in time: one
# still pending after 20 s is stopped with interruptGenerate(), as a person would, and must then
# settle within 3 s (an AbortError is its typed answer); one that does not is a hang.
HARNESS = """
  const settle = async (f) => {
    let p;
    try { p = f(); } catch (e) { return {sync: true, name: e?.name ?? String(e), message: String(e?.message ?? e)}; }
    if (!(p instanceof Promise)) return {notPromise: true};
    const late = (ms) => new Promise((r) => setTimeout(() => r({late: true}), ms));
    const settled = p.then(
      async (v) => {
        if (v && typeof v[Symbol.asyncIterator] === 'function') { for await (const _ of v) {} }
        return {ok: true};
      },
      (e) => ({name: e?.name, param: e?.param ?? null, message: String(e?.message ?? e)}));
    const first = await Promise.race([late(20000), settled]);
    if (!first.late) return first;
    engine.interruptGenerate();
    const after = await Promise.race([late(3000), settled]);
    return after.late ? {hang: true} : {...after, interrupted: true};
  };
"""


@pytest.fixture(scope="module")
def page(browser: Any, site_url: str) -> Iterator[EnginePage]:
    ep = open_engine_page(browser, site_url, ["tiny-chat", "all-minilm-l6-v2"], "wasm")
    yield ep
    ep.page.context.close()



def test_arguments_that_cannot_cross_are_refused_by_name(page):
    out = page.ok(HARNESS + """
      const circular = {messages: []}; circular.self = circular;
      let deep = []; for (let i = 0; i < 1500; i++) deep = [deep];
      const {port1} = new MessageChannel();
      const user = [{role: 'user', content: 'hi'}];
      const calls = {
        fn: () => engine.chat.completions.create({messages: user, stop: () => 1}),
        symbol: () => engine.chat.completions.create({messages: user, stop: Symbol('x')}),
        promise: () => engine.chat.completions.create({messages: user, seed: Promise.resolve(1)}),
        port: () => engine.chat.completions.create({messages: user, stop: port1}),
        bigint: () => engine.completions.create({prompt: 'x', max_tokens: 10n}),
        circular: () => engine.chat.completions.create(circular),
        typed: () => engine.embeddings.create({input: new Float32Array(3)}),
        map: () => engine.index.list(new Map()),
        deep: () => engine.chat.completions.create({messages: user, stop: deep}),
        nan: () => engine.chat.completions.create({messages: user, temperature: NaN}),
        registerNull: () => engine.skills.register(null),
        putNullOptions: () => engine.index.put([], null),
        createNullOptions: () => engine.index.createIndex({namespace: 'n', collection: 'c', index: 'i'}, null),
        stringArgs: () => engine.csi.chunk('not a list'),
        surrogate: () => engine.completions.create({prompt: '\\ud800', max_tokens: 2}),
      };
      const out = {};
      for (const [k, f] of Object.entries(calls)) out[k] = await settle(f);
      out.pending = engine.pendingCount;
      return out;""")
    expected_params = {"fn": "stop", "symbol": "stop", "promise": "seed", "port": "stop", "bigint": "max_tokens",
                       "circular": "self", "typed": "input", "map": "request", "nan": "temperature",
                       "registerNull": "name", "stringArgs": "requests", "surrogate": "prompt"}
    for key, param in expected_params.items():
        assert out[key].get("name") == "InvalidInputError" and out[key]["param"] == param, (key, out[key])
    assert out["deep"]["name"] == "InvalidInputError" and out["deep"]["param"] == "message", out["deep"]
    assert "`stop[0][0][0]…`" in out["deep"]["message"] and len(out["deep"]["message"]) < 80  # not a 300-char path
    assert out["putNullOptions"].get("ok") and out["createNullOptions"].get("ok") is not None
    assert out["pending"] == 0
    assert not any(v.get("sync") or v.get("hang") or v.get("notPromise") for v in out.values() if isinstance(v, dict))


def test_repetition_penalties_that_break_float32_are_refused_and_logprobs_stay_numbers(page):
    out = page.ok(HARNESS + """
      const user = [{role: 'user', content: 'hi hi hi'}];
      const out = {};
      for (const rp of [1e-320, 0, 0.0099, 100.01, 1e30]) {
        out['chat' + rp] = await settle(() => engine.chat.completions.create(
          {messages: user, max_tokens: 2, logprobs: true, repetition_penalty: rp}));
        out['spin' + rp] = await settle(() => engine.llm.infer('tiny-chat', 'x', {max_tokens: 2, repeat_penalty: rp}));
      }
      out.bounds = [];
      for (const rp of [0.01, 100]) {
        const r = await engine.chat.completions.create({messages: user, max_tokens: 6, logprobs: true,
          top_logprobs: 5, temperature: 0, ignore_eos: true, repetition_penalty: rp, logit_bias: {'1': -100}});
        out.bounds.push(r.choices[0].logprobs.content.flatMap(
          (t) => [t.logprob, ...t.top_logprobs.map((a) => a.logprob)]));
      }
      return out;""")
    for key, value in out.items():
        if key.startswith("chat"):
            assert value.get("name") == "InvalidInputError" and value["param"] == "repetition_penalty", (key, value)
        elif key.startswith("spin"):
            assert value.get("name") == "InvalidInputError" and value["param"] == "params.repeat_penalty", (key, value)
    for values in out["bounds"]:
        assert len(values) == 6 * 6
        assert all(isinstance(v, int | float) and -9999 <= v <= 0 for v in values), values


def test_random_hostile_calls_settle_typed_and_leave_nothing_pending(page):
    before = page.greedy()
    out = page.ok(HARNESS + """
      let s = 12345;  // a seeded generator: the same calls every run
      const rnd = () => { s = (s * 1103515245 + 12345) % 2147483648; return s / 2147483648; };
      const pick = (xs) => xs[Math.floor(rnd() * xs.length)];
      const circ = {}; circ.c = circ;
      const hostile = () => pick([null, undefined, 0, -1, 1e308, NaN, Infinity, '', 'x'.repeat(1000), '\\ud800',
        true, [], {}, [null], {a: {b: {c: []}}}, () => 1, Symbol('s'), 10n, circ, new Uint8Array(2), new Date(0),
        new Map(), Promise.resolve(), {role: 'user'}, [{role: 'user', content: 5}], {messages: 'hi'},
        {prompt: 'x', max_tokens: 2, stream: true}, {messages: [{role: 'user', content: 'x'}], max_tokens: 2},
        {text: 'a', languages: ['eng']}, [{text: 'a b', params: {model: 'all-minilm-l6-v2', max_tokens: 2}}],
        {name: 'summarize', source: 'x = ('}, {input: 'a', model: 'all-minilm-l6-v2'}]);
      const methods = [
        (a, b) => engine.chat.completions.create(a), (a) => engine.completions.create(a),
        (a) => engine.embeddings.create(a), (a) => engine.csi.complete(a), (a) => engine.csi.chat(a),
        (a) => engine.csi.chunk(a), (a) => engine.csi.chunkWithOffsets(a), (a) => engine.csi.selectLanguage(a),
        (a) => engine.csi.search(a), (a) => engine.csi.documents(a), (a) => engine.csi.documentMetadata(a),
        (a, b) => engine.index.createIndex(a, b), (a, b) => engine.index.put(a, b), (a) => engine.index.delete(a),
        (a) => engine.index.list(a), (a) => engine.index.drop(a), (a) => engine.skills.register(a),
        (a) => engine.skills.metadata(a), (a, b) => engine.skills.run(a, b), (a) => engine.skills.remove(a),
        (a, b) => engine.llm.infer(a, b, {max_tokens: 2}), (a, b) => engine.llm.generateEmbeddings(a, b),
        (a) => engine.remote.generate(a), (a) => engine.remote.getLlmType(a),
        (a) => engine.remote.generationalGuts(a),
      ];
      const counts = {}; const bad = [];
      for (let i = 0; i < arg; i++) {
        const m = Math.floor(rnd() * methods.length);
        const r = await settle(() => methods[m](hostile(), hostile()));
        const key = r.ok ? 'ok' : (r.name ?? Object.keys(r)[0]);
        counts[key] = (counts[key] ?? 0) + 1;
        const typed = %TYPED%.includes(r.name) || (r.interrupted && r.name === 'AbortError');
        if (r.sync || r.hang || r.notPromise || (!r.ok && !typed)
            || (r.name === 'InvalidInputError' && r.param === null)) bad.push([i, m, r]);
      }
      return {counts, bad: bad.slice(0, 10), pending: engine.pendingCount};""".replace("%TYPED%", str(TYPED)), CALLS)
    assert out["bad"] == [], out
    assert out["pending"] == 0
    assert sum(out["counts"].values()) == CALLS
    assert page.greedy() == before


def test_a_runaway_skill_is_interrupted_at_its_time_limit_and_the_engine_goes_on(page):
    before = page.greedy()
    out = page.ok("""
      await engine.skills.register({name: 'spin', source: arg.spin});
      const t = performance.now();
      const run = await engine.skills.run('spin', {}, {timeLimitMs: 1500}).then(() => null,
        (e) => ({name: e.name, message: e.message}));
      const ranMs = performance.now() - t;
      const load = await engine.skills.register({name: 'spin2', source: arg.loops}, {timeLimitMs: 1500})
        .then(() => null, (e) => ({name: e.name, param: e.param}));
      const listed = (await engine.skills.list()).map((s) => s.name);
      return {run, ranMs, load, listed, isolated: crossOriginIsolated, pending: engine.pendingCount};""",
                  {"spin": SPIN, "loops": "while True:\n    pass\n"})
    assert out["isolated"]
    assert out["run"]["name"] == "SkillError" and "interrupted" in out["run"]["message"]
    assert 1400 < out["ranMs"] < 10_000
    assert out["load"] == {"name": "InvalidInputError", "param": "source"}
    assert "spin" in out["listed"] and "spin2" not in out["listed"]
    assert out["pending"] == 0
    assert page.greedy() == before


def test_a_terminated_worker_rejects_what_was_pending_with_a_typed_error(page):
    out = page.ok("""
      const pending = engine.completions.create({prompt: 'The', max_tokens: 500, ignore_eos: true});
      const later = new Promise((r) => setTimeout(r, 50));
      await later;
      engine.terminate();
      const first = await pending.then(() => null, (e) => e.name);
      const next = await engine.completions.create({prompt: 'x'}).then(() => null, (e) => e.name);
      return {first, next, pending: engine.pendingCount};""")
    assert out == {"first": "WorkerCrashedError", "next": "WorkerCrashedError", "pending": 0}
