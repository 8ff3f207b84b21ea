"""Models on a server in the playground (index.html), driven as a person does against a real llama.cpp
server on 127.0.0.1: the Models panel's Servers form (checked in the form, then by the engine, whose
typed error names the field), the server's model in the picker, a load without a download, a chat
reply equal to the server's own greedy answer (asked directly with `requests`) and marked as served
by it, a prefer-local model's fallback with its reason, and a server that is down: a typed error in
the chat, and the playground serves on from this browser."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from tests.support.browser import LOCAL_PREFIXES, load_axe
from tests.support.llama_server import LlamaServer
from tests.support.paths import ROOT

pytestmark = pytest.mark.browser

MAX_TOKENS = 24
QUESTION = "What is the capital of France?"


class Playground:
    """index.html in a context of its own, with every URL it requested (the worker's fetches too)."""

    def __init__(self, browser: Any, site_url: str, query: str) -> None:
        self.context = browser.new_context()
        self.requests: list[str] = []
        self.context.on("request", lambda r: self.requests.append(r.url))
        self.page = self.context.new_page()
        self.page.set_default_timeout(180_000)
        self.url = site_url + f"index.html?model=tiny-chat&temperature=0&max_tokens={MAX_TOKENS}&{query}#models"
        self.open()

    def open(self, again: bool = False) -> None:
        if again:
            self.page.reload()
        else:
            self.page.goto(self.url)
        self.page.wait_for_selector("body[data-ready='true']")

    def add_server(self, url: str, models: list[tuple[str, str, str]], key: str = "", keep_key: bool = True) -> None:
        """Fill the form (models as (id, name on the server, policy)) and submit it from the keyboard."""
        page = self.page
        page.fill("#server-url", url)
        page.fill("#server-key", key)
        page.set_checked("#server-keep-key", keep_key)
        for i, (model_id, name, policy) in enumerate(models):
            if i:
                page.focus("#server-add-model")
                page.keyboard.press("Enter")
            row = page.locator("#server-models .server-model").nth(i)
            row.locator(".server-model-id").fill(model_id)
            row.locator(".server-model-name").fill(name)
            row.locator(".server-model-policy").select_option(policy)
        page.focus("#server-add")
        page.keyboard.press("Enter")

    def load(self, model: str) -> str:
        """Load `model` from the Models panel's picker; the status once the load ended."""
        page = self.page
        page.click("#tab-models")
        page.check(f"#panel-models li[data-model='{model}'] input[name=models-choice]")
        page.click("#models-load")
        page.wait_for_function("""(m) => { const s = document.querySelector('#models-state');
                                           return ['ready', 'failed'].includes(s.dataset.state)
                                                  && s.textContent.startsWith(m); }""", arg=model)
        return str(page.locator("#models-state").inner_text())

    def ask(self, question: str) -> Any:
        """Send `question` in the chat; the reply's element once it is done."""
        page = self.page
        page.click("#tab-chat")
        done = ".message.assistant[data-done='true']"
        # a question after a failed reply takes the failed question's place (an alternative): count new ids
        before = page.eval_on_selector_all(done, "(ms) => ms.map((m) => m.dataset.id)")
        page.fill("#prompt", question)
        page.press("#prompt", "Enter")
        page.wait_for_function("""(before) => [...document.querySelectorAll(".message.assistant[data-done='true']")]
                                    .some((m) => !before.includes(m.dataset.id))""", arg=before)
        new = page.eval_on_selector_all(done, "(ms) => ms.map((m) => m.dataset.id)")
        (reply,) = [i for i in new if i not in before]
        return page.locator(f".message.assistant[data-id='{reply}']")

    def raw_text(self, reply: Any) -> str:
        """The reply's text as the model wrote it (the Raw view, not the Markdown rendering)."""
        reply.locator(".md-raw-toggle").click()
        return str(reply.locator(".body").text_content())

    def axe(self, selector: str) -> list[dict[str, Any]]:
        """axe-core's serious and critical violations inside `selector`."""
        load_axe(self.page)
        found: list[dict[str, Any]] = self.page.evaluate(
            """async (sel) => (await axe.run(document.querySelector(sel))).violations.map((v) => (
                 {id: v.id, impact: v.impact, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' '))}))""",
            selector)
        return [v for v in found if v["impact"] in ("serious", "critical")]

    def foreign(self) -> list[str]:
        return [u for u in self.requests if not u.startswith(LOCAL_PREFIXES)]


@pytest.fixture
def playground(browser: Any, site_url: str, llama_server_down: str) -> Iterator[Playground]:
    # Hub models come from a mirror nobody answers at: a prefer-local Hub model cannot load here
    p = Playground(browser, site_url, f"hub={llama_server_down}/")
    yield p
    p.context.close()


def server_answer(server: LlamaServer, question: str) -> str:
    """The server's greedy answer to the request the playground sends (its default settings, temperature 0)."""
    reply = requests.post(f"{server.url}/v1/chat/completions", timeout=120, json={
        "model": server.model, "messages": [{"role": "user", "content": question}],
        "temperature": 0, "top_p": 0.95, "max_tokens": MAX_TOKENS})
    reply.raise_for_status()
    text: str = reply.json()["choices"][0]["message"]["content"]
    return text


def test_a_server_added_in_the_form_serves_the_chat_with_its_own_greedy_answer(
        playground: Playground, llama_server: LlamaServer) -> None:
    page = playground.page
    base = llama_server.url + "/v1"
    assert page.locator("#servers-list .server").count() == 0

    # the form's own check: no server is added, the field is marked
    playground.add_server("ftp://127.0.0.1/v1", [("smollm2-remote", "", "remote")])
    assert "is not an http or https URL" in page.locator("#server-status").inner_text()
    assert page.locator("#server-url").get_attribute("aria-invalid") == "true"
    assert page.locator("#servers-list .server").count() == 0
    # the engine's check: its typed error, naming the field
    playground.add_server(base + "?key=1", [("smollm2-remote", "", "remote")])
    page.wait_for_function("() => document.querySelector('#server-status').dataset.param !== undefined")
    status = page.locator("#server-status")
    assert status.get_attribute("data-param") == "remotes[0].base_url"
    assert status.inner_text().startswith("InvalidInputError (field remotes[0].base_url): ")
    assert page.locator("#server-url").get_attribute("aria-invalid") == "true"
    assert page.locator("#servers-list .server").count() == 0

    playground.add_server(base, [("smollm2-remote", llama_server.model, "remote")], key="test-key", keep_key=False)
    page.wait_for_selector(f"#servers-list .server[data-url='{base}']")
    assert page.locator("#server-status").inner_text().startswith(f"Added {base} with smollm2-remote")
    assert page.locator("#servers-list .server .server-key").inner_text() == "API key for this tab only"
    kept = json.loads(page.evaluate("localStorage.getItem('csi-web.servers')"))
    assert kept == [{"baseURL": base, "apiKey": "", "keepKey": False,
                     "models": [{"id": "smollm2-remote", "policy": "remote", "serverModel": llama_server.model}]}]
    choice = page.locator("#models-remote li[data-model='smollm2-remote']")
    assert choice.locator(".source").first.inner_text() == "server"
    assert choice.locator(".url").inner_text() == base
    assert playground.axe("#panel-models") == []
    (ROOT / "test-results").mkdir(exist_ok=True)
    page.locator("#panel-models").screenshot(path=str(ROOT / "test-results" / "playground-servers.png"))

    # chosen: nothing to download; loaded: nothing downloaded, the status says where it runs
    choice.locator("input").check()
    page.wait_for_function("() => document.querySelector('#models-plan').dataset.bytes === '0'")
    assert page.locator("#models-plan").inner_text() == f"smollm2-remote runs on {base}: nothing to download."
    seen = len(playground.requests)
    assert playground.load("smollm2-remote") == f"smollm2-remote is ready on {base} (nothing downloaded)."
    assert page.locator("#models-state").get_attribute("data-remote") == base
    assert [u for u in playground.requests[seen:] if "/models/" in u or "/resolve/" in u] == []
    assert page.locator("#status").inner_text() == f"smollm2-remote is ready on {base} (nothing downloaded)."

    reply = playground.ask(QUESTION)
    assert reply.get_attribute("data-served-by") == "remote"
    assert reply.get_attribute("data-server") == base
    assert reply.locator(".served").inner_text() == f"served by {base}"
    # llama-cpp-python's stream reports no usage: the stats do not claim an empty prompt
    assert "prompt size not reported" in reply.locator(".meta").inner_text()
    assert playground.raw_text(reply) == server_answer(llama_server, QUESTION)

    # kept across a reload, the key only as long as the tab lived
    playground.open(again=True)
    page.click("#tab-models")
    page.wait_for_selector(f"#servers-list .server[data-url='{base}']")
    assert page.locator("#servers-list .server .server-key").inner_text() == "API key not kept"
    assert page.locator("#models-remote li[data-model='smollm2-remote']").count() == 1
    assert playground.foreign() == []


def test_a_fallback_says_why_and_a_server_that_is_down_leaves_the_playground_working(
        playground: Playground, llama_server: LlamaServer, llama_server_down: str) -> None:
    page = playground.page
    base, down = llama_server.url + "/v1", llama_server_down + "/v1"
    playground.add_server(base, [("smollm2-remote", llama_server.model, "remote"),
                                 ("org/absent-model", llama_server.model, "prefer-local")])
    page.wait_for_selector(f"#servers-list .server[data-url='{base}']")
    fallback = page.locator("#models-remote li[data-model='org/absent-model']")
    assert fallback.get_attribute("data-policy") == "prefer-local"
    playground.add_server(down, [("gone", "", "remote")])
    page.wait_for_selector(f"#servers-list .server[data-url='{down}']")
    assert page.locator("#servers-list .server .server-key").first.inner_text() == "no API key"

    # the Hub mirror is down: the local load fails, the server serves it, and the status says why
    state = playground.load("org/absent-model")
    assert state.startswith(f"org/absent-model is ready on {base}: it could not load in this browser "
                            "(ModelLoadError: could not load model 'org/absent-model': ") and state.endswith(").")
    reply = playground.ask(QUESTION)
    assert reply.get_attribute("data-served-by") == "remote"
    assert playground.raw_text(reply) == server_answer(llama_server, QUESTION)

    # a server nobody listens at: the model loads (nothing to fetch), its reply is the typed error
    assert playground.load("gone") == f"gone is ready on {down} (nothing downloaded)."
    failed = playground.ask("Hello?")
    assert "error" in (failed.get_attribute("class") or "")
    text = failed.locator(".body").inner_text()
    assert text.startswith("ServerUnavailableError: ") and llama_server_down in text

    # the playground works on: a built-in model, in this browser
    assert playground.load("tiny-chat") == "tiny-chat is ready in this browser (wasm)."
    local = playground.ask("Hello again")
    assert local.get_attribute("data-served-by") == "local"
    assert local.locator(".served").inner_text() == "served in this browser"
    page.locator("#messages").screenshot(path=str(ROOT / "test-results" / "playground-served-by.png"))

    # removed from the keyboard: gone from the list, the picker and the storage
    page.click("#tab-models")
    page.focus(f"#servers-list .server[data-url='{down}'] .server-remove")
    page.keyboard.press("Enter")
    page.wait_for_function("(u) => !document.querySelector(`#servers-list .server[data-url='${u}']`)", arg=down)
    assert page.locator("#models-remote li[data-model='gone']").count() == 0
    kept = json.loads(page.evaluate("localStorage.getItem('csi-web.servers')"))
    assert [s["baseURL"] for s in kept] == [base]
    assert playground.foreign() == []
