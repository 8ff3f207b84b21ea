"""The chat's conversations as a user drives them: kept in IndexedDB across reloads, searched,
renamed, deleted, exported and imported; system prompts, edited questions and regenerated replies
as branches, Stop, settings and presets per conversation, per-message stats. The replies the page
shows are checked against the engine's own answers to the same requests (``engine_page``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.support.browser import LOCAL_PREFIXES, EnginePage, load_axe
from tests.support.paths import ROOT

pytestmark = pytest.mark.browser

ARTIFACTS = ROOT / "test-results"
FAST = "max_tokens=12&temperature=0"


class Chat:
    """The playground in a browser context of its own (its own IndexedDB)."""

    def __init__(self, browser: Any, site_url: str, query: str = FAST) -> None:
        self.context = browser.new_context(accept_downloads=True)
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.context.on("request", lambda r: self.requests.append(r.url))
        self.page = self.context.new_page()
        self.page.set_default_timeout(180_000)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.url = site_url + "index.html?model=tiny-chat&" + query
        self.page.goto(self.url)
        self.ready()

    def ready(self) -> None:
        self.page.wait_for_selector("body[data-ready='true']")

    def reload(self) -> None:
        self.page.wait_for_selector("#messages:not([data-saving])", state="attached")  # what was changed is stored
        self.page.reload()
        self.ready()

    def send(self, text: str) -> None:
        """Send a question and wait until its turn is over (and saved)."""
        self.page.fill("#prompt", text)
        self.page.press("#prompt", "Enter")
        self.settle()

    def settle(self) -> None:
        self.page.wait_for_selector("#send:enabled")
        self.page.wait_for_selector(".message.assistant.live", state="detached")

    def replies(self) -> list[str]:
        """The shown replies as the model wrote them: each one's Raw toggle pressed, its text read."""
        return self.page.evaluate("""() => [...document.querySelectorAll('.message.assistant')].map((m) => {
            const raw = m.querySelector('.md-raw-toggle');
            if (raw) raw.click();
            const text = m.querySelector('.body').textContent;
            if (raw) raw.click();
            return text;
          })""")

    def titles(self) -> list[str]:
        return self.page.locator("#conv-list .conv-open").all_inner_texts()

    def titles_are(self, titles: list[str]) -> None:
        """The sidebar lists these titles, in this order (waiting for what a click started)."""
        found = self.page.locator("#conv-list .conv-open")
        expect(found).to_have_text(titles) if titles else expect(found).to_have_count(0)

    def questions_are(self, texts: list[str]) -> None:
        found = self.page.locator(".message.user .body")
        expect(found).to_have_text(texts) if texts else expect(found).to_have_count(0)

    def conv(self, title: str) -> Any:
        return self.page.locator("#conv-list .conv", has=self.page.locator(".conv-open", has_text=title))

    def settings(self) -> None:
        """Open the settings drawer."""
        if self.page.locator("#chat-settings details").get_attribute("open") is None:
            self.page.click("#chat-settings summary")

    def set_knob(self, selector: str, value: str) -> None:
        self.page.fill(selector, value)
        self.page.locator(selector).dispatch_event("change")

    def axe(self, selector: str) -> list[dict[str, Any]]:
        """axe-core's serious and critical violations inside `selector`."""
        load_axe(self.page)
        found = self.page.evaluate(
            """async (sel) => (await axe.run(document.querySelector(sel),
                 {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice']}}))
                 .violations.map((v) => ({id: v.id, impact: v.impact,
                                          nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' '))}))""",
            selector)
        return [v for v in found if v["impact"] in ("serious", "critical")]

    def export(self, folder: Path) -> tuple[dict, Path]:
        """Click Export; the downloaded file (kept in `folder`) and what it holds."""
        with self.page.expect_download() as info:
            self.page.click("#conv-export")
        assert info.value.suggested_filename.endswith(".json")
        path = folder / f"export-{len(list(folder.iterdir()))}.json"
        info.value.save_as(path)
        return json.loads(path.read_text()), path

    def close(self) -> None:
        assert self.errors == []
        assert [u for u in self.requests if not u.startswith(LOCAL_PREFIXES)] == []
        self.context.close()


@pytest.fixture
def chat(browser: Any, site_url: str) -> Iterator[Chat]:
    c = Chat(browser, site_url)
    yield c
    c.close()


def engine_reply(engine_page: EnginePage, request: dict[str, Any]) -> list[str]:
    """The engine's own replies (every choice) to a request, the reference the page must equal."""
    out = engine_page.ok("return (await engine.chat.completions.create(arg)).choices.map((c) => c.message.content);",
                         request)
    return out


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def test_conversations_survive_a_reload_and_are_searched_renamed_and_deleted(chat: Chat) -> None:
    page = chat.page
    chat.send("Name a Python module.")
    first_reply = chat.replies()
    chat.page.click("#new-chat")
    chat.questions_are([])
    chat.send("What is a list?")
    second_reply = chat.replies()
    chat.titles_are(["What is a list?", "Name a Python module."])

    chat.reload()
    chat.titles_are(["What is a list?", "Name a Python module."])
    assert page.locator("#conv-list [aria-current='true']").inner_text() == "What is a list?"
    chat.questions_are(["What is a list?"])
    assert chat.replies() == second_reply
    chat.conv("Name a Python module.").locator(".conv-open").click()
    chat.questions_are(["Name a Python module."])
    assert chat.replies() == first_reply

    # rename: the title is no longer the question, which search still finds by its text
    chat.conv("Name a Python module.").locator(".conv-rename").click()
    page.fill("#conv-list .conv-title-input", "Alpha <b>notes</b>")
    page.press("#conv-list .conv-title-input", "Enter")
    chat.titles_are(["What is a list?", "Alpha <b>notes</b>"])  # newest talk first; a rename is no talk
    assert page.locator("#sidebar b").count() == 0
    page.fill("#conv-search", "python MODULE")
    chat.titles_are(["Alpha <b>notes</b>"])
    page.fill("#conv-search", "list")
    chat.titles_are(["What is a list?"])
    page.fill("#conv-search", "no such words")
    chat.titles_are([])
    assert "No conversation matches" in page.inner_text("#conv-list")
    page.fill("#conv-search", "")
    chat.reload()
    chat.titles_are(["What is a list?", "Alpha <b>notes</b>"])

    # delete the open one: the other opens; Undo brings it back
    chat.conv("Alpha").locator(".conv-open").click()
    chat.conv("Alpha").locator(".conv-delete").click()
    chat.titles_are(["What is a list?"])
    chat.questions_are(["What is a list?"])
    page.click("#conv-undo button")
    chat.titles_are(["What is a list?", "Alpha <b>notes</b>"])
    chat.questions_are(["Name a Python module."])
    chat.conv("What is a list?").locator(".conv-delete").click()
    chat.titles_are(["Alpha <b>notes</b>"])
    chat.reload()
    chat.titles_are(["Alpha <b>notes</b>"])
    chat.questions_are(["Name a Python module."])

    # the keyboard: Ctrl+K searches, Ctrl+Shift+O starts a new chat
    page.locator("body").press("Control+k")
    assert page.evaluate("document.activeElement.id") == "conv-search"
    page.locator("body").press("Control+Shift+O")
    chat.questions_are([])


def test_export_then_import_round_trips_and_a_bad_file_changes_nothing(browser: Any, site_url: str,
                                                                        tmp_path: Path) -> None:
    one = Chat(browser, site_url)
    one.settings()
    one.page.fill("#system-prompt", "You answer in one word.")
    one.page.locator("#system-prompt").dispatch_event("change")
    one.send("What is JSON?")
    one.page.click("#new-chat")
    one.send("Say <img src=x onerror=alert(1)> hello")
    exported, path = one.export(tmp_path)
    one.close()
    assert exported["format"] == "csi-playground/conversations" and exported["version"] == 1
    by_title = {c["title"]: c for c in exported["conversations"]}
    assert set(by_title) == {"What is JSON?", "Say <img src=x onerror=alert(1)> hello"}
    assert by_title["What is JSON?"]["system"] == "You answer in one word."
    assert [m["role"] for m in by_title["What is JSON?"]["messages"]] == ["user", "assistant"]

    two = Chat(browser, site_url)
    page = two.page
    page.set_input_files("#conv-import", str(path))
    page.wait_for_selector("#conv-list .conv-open >> nth=1")
    assert sorted(two.titles()) == sorted(by_title)
    assert page.locator("#messages img, #sidebar img").count() == 0
    again, _ = two.export(tmp_path)
    assert again == exported

    # hostile files: each is refused naming what is wrong, and nothing changes
    good = json.loads(path.read_text())
    bad_role = json.loads(path.read_text())
    bad_role["conversations"][0]["messages"][0]["role"] = "system"
    orphan = json.loads(path.read_text())
    orphan["conversations"][1]["messages"][0]["parent"] = "nowhere"
    extra = json.loads(path.read_text())
    extra["conversations"][0]["settings"]["temperature"] = "hot"
    cases = {
        "not-json.json": ("{ nope", "not JSON"),
        "bad-role.json": (json.dumps(bad_role), "conversations[0].messages[0].role"),
        "orphan.json": (json.dumps(orphan), "conversations[1].messages[0].parent"),
        "bad-setting.json": (json.dumps(extra), "conversations[0].settings.temperature"),
        "unknown-key.json": (json.dumps({**good, "script": "alert(1)"}), "the file.script"),
        "wrong-format.json": (json.dumps({**good, "format": "other"}), 'format must be "csi-playground/conversations"'),
    }
    for name, (text, named) in cases.items():
        bad = tmp_path / name
        bad.write_text(text)
        page.set_input_files("#conv-import", str(bad))
        page.wait_for_function("(s) => document.querySelector('#conv-error').textContent.includes(s)", arg=named)
        assert page.inner_text("#conv-error").startswith("Not imported:"), name
        assert sorted(two.titles()) == sorted(by_title), name
    after, _ = two.export(tmp_path)
    assert after == exported
    two.reload()
    assert sorted(two.titles()) == sorted(by_title)
    two.close()


def test_the_system_prompt_is_sent(chat: Chat, engine_page: EnginePage) -> None:
    system = "You are a terse assistant who talks about owls."
    chat.settings()
    chat.page.fill("#system-prompt", system)
    chat.page.locator("#system-prompt").dispatch_event("change")
    chat.send("Hello there.")
    messages = [{"role": "system", "content": system}, *user("Hello there.")]
    expected = engine_reply(engine_page, {"messages": messages, "temperature": 0, "max_tokens": 12})
    assert chat.replies() == expected
    # the reply alone may not tell (tiny-chat often ignores a system prompt): the prompt's length does
    count = "return (await engine.chat.completions.create(arg)).usage.prompt_tokens;"
    with_system = engine_page.ok(count, {"messages": messages, "max_tokens": 1})
    assert with_system > engine_page.ok(count, {"messages": user("Hello there."), "max_tokens": 1})
    assert int(chat.page.get_attribute(".message.assistant", "data-prompt-tokens")) == with_system
    chat.reload()
    chat.settings()
    assert chat.page.input_value("#system-prompt") == system


def test_an_edited_question_is_a_branch_and_flipping_back_shows_the_old_reply(chat: Chat,
                                                                              engine_page: EnginePage) -> None:
    page = chat.page
    chat.send("Tell me about sets.")
    old = chat.replies()
    page.click(".message.user .edit")
    page.fill(".message.user .edit-text", "Tell me about dicts.")
    page.click(".message.user .edit-send")
    chat.settle()
    chat.questions_are(["Tell me about dicts."])
    assert page.inner_text(".message.user .branch-pos") == "2/2"
    assert chat.replies() == engine_reply(
        engine_page, {"messages": user("Tell me about dicts."), "temperature": 0, "max_tokens": 12})
    page.click(".message.user .branch-prev")
    chat.questions_are(["Tell me about sets."])
    assert chat.replies() == old
    assert page.inner_text(".message.user .branch-pos") == "1/2"
    chat.reload()
    chat.questions_are(["Tell me about sets."])
    assert chat.replies() == old
    # a follow-up goes on from the shown branch only
    chat.send("And frozensets?")
    chat.questions_are(["Tell me about sets.", "And frozensets?"])
    assert chat.replies()[1] == engine_reply(engine_page, {
        "messages": [*user("Tell me about sets."), {"role": "assistant", "content": old[0]}, *user("And frozensets?")],
        "temperature": 0, "max_tokens": 12})[0]


SAMPLED = {"temperature": 1.0, "max_tokens": 12}  # the other sampling knobs are the model's


def test_regenerate_with_a_new_seed_adds_an_alternative_and_n_gives_alternatives(browser: Any, site_url: str,
                                                                                 engine_page: EnginePage) -> None:
    chat = Chat(browser, site_url, "max_tokens=12")
    page = chat.page
    chat.settings()
    chat.set_knob("#set-temperature", "1")
    chat.set_knob("#set-seed", "7")
    chat.send("Say something.")
    seven = engine_reply(engine_page, {"messages": user("Say something."), **SAMPLED, "seed": 7})
    eight = engine_reply(engine_page, {"messages": user("Say something."), **SAMPLED, "seed": 8})
    assert seven != eight
    assert chat.replies() == seven
    chat.set_knob("#set-seed", "8")
    page.click(".message.assistant .regenerate")
    chat.settle()
    assert chat.replies() == eight
    assert page.inner_text(".message.assistant .branch-pos") == "2/2"
    page.click(".message.assistant .branch-prev")
    assert chat.replies() == seven

    # n = 2: both choices are kept, as alternatives
    page.click("#new-chat")
    chat.set_knob("#set-n", "2")
    chat.send("Name a colour.")
    both = engine_reply(engine_page, {"messages": user("Name a colour."), **SAMPLED, "seed": 8, "n": 2})
    assert chat.replies() == both[:1]
    assert page.inner_text(".message.assistant .branch-pos") == "1/2"
    page.click(".message.assistant .branch-next")
    assert chat.replies() == both[1:]
    chat.close()


def test_stop_keeps_the_partial_reply_and_it_survives_a_reload(browser: Any, site_url: str) -> None:
    chat = Chat(browser, site_url, "max_tokens=900&ignore_eos=1&temperature=0")
    page = chat.page
    page.fill("#prompt", "Tell me about the textwrap module.")
    page.click("#send")
    page.wait_for_function("() => document.querySelector('.message.assistant.live .body')?.textContent.length > 20")
    page.click("#stop")
    chat.settle()
    msg = page.locator(".message.assistant")
    assert msg.get_attribute("data-finish") == "abort"
    partial = chat.replies()
    assert len(partial[0]) > 20
    assert "stopped" in msg.locator(".meta").inner_text()
    assert int(msg.get_attribute("data-completion-tokens")) < 900
    chat.reload()
    assert chat.replies() == partial
    assert page.locator(".message.assistant").get_attribute("data-finish") == "abort"
    chat.close()


CREATIVE = {"temperature": 1.1, "top_p": 0.98, "top_k": 0, "frequency_penalty": 0.3, "presence_penalty": 0.3,
            "repetition_penalty": 1}


def test_settings_are_kept_per_conversation_and_presets_set_what_is_sent(browser: Any, site_url: str,
                                                                         engine_page: EnginePage) -> None:
    chat = Chat(browser, site_url, "max_tokens=12")
    page = chat.page
    chat.settings()
    # a new conversation sends no sampling: the model's defaults (tiny-chat's generation config is greedy)
    assert page.input_value("#set-temperature") == ""
    chat.send("Write a letter.")
    assert chat.replies() == engine_reply(engine_page, {"messages": user("Write a letter."), "temperature": 0,
                                                        "max_tokens": 12})
    assert chat.replies() != engine_reply(engine_page, {"messages": user("Write a letter."), "temperature": 1,
                                                        "seed": 3, "max_tokens": 12})
    page.click("#new-chat")
    page.select_option("#preset", "Creative")
    assert page.input_value("#set-temperature") == "1.1"
    assert page.input_value("#set-top-p") == "0.98"
    assert page.input_value("#set-presence-penalty") == "0.3"
    chat.set_knob("#set-seed", "3")
    chat.send("Write a word.")
    assert chat.replies() == engine_reply(
        engine_page, {"messages": user("Write a word."), **CREATIVE, "seed": 3, "max_tokens": 12})

    page.click("#new-chat")
    page.select_option("#preset", "Precise")
    assert page.input_value("#set-temperature") == "0"
    chat.send("Write a number.")
    assert chat.replies() == engine_reply(
        engine_page, {"messages": user("Write a number."), "temperature": 0, "max_tokens": 12})

    # a preset of one's own
    chat.set_knob("#set-temperature", "0.4")
    chat.set_knob("#set-stop", "THE END")
    page.fill("#preset-name", "Mine")
    page.click("#preset-save")
    chat.set_knob("#set-temperature", "0")

    chat.reload()
    chat.settings()
    assert page.input_value("#set-temperature") == "0"
    chat.conv("Write a word.").locator(".conv-open").click()
    assert page.input_value("#set-temperature") == "1.1"
    assert page.input_value("#set-seed") == "3"
    page.select_option("#preset", "Mine")
    assert page.input_value("#set-temperature") == "0.4"
    assert page.input_value("#set-stop") == "THE END"

    # a value the engine refuses: its typed error is shown on the message, naming the field
    chat.set_knob("#set-top-p", "0")
    chat.send("Again?")
    err = page.locator(".message.assistant.error")
    assert err.get_attribute("data-param") == "top_p"
    assert "top_p" in err.locator(".meta").inner_text()
    assert page.get_attribute("#set-top-p", "aria-invalid") == "true"
    chat.close()


def test_a_grammar_constrains_the_reply_and_the_format_belongs_to_the_conversation(chat: Chat,
                                                                                   engine_page: EnginePage) -> None:
    page = chat.page
    page.click("#structure summary")
    page.select_option("#format", "grammar")
    page.fill("#grammar", 'root ::= "yes" | "no" | "maybe so"')
    page.locator("#grammar").dispatch_event("change")
    chat.send("Is water wet?")
    assert chat.replies()[0] in ("yes", "no", "maybe so")
    assert chat.replies() == engine_reply(engine_page, {
        "messages": user("Is water wet?"), "temperature": 0, "max_tokens": 12,
        "response_format": {"type": "grammar", "grammar": 'root ::= "yes" | "no" | "maybe so"'}})
    page.click("#new-chat")
    page.select_option("#format", "off")
    chat.send("Is fire hot?")
    chat.reload()
    assert page.input_value("#format") == "off"
    chat.conv("Is water wet?").locator(".conv-open").click()
    assert page.input_value("#format") == "grammar"
    assert page.input_value("#grammar") == 'root ::= "yes" | "no" | "maybe so"'
    # a grammar the engine cannot read: its error names the field, on the message
    page.click("#structure summary")
    page.fill("#grammar", "root ::= (")
    page.locator("#grammar").dispatch_event("change")
    chat.send("Again?")
    assert page.get_attribute(".message.assistant.error", "data-param") == "response_format.grammar"


def test_a_follow_up_reuses_the_cached_prefix_and_the_token_view_keeps_logprobs(chat: Chat,
                                                                                engine_page: EnginePage) -> None:
    page = chat.page
    chat.send("What is a tuple?")
    chat.send("And a list?")
    second = page.locator(".message.assistant").nth(1)
    prompt_tokens = int(second.get_attribute("data-prompt-tokens"))
    cached = int(second.get_attribute("data-cached-tokens"))
    assert 0 < cached < prompt_tokens
    assert f"({cached} cached)" in second.locator(".meta").inner_text()
    assert float(second.get_attribute("data-ttft-s")) > 0
    assert "tokens/s" in second.locator(".meta").inner_text()

    chat.settings()
    page.check("#set-token-view")
    page.click("#new-chat")
    chat.send("Name a fruit.")
    msg = page.locator(".message.assistant")
    labels = msg.locator(".tokens .tv-token").evaluate_all("els => els.map((e) => e.getAttribute('aria-label'))")
    reference = engine_page.ok(
        "return (await engine.chat.completions.create(arg)).choices[0].logprobs.content.map((t) => t.token);",
        {"messages": user("Name a fruit."), "temperature": 0, "max_tokens": 12, "logprobs": True, "top_logprobs": 5})
    # each token is labelled with itself as JSON and its probability
    assert [label.rsplit(", ", 1)[0] for label in labels] == [json.dumps(t, ensure_ascii=False) for t in reference]
    assert len(labels) == int(msg.get_attribute("data-completion-tokens"))
    chat.reload()
    tokens = page.locator(".message.assistant .tokens .tv-token")
    assert tokens.count() == len(reference)
    tokens.first.hover()
    assert page.locator(".message.assistant .tv-tooltip li").count() == 5  # the 5 top alternatives, kept


HOSTILE_REPLY = ("**Bold** and `code`.\n\n<img src=x onerror=\"window.hit=1\"> <script>window.hit=2</script>\n\n"
                 "[click](javascript:window.hit=3) ![pic](http://example.com/x.png)\n\n```python\nprint(1)\n```\n")


def test_an_imported_reply_is_drawn_as_markdown_and_runs_and_loads_nothing(chat: Chat, tmp_path: Path) -> None:
    page = chat.page
    doc = {"format": "csi-playground/conversations", "version": 1, "conversations": [{
        "id": "c1", "title": "Hostile", "titleEdited": False, "created": 1, "updated": 2, "system": "",
        "settings": {"temperature": 0}, "active": {},
        "format": {"format": "off", "schema": "", "grammar": "", "pattern": "", "tools": False, "toolChoice": "auto"},
        "messages": [
            {"id": "u", "parent": None, "role": "user", "content": "Show me <b>markup</b>", "created": 1},
            {"id": "a", "parent": "u", "role": "assistant", "content": HOSTILE_REPLY, "created": 2, "finish": "stop"},
        ]}]}
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(doc))
    page.set_input_files("#conv-import", str(path))
    chat.titles_are(["Hostile"])
    body = page.locator(".message.assistant .body")
    assert body.locator("strong").inner_text() == "Bold"
    assert body.locator("pre code").inner_text().strip() == "print(1)"
    assert page.locator("#messages img, #messages script, .message.user b").count() == 0
    assert page.locator("#messages a[href^='javascript']").count() == 0
    assert page.evaluate("window.hit") is None
    assert chat.replies() == [HOSTILE_REPLY]
    page.click(".message.assistant .md-raw-toggle")
    assert body.text_content() == HOSTILE_REPLY
    assert [u for u in chat.requests if "example.com" in u] == []


def test_screenshots_wide_and_phone_light_and_dark(chat: Chat) -> None:
    page = chat.page
    chat.send("What does json.dumps do?")
    page.click(".message.assistant .regenerate")
    chat.settle()
    ARTIFACTS.mkdir(exist_ok=True)
    for width, scheme in ((1280, "light"), (1280, "dark"), (390, "light"), (390, "dark")):
        page.set_viewport_size({"width": width, "height": 844})
        page.emulate_media(color_scheme=scheme)
        chat.settings()
        page.click("#structure summary")
        page.select_option("#format", "grammar")
        assert chat.axe("#panel-chat") == []
        page.click("#structure summary")
        page.screenshot(path=str(ARTIFACTS / f"conversations-settings-{width}-{scheme}.png"))
        page.click("#chat-settings summary")
        if width < 600:
            page.click("#sidebar-toggle")
            page.wait_for_timeout(400)  # the drawer slides in
            assert chat.axe("#sidebar") == []
            page.screenshot(path=str(ARTIFACTS / f"conversations-sidebar-{width}-{scheme}.png"))
            page.locator("body").press("Control+Shift+S")  # the open drawer covers its toggle
            page.wait_for_timeout(400)
        assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
        assert page.locator(".message.assistant").is_visible()
        if width > 600:
            assert chat.axe("#sidebar") == []
        page.screenshot(path=str(ARTIFACTS / f"conversations-{width}-{scheme}.png"))
