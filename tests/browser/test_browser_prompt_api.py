"""Chrome's Prompt API (`LanguageModel`) as web/prompt_api.js offers it, in Chromium (whose own
LanguageModel has no model behind it here: "unavailable"): the explainer's examples in our words,
on tiny-chat where answers need not make sense and on SmolLM2 where one must. References are
independent of the facade: HF transformers (tokens, greedy replies on the same weights),
`jsonschema`, Python's `re`, and the engine's own chat completions for the same conversation."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest

from tests.support.browser import EnginePage, boot_engine, tracked_context
from tests.support.reference import hf_chat, hf_prompt_ids

pytestmark = pytest.mark.browser

MAX_TOKENS = 24
RATING = {"type": "object", "required": ["rating"], "additionalProperties": False,
          "properties": {"rating": {"type": "number", "minimum": 0, "maximum": 5}}}


class PromptPage(EnginePage):
    def run(self, body: str, arg: Any = None, timeout: float = 180_000) -> dict[str, Any]:
        """Run an async body with `LanguageModel`, `installLanguageModel`, `engine` and `arg` in scope;
        errors come back as {name, message, requested, quota, isDOMException}."""
        out = self.page.evaluate(
            """async ([body, arg, ms]) => {
                 const { LanguageModel, installLanguageModel } = await import('/web/prompt_api.js');
                 const fn = new Function('LanguageModel', 'installLanguageModel', 'engine', 'arg',
                                         `return (async () => { ${body} })()`);
                 const timeout = new Promise((_, reject) => setTimeout(
                   () => reject(Object.assign(new Error(`no answer within ${ms} ms`), {name: 'TestTimeout'})), ms));
                 try {
                   return {ok: true, value: await Promise.race([
                     fn(LanguageModel, installLanguageModel, window.engine, arg), timeout])};
                 } catch (e) {
                   return {ok: false, error: {name: e?.name, message: String(e?.message ?? e),
                     requested: e?.requested ?? null, quota: e?.quota ?? null,
                     isDOMException: e instanceof DOMException}};
                 }
               }""",
            [body, arg, timeout],
        )
        assert out["ok"] or out["error"]["name"] != "TestTimeout", out["error"]["message"]
        return out

    def value(self, body: str, arg: Any = None, timeout: float = 180_000) -> Any:
        out = self.run(body, arg, timeout)
        assert out["ok"], f"call failed: {json.dumps(out['error'])}"
        return out["value"]

    def error(self, body: str, arg: Any = None) -> dict[str, Any]:
        out = self.run(body, arg)
        assert not out["ok"], f"expected an error, got {out['value']!r}"
        return out["error"]


@pytest.fixture(scope="module")
def tiny(browser: Any, site_url: str) -> Iterator[PromptPage]:
    """A page with `window.engine` (tiny-chat, made by the app); the facade is not configured yet."""
    context, requests = tracked_context(browser)
    page = context.new_page()
    page.set_default_timeout(300_000)
    boot_engine(page, site_url, ["tiny-chat"], "wasm")
    yield PromptPage(page, requests)
    context.close()


@pytest.fixture
def app_engine(tiny: PromptPage) -> PromptPage:
    """The facade on the app's engine, tiny-chat, replies of at most MAX_TOKENS tokens."""
    tiny.value("LanguageModel.configure({engine, model: 'tiny-chat', maxTokens: arg});", MAX_TOKENS)
    return tiny


def hf_greedy_text(ids: list[int], max_new_tokens: int) -> str:
    """tiny-chat's greedy reply to token ids, by HF transformers (EOS ends it, not included)."""
    import torch

    tok, model = hf_chat()
    prompt = torch.tensor([ids])
    with torch.no_grad():
        out = model.generate(prompt, attention_mask=torch.ones_like(prompt), do_sample=False,
                             max_new_tokens=max_new_tokens, eos_token_id=model.generation_config.eos_token_id,
                             pad_token_id=0)
    new = out[0, len(ids):].tolist()
    eos = model.generation_config.eos_token_id
    eos_ids = set(eos if isinstance(eos, list) else [eos])
    cut = next((i for i, t in enumerate(new) if t in eos_ids), len(new))
    return tok.decode(new[:cut], skip_special_tokens=True)


def test_the_browsers_own_language_model_is_unavailable_here(tiny: PromptPage) -> None:
    """What the opt-in global is for: Chromium declares LanguageModel but cannot create a session."""
    out = tiny.value("""
        const native = globalThis.LanguageModel;
        return {declared: typeof native, ours: native === LanguageModel,
                availability: native ? await native.availability() : null};""")
    assert out in ({"declared": "undefined", "ours": False, "availability": None},
                   {"declared": "function", "ours": False, "availability": "unavailable"})


def test_create_reports_download_progress_from_the_engines_load(tiny: PromptPage) -> None:
    """The facade's own engine (its own worker): `available` before only if the model's files are
    in the browser's cache (the app's engine put tiny-chat there), `downloading` while it loads,
    `downloadprogress` events from 0 to 1 that never go back, `available` after."""
    out = tiny.value("""
        const { hasModelInCache } = await import('/web/model_cache.js');
        LanguageModel.configure({model: 'tiny-chat', maxTokens: 8});
        const cached = await hasModelInCache('tiny-chat');
        const before = await LanguageModel.availability();
        const events = [];
        let during = null;
        const session = await LanguageModel.create({monitor(m) {
          m.addEventListener('downloadprogress', (e) => {
            events.push({loaded: e.loaded, total: e.total, progress: e instanceof ProgressEvent});
            if (e.loaded > 0 && e.loaded < 1 && !during) during = LanguageModel.availability();
          });
        }});
        during = await during;
        const after = await LanguageModel.availability();
        const reply = await session.prompt('Hi');
        return {cached, before, during, after, events, reply};""")
    assert out["before"] == ("available" if out["cached"] else "downloadable")
    assert out["during"] == "downloading" and out["after"] == "available"
    loaded = [e["loaded"] for e in out["events"]]
    assert loaded[0] == 0 and loaded[-1] == 1 and len(loaded) > 2, loaded
    assert loaded == sorted(loaded) and all(e["total"] == 1 and e["progress"] for e in out["events"])
    assert isinstance(out["reply"], str)


def test_options_the_model_cannot_honor_are_unavailable_and_refused(app_engine: PromptPage) -> None:
    out = app_engine.value("""
        const ask = (o) => LanguageModel.availability(o);
        return {
          text: await ask({expectedInputs: [{type: 'text', languages: ['en-US']}]}),
          image: await ask({expectedInputs: [{type: 'image'}]}),
          audio: await ask({expectedInputs: [{type: 'audio', languages: ['en']}]}),
          japanese: await ask({expectedInputs: [{type: 'text', languages: ['en', 'ja']}]}),
          audioOut: await ask({expectedOutputs: [{type: 'audio'}]}),
          frenchOut: await ask({expectedOutputs: [{type: 'text', languages: ['fr']}]}),
        };""")
    assert out == {"text": "available", "image": "unavailable", "audio": "unavailable",
                   "japanese": "unavailable", "audioOut": "unavailable", "frenchOut": "unavailable"}
    for options in ({"expectedInputs": [{"type": "image"}]},
                    {"expectedOutputs": [{"type": "text", "languages": ["ja"]}]},
                    {"expectedInputs": [{"type": "tool-call"}]}):
        err = app_engine.error("await LanguageModel.create(arg);", options)
        assert (err["name"], err["isDOMException"]) == ("NotSupportedError", True), options
    bad_tag = "await LanguageModel.availability({expectedInputs: [{type: 'text', languages: ['x_y_z!']}]});"
    assert app_engine.error(bad_tag)["name"] == "RangeError"
    both = "await LanguageModel.create({samplingMode: 'balanced', temperature: 1});"
    assert app_engine.error(both)["name"] == "TypeError"
    assert app_engine.error("await LanguageModel.create({temperature: -1});")["name"] == "RangeError"
    assert app_engine.error("await LanguageModel.create({topK: 0});")["name"] == "RangeError"
    clamped = app_engine.value("const s = await LanguageModel.create({topK: 1e9, temperature: Infinity});"
                               "return [s.topK, s.temperature, (await LanguageModel.params()).maxTopK];")
    assert clamped == [128, 2, 128]


def test_a_session_without_sampling_options_samples_as_the_model_declares(app_engine: PromptPage) -> None:
    """tiny-chat's generation config is greedy (``do_sample: false``): params() and a session made
    without sampling options say so, and its reply is chat.completions' greedy one; the old
    default (``balanced``, 0.7 / 40) is only what one asks for."""
    out = app_engine.value("""
        const params = await LanguageModel.params();
        const session = await LanguageModel.create();
        const reply = await session.prompt('Write me a poem.');
        const messages = [{role: 'user', content: 'Write me a poem.'}];
        const ask = async (extra) => (await engine.chat.completions.create(
          {messages, max_tokens: arg, ...extra})).choices[0].message.content;
        const balanced = await LanguageModel.create({samplingMode: 'balanced'});
        return {params: [params.defaultTemperature, params.defaultTopK], session: [session.temperature, session.topK,
                session.samplingMode], reply, greedy: await ask({temperature: 0}),
                sampled: await ask({temperature: 1, seed: 11}), balanced: [balanced.temperature, balanced.topK]};""",
                           MAX_TOKENS)
    assert out["params"] == [0, 1]
    assert out["session"] == [0, 1, None]
    assert out["reply"] == out["greedy"] != out["sampled"]
    assert out["balanced"] == [0.7, 40]


def test_prompts_answer_as_the_engines_chat_completions_do_and_sessions_keep_their_conversation(
        app_engine: PromptPage) -> None:
    """Greedy (`most-predictable`): the first reply equals chat.completions on the same message; the
    second equals chat.completions on the whole conversation (user, assistant, user)."""
    out = app_engine.value("""
        const session = await LanguageModel.create({samplingMode: 'most-predictable'});
        const first = await session.prompt('Write me a poem.');
        const second = await session.prompt('Another one.');
        const chat = async (messages) => (await engine.chat.completions.create(
          {messages, temperature: 0, max_tokens: arg})).choices[0].message.content;
        return {first, second,
                ref1: await chat([{role: 'user', content: 'Write me a poem.'}]),
                ref2: await chat([{role: 'user', content: 'Write me a poem.'}, {role: 'assistant', content: first},
                                  {role: 'user', content: 'Another one.'}])};""", MAX_TOKENS)
    assert out["first"] == out["ref1"]
    assert out["second"] == out["ref2"]


def test_streaming_gives_the_new_text_of_each_chunk(app_engine: PromptPage) -> None:
    out = app_engine.value("""
        const a = await LanguageModel.create({samplingMode: 'most-predictable'});
        const b = await a.clone();
        const chunks = [];
        for await (const chunk of a.promptStreaming('Write me an extra-long poem.')) chunks.push(chunk);
        return {chunks, whole: await b.prompt('Write me an extra-long poem.'),
                stream: a.promptStreaming('x') instanceof ReadableStream};""")
    assert out["stream"]
    assert len(out["chunks"]) > 1 and all(isinstance(c, str) and c for c in out["chunks"])
    assert "".join(out["chunks"]) == out["whole"]  # deltas, not the text so far


def test_system_prompts_and_roles_follow_the_spec(app_engine: PromptPage) -> None:
    out = app_engine.value("""
        const hamster = [{role: 'system', content: 'Pretend to be an eloquent hamster.'}];
        const greedy = {samplingMode: 'most-predictable'};
        const s1 = await LanguageModel.create({...greedy, initialPrompts: hamster});
        const s2 = await LanguageModel.create(greedy);
        await s2.append(hamster);
        const s3 = await LanguageModel.create(greedy);
        const ask = 'What is your favorite food?';
        return {usage1: s1.contextUsage, usage2: s2.contextUsage,
                r1: await s1.prompt(ask), r2: await s2.prompt(ask),
                r3: await s3.prompt([...hamster, {role: 'user', content: ask}])};""")
    assert out["usage1"] == out["usage2"] > 0
    assert out["r1"] == out["r2"] == out["r3"]  # the same conversation, three ways
    sys_late = app_engine.error("""const s = await LanguageModel.create();
        await s.prompt('hi'); await s.prompt([{role: 'system', content: 'late'}]);""")
    assert sys_late["name"] == "TypeError"
    assert app_engine.error("""const s = await LanguageModel.create();
        await s.prompt([{role: 'user', content: 'a'}, {role: 'system', content: 'b'}]);""")["name"] == "TypeError"
    not_last = app_engine.error("""const s = await LanguageModel.create();
        await s.prompt([{role: 'assistant', content: 'a', prefix: true}, {role: 'user', content: 'b'}]);""")
    assert (not_last["name"], not_last["isDOMException"]) == ("SyntaxError", True)
    image = app_engine.error("""const s = await LanguageModel.create();
        await s.prompt([{role: 'user', content: [{type: 'image', value: new Uint8Array(4)}]}]);""")
    assert image["name"] == "NotSupportedError"


def test_n_shot_prompts_and_a_mediator_conversation_ending_with_the_assistant(app_engine: PromptPage) -> None:
    out = app_engine.value("""
        const session = await LanguageModel.create({initialPrompts: [
          {role: 'system', content: 'Predict up to 5 emojis as a response to a comment.'},
          {role: 'user', content: 'This is amazing!'}, {role: 'assistant', content: 'wow, plus'},
          {role: 'user', content: 'LGTM'}, {role: 'assistant', content: 'thumbs, ship'}]});
        const one = await (await session.clone()).prompt('Back to the drawing board');
        const mediator = await LanguageModel.create({initialPrompts: [{role: 'system', content: 'You mediate.'}]});
        const two = await mediator.prompt([
          {role: 'user', content: 'Marketing: more budget.'}, {role: 'user', content: 'Finance: cut costs.'},
          {role: 'assistant', content: "Let's explore a compromise."}]);
        return [typeof one, typeof two, session.contextUsage > 0];""")
    assert out == ["string", "string", True]


def test_an_assistant_prefix_is_continued_as_hf_transformers_continues_it(app_engine: PromptPage) -> None:
    messages = [{"role": "user", "content": "Create a TOML character sheet for a gnome barbarian"}]
    reply = app_engine.value("""const s = await LanguageModel.create({samplingMode: 'most-predictable'});
        return await s.prompt([...arg, {role: 'assistant', content: '```toml\\n', prefix: true}]);""", messages)
    tok, _ = hf_chat()
    ids = hf_prompt_ids(messages) + tok.encode("```toml\n", add_special_tokens=False)
    assert reply == hf_greedy_text(ids, MAX_TOKENS)


def test_a_json_schema_constraint_gives_json_the_schema_accepts(app_engine: PromptPage) -> None:
    app_engine.value("LanguageModel.configure({engine, model: 'tiny-chat', maxTokens: 64});")
    results = app_engine.value("""
        const out = [];
        for (const omit of [false, true]) {
          const s = await LanguageModel.create({temperature: 0.8, topK: 40});
          out.push(await s.prompt('Summarize this feedback into a rating between 0-5: ' +
            'The food was delicious, service was excellent, will recommend.',
            {responseConstraint: arg, omitResponseConstraintInput: omit}));
        }
        return out;""", RATING)
    for text in results:
        jsonschema.validate(json.loads(text), RATING)


def test_a_regexp_constraint_gives_text_the_regexp_matches(app_engine: PromptPage) -> None:
    app_engine.value("LanguageModel.configure({engine, model: 'tiny-chat', maxTokens: 64});")
    replies = app_engine.value("""
        const out = [];
        for (let i = 0; i < 3; i++) {
          const s = await LanguageModel.create({temperature: 1, topK: 64});
          out.push(await s.prompt('Create a fictional email address for a gnome.',
                                  {responseConstraint: /^[a-z]{3,8}@[a-z]{3,8}\\.(com|org)$/}));
        }
        return out;""")
    for text in replies:
        assert re.fullmatch(r"[a-z]{3,8}@[a-z]{3,8}\.(com|org)", text), text
    for constraint, name in (("'a string'", "TypeError"), ("/abc/i", "NotSupportedError")):
        err = app_engine.error("const s = await LanguageModel.create();"
                               f"await s.prompt('x', {{responseConstraint: {constraint}}});")
        assert err["name"] == name
    assert app_engine.error("const s = await LanguageModel.create();"
                            "await s.prompt('x', {omitResponseConstraintInput: true});")["name"] == "TypeError"


def test_context_usage_is_counted_in_the_models_tokens(app_engine: PromptPage) -> None:
    out = app_engine.value("""
        const s = await LanguageModel.create();
        const measured = await s.measureContextUsage('Hello there');
        const old = await s.measureInputUsage('Hello there');
        const withSchema = await s.measureContextUsage('Hello there', {responseConstraint: {type: 'object'}});
        const omitted = await s.measureContextUsage('Hello there',
          {responseConstraint: {type: 'object'}, omitResponseConstraintInput: true});
        const before = s.contextUsage;
        await s.prompt('Hello there');
        return {measured, old, withSchema, omitted, before, after: s.contextUsage, window: s.contextWindow,
                quota: s.inputQuota, usage: s.inputUsage};""")
    reference = len(hf_prompt_ids([{"role": "user", "content": "Hello there"}]))
    assert out["measured"] == out["old"] == out["omitted"] == reference
    assert out["withSchema"] > out["measured"]
    assert out["before"] == 0 and out["after"] > out["measured"] and out["usage"] == out["after"]
    assert out["window"] == out["quota"] == 1024


def test_a_prompt_that_cannot_fit_raises_quota_exceeded_and_changes_nothing(app_engine: PromptPage) -> None:
    long = "word " * 1500
    out = app_engine.value("""
        const s = await LanguageModel.create();
        await s.prompt('Hi');
        const before = s.contextUsage;
        let error = null;
        try { await s.prompt(arg); } catch (e) {
          error = {name: e.name, dom: e instanceof DOMException, requested: e.requested, quota: e.quota};
        }
        const unchanged = s.contextUsage === before;
        return {error, unchanged, reply: typeof await s.prompt('Hi again')};""", long)
    err = out["error"]
    assert (err["name"], err["dom"]) == ("QuotaExceededError", True)
    assert err["requested"] >= len(hf_prompt_ids([{"role": "user", "content": long}])) and err["quota"] == 1024
    assert out["unchanged"] and out["reply"] == "string"
    err2 = app_engine.error("await LanguageModel.create({initialPrompts: [{role: 'system', content: arg}]});", long)
    assert err2["name"] == "QuotaExceededError" and err2["quota"] == 1024


def test_overflow_drops_the_oldest_turns_keeps_the_initial_prompts_and_fires_contextoverflow(
        app_engine: PromptPage) -> None:
    out = app_engine.value("""
        const s = await LanguageModel.create({initialPrompts: [{role: 'system', content: 'Keep me.'}]});
        let fired = 0, handled = 0;
        s.addEventListener('contextoverflow', () => fired++);
        s.oncontextoverflow = () => handled++;
        const usages = [];
        for (let i = 0; i < 5; i++) { await s.prompt(arg); usages.push(s.contextUsage); }
        return {fired, handled, usages, window: s.contextWindow};""", "word " * 280)
    assert out["fired"] >= 1 and out["handled"] == out["fired"]
    assert all(u < out["window"] for u in out["usages"])
    assert min(out["usages"][2:]) < max(out["usages"])  # turns were dropped


def test_aborting_mid_stream_errors_the_stream_and_the_session_goes_on(app_engine: PromptPage) -> None:
    app_engine.value("LanguageModel.configure({engine, model: 'tiny-chat', maxTokens: 600});")
    out = app_engine.value("""
        const s = await LanguageModel.create();
        await s.prompt('Hi');
        const usage = s.contextUsage;
        const controller = new AbortController();
        const reader = s.promptStreaming('Write me an extra-long poem.', {signal: controller.signal}).getReader();
        const first = await reader.read();
        controller.abort();
        let error = null;
        try { while (!(await reader.read()).done); }
        catch (e) { error = {name: e.name, dom: e instanceof DOMException}; }
        const unchanged = s.contextUsage === usage;
        const pre = new AbortController(); pre.abort();
        let early = null;
        try { await s.prompt('x', {signal: pre.signal}); } catch (e) { early = e.name; }
        const after = await s.prompt('Hi again');
        return {first: first.value, error, unchanged, early, after: typeof after, grew: s.contextUsage > usage};""")
    assert isinstance(out["first"], str) and out["first"]
    assert out["error"] == {"name": "AbortError", "dom": True}
    assert out["unchanged"] and out["early"] == "AbortError"
    assert out["after"] == "string" and out["grew"]
    assert app_engine.greedy()  # the engine itself still serves


def test_destroy_ends_calls_under_way_and_refuses_later_ones(app_engine: PromptPage) -> None:
    app_engine.value("LanguageModel.configure({engine, model: 'tiny-chat', maxTokens: 600});")
    out = app_engine.value("""
        const s = await LanguageModel.create();
        const reader = s.promptStreaming('Write me an extra-long poem.').getReader();
        await reader.read();  // it is under way
        s.destroy();
        const running = reader.read().then(function more(r) { return r.done ? 'done' : reader.read().then(more); })
          .catch((e) => e.name);
        const names = [await running];
        for (const call of [() => s.prompt('x'), () => s.append('x'), () => s.clone(),
                            () => s.measureContextUsage('x')]) {
          names.push(await call().then(() => 'ok', (e) => e.name));
        }
        try { s.promptStreaming('x'); names.push('ok'); } catch (e) { names.push(e.name); }
        const fresh = await LanguageModel.create();
        return {names, fresh: typeof await fresh.prompt('Hi')};""")
    assert out["names"] == ["AbortError"] + ["InvalidStateError"] * 5
    assert out["fresh"] == "string"


def test_a_clone_keeps_the_history_so_far_and_then_goes_its_own_way(app_engine: PromptPage) -> None:
    out = app_engine.value("""
        const a = await LanguageModel.create({samplingMode: 'most-predictable',
          initialPrompts: [{role: 'system', content: 'You help with clothing choices.'}]});
        await a.prompt('What should I wear today? It is sunny.');
        const b = await a.clone();
        const c = await a.clone();
        const usage = a.contextUsage;
        await b.prompt('Oh no, it is going to rain!');
        await b.append('And it is cold.');
        return {same: [b.temperature, b.topK, b.samplingMode].join() === [a.temperature, a.topK, a.samplingMode].join(),
                usage, cUsage: c.contextUsage, aUsage: a.contextUsage, bUsage: b.contextUsage,
                fromA: await a.prompt('What shoes?'), fromC: await c.prompt('What shoes?')};""")
    assert out["same"] and out["cUsage"] == out["usage"] == out["aUsage"] < out["bUsage"]
    assert out["fromA"] == out["fromC"]  # b's turns reached neither


def test_the_opt_in_global_and_the_page_made_no_request_off_this_machine(app_engine: PromptPage) -> None:
    out = app_engine.value("""
        const native = globalThis.LanguageModel;
        const kept = await installLanguageModel(undefined, {replace: 'never'});
        const installed = await installLanguageModel({engine, model: 'tiny-chat', maxTokens: 8});
        const again = await installLanguageModel();
        const s = await globalThis.LanguageModel.create();
        const bad = await installLanguageModel(undefined, {replace: 'sometimes'}).then(() => 'ok', (e) => e.name);
        return {kept: kept === native, same: installed === LanguageModel && again === LanguageModel
                && globalThis.LanguageModel === LanguageModel, reply: typeof await s.prompt('Hi'), bad};""")
    assert out == {"kept": True, "same": True, "reply": "string", "bad": "TypeError"}
    assert app_engine.foreign_requests() == []


def test_the_real_model_answers_a_question_through_the_global(browser: Any, site_url: str) -> None:
    """SmolLM2 (the default model) through /web/prompt_api_global.js, as an app written for Chrome
    would call it: the capital of France is Paris."""
    context, requests = tracked_context(browser)
    page = context.new_page()
    page.set_default_timeout(300_000)
    try:
        page.goto(site_url + "web/engine.js")
        out = page.evaluate("""async () => {
            const native = globalThis.LanguageModel;
            const before = native ? await native.availability() : 'unavailable';
            await import('/web/prompt_api_global.js?maxTokens=48');
            const english = {expectedInputs: [{type: 'text', languages: ['en']}]};
            const availability = await LanguageModel.availability(english);
            const session = await LanguageModel.create({samplingMode: 'most-predictable', initialPrompts: [
              {role: 'system', content: 'You answer in one short sentence.'}]});
            const answer = await session.prompt('What is the capital of France?');
            const chunks = [];
            for await (const c of session.promptStreaming('And of Germany?')) chunks.push(c);
            return {before, availability, answer, second: chunks.join(''),
                    after: await LanguageModel.availability(), window: session.contextWindow};
        }""")
    finally:
        context.close()
    assert out["before"] == "unavailable" and out["availability"] == "downloadable" and out["after"] == "available"
    assert "Paris" in out["answer"], out["answer"]
    assert "Berlin" in out["second"], out["second"]
    assert out["window"] == 8192
    assert [u for u in requests if not u.startswith(("http://127.0.0.1:", "blob:", "data:"))] == []
