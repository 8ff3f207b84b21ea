"""The skill studio (the Skills panel) as a user drives it: a skill typed into the code editor,
registered with its errors marked on their line, run from the form its input schema makes, its
output shown as text, stopped; the example skills one click away."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from csi.backends.local_host import LocalHost
from csi.runtime import build_runtime
from csi.testing import ScriptedBackend
from tests.support.aio import run_async
from tests.support.browser import LOCAL_PREFIXES, load_axe, tracked_context
from tests.support.paths import ROOT
from tests.support.skill_sources import RAISES
from tests.support.skills import SkillsClient

pytestmark = pytest.mark.browser
RESULTS = ROOT / "test-results"

FORM_TOUR = '''from enum import Enum

from pydantic import BaseModel, Field

from pharia_skill import Csi, skill


class Size(str, Enum):
    small = "small"
    large = "large"


class Address(BaseModel):
    city: str
    zip_code: int


class Input(BaseModel):
    title: str
    ratio: float = 1.5
    count: int = Field(default=2, ge=0)
    loud: bool = False
    size: Size
    tags: list[str] = []
    address: Address
    extra: dict[str, int] = {}


class Output(BaseModel):
    banner: str
    total: float
    tags: list[str]
    where: str
    extra_sum: int


@skill
def form_tour(csi: Csi, input: Input) -> Output:
    """Every kind of field the studio's form makes."""
    banner = (input.title.upper() if input.loud else input.title) + " [" + input.size.value + "]"
    return Output(banner=banner, total=input.ratio * input.count, tags=sorted(input.tags, reverse=True),
                  where=f"{input.address.zip_code} {input.address.city}", extra_sum=sum(input.extra.values()))
'''
# what the test types into the form below, as the skill receives it
FORM_INPUT = {"title": "Owl <b>", "ratio": 2.5, "count": 4, "loud": True, "size": "large", "tags": ["beta", "alpha"],
              "address": {"city": "Oslo", "zip_code": 150}, "extra": {"a": 2, "b": 5}}

SYNTAX = '''from pydantic import BaseModel

from pharia_skill import Csi, skill

def broken(csi: Csi, input: BaseModel) -> int
    return 1
'''
MISSING_IMPORT = '''from pydantic import BaseModel

from pharia_skill import Csi, skill
import json
import no_such_module_anywhere
'''
HOSTILE = '''from pydantic import BaseModel

from pharia_skill import Csi, skill


class Input(BaseModel):
    fail: bool = False


class Output(BaseModel):
    html: str
    script: str


@skill
def hostile(csi: Csi, input: Input) -> Output:
    """<img src=x onerror=alert(3)> a description with markup"""
    if input.fail:
        raise ValueError("<img src=y onerror=alert(4)><script>alert(5)</script>")
    return Output(html="<img src=x onerror=alert(1)>", script="<script>alert(2)</script>")
'''
SPIN = '''from pydantic import BaseModel

from pharia_skill import Csi, skill


class Input(BaseModel):
    start: int = 0


class Output(BaseModel):
    n: int


@skill
def spin(csi: Csi, input: Input) -> Output:
    n = input.start
    while True:
        n += 1
'''


def open_studio(browser: Any, site_url: str, width: int) -> tuple[Any, list[str], list[str]]:
    """The playground with tiny-chat, on its Skills panel; every request and dialog it makes."""
    context, requests = tracked_context(browser)
    dialogs: list[str] = []
    page = context.new_page()
    page.set_viewport_size({"width": width, "height": 900})
    page.set_default_timeout(180_000)
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(site_url + "index.html?model=tiny-chat&temperature=0#skills")
    page.wait_for_selector("body[data-ready='true']")
    page.wait_for_selector("#skill-register:enabled")
    return page, requests, dialogs


@pytest.fixture(scope="module")
def studio(browser: Any, site_url: str) -> Iterator[tuple[Any, list[str], list[str]]]:
    page, requests, dialogs = open_studio(browser, site_url, 1280)
    yield page, requests, dialogs
    page.context.close()


def type_skill(page: Any, name: str, source: str) -> None:
    """Replace the editor's text as a user would, and name the skill."""
    page.fill("#skill-name", name)
    page.click("#skill-editor .cm-content")
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(source)
    shown = page.eval_on_selector_all("#skill-editor .cm-line", "ls => ls.map((l) => l.textContent)")
    assert shown == source.split("\n")


def register(page: Any, expect: str) -> None:
    """Ctrl+S in the editor; wait for the status to say ok or error."""
    page.click("#skill-editor .cm-content")
    page.keyboard.press("Control+s")
    page.wait_for_selector(f"#skill-status[data-state='{expect}']")


def run_and_wait(page: Any, expect: str) -> str:
    page.click("#skill-run")
    page.wait_for_selector(f"#skill-output[data-state='{expect}']")
    return page.inner_text("#skill-output")


def marked_lines(page: Any) -> list[str]:
    """The text of every editor line that carries an error diagnostic."""
    page.wait_for_selector("#skill-editor .cm-lintRange-error")
    return page.eval_on_selector_all(
        "#skill-editor .cm-line",
        "ls => ls.filter((l) => l.querySelector('.cm-lintRange-error')).map((l) => l.textContent)")


def axe_violations(page: Any) -> list[str]:
    """axe-core's WCAG 2 A/AA checks (contrast among them) over the studio, in the page's current theme."""
    load_axe(page)
    found = page.evaluate("""async () => (await axe.run('#panel-skills', {runOnly: ['wcag2a', 'wcag2aa']}))
        .violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)""")
    return list(found)


def page_engine_run(page: Any, name: str, input: Any) -> Any:
    """engine.skills.run in the same page, on an engine of the test's own (the skills are shared
    through the page's IndexedDB)."""
    out = page.evaluate("""async ([name, input]) => {
        if (!window.testEngine) {
          const { CreateWebWorkerEngine, trustedScriptURL } = await import('./web/engine.js');
          const worker = new Worker(trustedScriptURL('./worker/worker.js'), { type: 'module' });
          window.testEngine = await CreateWebWorkerEngine(worker, 'tiny-chat');
        }
        try { return { ok: true, value: await window.testEngine.skills.run(name, input) }; }
        catch (e) { return { ok: false, error: `${e.name}: ${e.message}` }; }
      }""", [name, input])
    assert out["ok"], out
    return out["value"]


def cpython_run(name: str, source: str, input: Any) -> Any:
    """The same source registered and run by the registry in CPython (the skill calls no model)."""
    skills = SkillsClient(build_runtime(ScriptedBackend([b"<eos>", b"a"], [1]), LocalHost()).skills)
    run_async(skills.register(name, source))
    return run_async(skills.run(name, input))


def test_a_typed_skill_registers_and_its_form_runs_it_like_the_engine_and_cpython(studio):
    page, requests, dialogs = studio
    type_skill(page, "form-tour", FORM_TOUR)
    register(page, "ok")
    assert page.inner_text("#skill-description") == "Every kind of field the studio's form makes."
    fields = page.eval_on_selector_all("#skill-fields [data-field]", "ns => ns.map((n) => n.dataset.field)")
    assert fields == ["title", "ratio", "count", "loud", "size", "tags", "address", "address.city",
                      "address.zip_code", "extra"]
    assert page.get_attribute("#skill-in-ratio", "type") == "number"
    assert page.input_value("#skill-in-ratio") == "1.5" and page.input_value("#skill-in-count") == "2"
    assert page.get_attribute("#skill-in-loud", "type") == "checkbox"
    assert page.eval_on_selector_all("#skill-in-size option", "os => os.map((o) => o.textContent)")[-2:] == [
        "small", "large"]
    assert page.locator("fieldset[data-field='address'] #skill-in-address-city").count() == 1
    assert page.get_attribute("#skill-in-address-zip_code", "type") == "number"
    assert "json" in (page.get_attribute("#skill-in-extra", "class") or "")

    page.fill("#skill-in-title", "Owl <b>")
    page.fill("#skill-in-ratio", "2.5")
    page.fill("#skill-in-count", "4")
    page.check("#skill-in-loud")
    page.select_option("#skill-in-size", label="large")
    for tag in ["beta", "alpha"]:
        page.click("[data-field='tags'] button.add")
        page.keyboard.insert_text(tag)
    page.fill("#skill-in-address-city", "Oslo")
    page.fill("#skill-in-address-zip_code", "150")
    page.fill("#skill-in-extra", '{"a": 2, "b": 5}')
    shown = json.loads(run_and_wait(page, "ok"))
    assert shown == {"banner": "OWL <B> [large]", "total": 10.0, "tags": ["beta", "alpha"], "where": "150 Oslo",
                     "extra_sum": 7}
    assert shown == page_engine_run(page, "form-tour", FORM_INPUT)
    assert shown == cpython_run("form-tour", FORM_TOUR, FORM_INPUT)

    # the raw JSON fallback: opened, it holds the form's input; edited, it is what runs
    page.click("#skill-raw summary")
    page.wait_for_function("() => document.querySelector('#skill-json').value !== ''")  # filled on `toggle`
    assert json.loads(page.input_value("#skill-json")) == FORM_INPUT
    page.fill("#skill-json", json.dumps({**FORM_INPUT, "loud": False, "tags": ["x"]}))
    shown = json.loads(run_and_wait(page, "ok"))
    assert shown["banner"] == "Owl <b> [large]" and shown["tags"] == ["x"]
    page.click("#skill-raw summary")

    # an input the skill refuses: the engine's error, the field marked
    page.fill("#skill-in-count", "-1")
    error = run_and_wait(page, "error")
    assert error.startswith("InvalidInputError") and "count" in error
    assert page.get_attribute("[data-field='count']", "aria-invalid") == "true"
    page.set_viewport_size({"width": 1280, "height": 1500})
    page.eval_on_selector("#panel-skills", "p => { p.scrollTop = 0; }")
    page.screenshot(path=str(RESULTS / "skill_studio.png"))
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        assert axe_violations(page) == [], scheme
    page.screenshot(path=str(RESULTS / "skill_studio_dark.png"))
    page.emulate_media(color_scheme="light")
    page.set_viewport_size({"width": 1280, "height": 900})
    assert dialogs == [] and [u for u in requests if not u.startswith(LOCAL_PREFIXES)] == []


def test_syntax_and_import_errors_are_marked_on_their_line(studio):
    page, _, _ = studio
    type_skill(page, "broken", SYNTAX)
    register(page, "error")
    assert marked_lines(page) == ["def broken(csi: Csi, input: BaseModel) -> int"]
    assert page.inner_text("#skill-status").startswith("Line 5: SyntaxError")
    assert page.locator("#skill-editor .cm-lint-marker-error").count() == 1  # and in the gutter

    type_skill(page, "broken", MISSING_IMPORT)
    register(page, "error")
    assert marked_lines(page) == ["import no_such_module_anywhere"]
    assert "ModuleNotFoundError" in page.inner_text("#skill-status")


def test_a_raising_skill_shows_its_traceback_and_marks_the_line(studio):
    page, _, _ = studio
    type_skill(page, "divide", RAISES)
    register(page, "ok")
    page.fill("#skill-in-n", "0")
    page.click("#skill-editor .cm-content")
    page.keyboard.press("Control+Enter")  # runs from the editor
    page.wait_for_selector("#skill-output[data-state='error']")
    error = page.inner_text("#skill-output")
    assert "ZeroDivisionError" in error and "Traceback" in error
    assert marked_lines(page) == ["    return 10 // n"]
    page.fill("#skill-in-n", "5")
    assert json.loads(run_and_wait(page, "ok")) == {"quotient": 2}


def test_hostile_output_and_errors_are_shown_as_text(studio):
    page, requests, dialogs = studio
    type_skill(page, "hostile", HOSTILE)
    register(page, "ok")
    shown = json.loads(run_and_wait(page, "ok"))
    assert shown == {"html": "<img src=x onerror=alert(1)>", "script": "<script>alert(2)</script>"}
    assert page.inner_text("#skill-description").startswith("<img src=x onerror=alert(3)>")
    page.check("#skill-in-fail")
    error = run_and_wait(page, "error")
    assert "<img src=y onerror=alert(4)><script>alert(5)</script>" in error
    page.wait_for_timeout(500)
    assert page.locator("#panel-skills img, #panel-skills script").count() == 0
    assert dialogs == []
    assert not [u for u in requests if u.endswith(("/x", "/y"))]
    assert [u for u in requests if not u.startswith(LOCAL_PREFIXES)] == []


def test_stop_interrupts_a_running_skill(studio):
    page, _, _ = studio
    type_skill(page, "spin", SPIN)
    register(page, "ok")
    page.click("#skill-run")
    page.wait_for_selector("#skill-output[data-state='running']")
    assert page.is_enabled("#skill-stop") and page.is_disabled("#skill-run")
    page.wait_for_timeout(500)
    page.click("#skill-stop")
    page.wait_for_selector("#skill-output[data-state='error']", timeout=15_000)
    assert "interruptGenerate() was called" in page.inner_text("#skill-output")
    assert page.is_disabled("#skill-stop") and page.is_enabled("#skill-run")


def test_an_example_loads_in_one_click_and_runs_at_phone_width(browser, site_url):
    page, requests, dialogs = open_studio(browser, site_url, 390)
    page.click("button[data-example='summarize']")
    page.wait_for_selector("#skill-status[data-state='ok']")
    assert page.input_value("#skill-name") == "my-summarize"
    source = (ROOT / "py/csi/skills/examples/summarize.py").read_text()
    assert page.eval_on_selector_all("#skill-editor .cm-line", "ls => ls.map((l) => l.textContent)") == \
        source.split("\n")
    fields = page.eval_on_selector_all("#skill-fields [data-field]", "ns => ns.map((n) => n.dataset.field)")
    assert fields == ["text", "model", "chunk_tokens", "summary_tokens"]
    assert page.input_value("#skill-in-model") == "smollm2-135m-instruct"  # the schema's default
    text = "The json module encodes Python objects as JSON text. It decodes JSON text back into objects."
    page.fill("#skill-in-text", text)
    page.fill("#skill-in-model", "tiny-chat")
    page.fill("#skill-in-summary_tokens", "8")
    shown = json.loads(run_and_wait(page, "ok"))
    assert shown["chunks"] == 1 and shown["summary"]
    # the built-in example, run by the engine on the same input (greedy: the same words)
    same = {"text": text, "model": "tiny-chat", "chunk_tokens": 128, "summary_tokens": 8}
    assert shown == page_engine_run(page, "summarize", same)

    # usable at 390 px: nothing wider than the screen
    widths = page.evaluate("""() => [document.documentElement.scrollWidth,
        ...['#skill-editor', '#skill-run-form', '#skill-output', '#skill-register'].map(
          (s) => document.querySelector(s).getBoundingClientRect().right)]""")
    assert max(widths) <= 390, widths
    page.eval_on_selector("#panel-skills", "p => { p.scrollTop = 0; }")
    page.screenshot(path=str(RESULTS / "skill_studio_390.png"))
    assert dialogs == [] and [u for u in requests if not u.startswith(LOCAL_PREFIXES)] == []
    page.context.close()


TOOLS_AND_ALIAS = '''from pydantic import BaseModel

from pharia_skill import ChatParams, Csi, Message, skill


class Input(BaseModel):
    a: int = 2
    b: int = 3


class Output(BaseModel):
    tools: list[str]
    sum: str
    reply: str


@skill
def kernel_style(csi: Csi, input: Input) -> Output:
    """Lists the page's tools, calls one, and chats with a Kernel model name."""
    total = csi.invoke_tool("add", a=input.a, b=input.b).text()
    reply = csi.chat("llama-3.1-8b-instruct", [Message.user("Say hi.")], ChatParams(max_tokens=4, temperature=0.0))
    return Output(tools=[t.name for t in csi.list_tools()], sum=total, reply=reply.message.content)
'''


def test_studio_skills_see_the_demo_tools_and_kernel_model_names_and_streams_show_as_they_come(studio):
    page, requests, dialogs = studio
    type_skill(page, "kernel-style", TOOLS_AND_ALIAS)
    register(page, "ok")
    shown = json.loads(run_and_wait(page, "ok"))
    assert shown["tools"] == ["add", "get_time", "word_count"] and json.loads(shown["sum"]) == {"sum": 5}
    assert shown["reply"]  # "llama-3.1-8b-instruct" is the loaded chat model in the studio
    page.click("button[data-example='stream-answer']")
    page.wait_for_selector("#skill-status[data-state='ok']")
    page.fill("#skill-in-question", "What is JSON?")
    page.fill("#skill-in-model", "tiny-chat")
    page.fill("#skill-in-max_tokens", "24")
    page.click("#skill-run")
    page.wait_for_function("() => document.querySelector('#skill-output').textContent.length > 0 && "
                           "document.querySelector('#skill-output').dataset.state === 'running'")
    page.wait_for_selector("#skill-output[data-state='ok']")
    text = page.inner_text("#skill-output")
    reply, payload = text.rsplit("\n\n", 1)
    done = json.loads(payload)
    assert reply and done["finish_reason"] in ("stop", "length") and 0 < done["completion_tokens"] <= 24
    assert dialogs == [] and [u for u in requests if not u.startswith(LOCAL_PREFIXES)] == []
