"""The packages skills import, in the worker: loaded from the site's wheels/packages/ when a skill
first imports them (not at boot), each wheel fetched once, giving what CPython's builds give; numpy
refused when the skill is registered; and, through the service worker, available offline once used."""

from __future__ import annotations

import json
import time
from typing import Any

import jinja2
import markupsafe
import pytest
import yaml

from tests.browser.test_browser_offline import OwnSite, controlled, open_page, visit
from tests.browser.test_browser_offline import own_site as own_site  # noqa: F401 - the fixture
from tests.support.browser import boot_engine, open_engine_page
from tests.support.paths import DIST
from tests.support.skill_sources import ECHO

pytestmark = pytest.mark.browser

TEMPLATE = "<ul>{% for item in items %}<li title='{{ item }}'>{{ item | upper }}</li>{% endfor %}</ul>{{ note }}"
ITEMS = ["<script>alert('x')</script>", "Ann & \"Bo\"", "é😀<>", ""]

JINJA = '''
import jinja2
import markupsafe
from pydantic import BaseModel

from pharia_skill import Csi, skill


class Input(BaseModel):
    template: str
    items: list[str]


class Output(BaseModel):
    html: str
    escape: str


@skill
def render(csi: Csi, input: Input) -> Output:
    """Render a template, HTML-escaped."""
    env = jinja2.Environment(autoescape=True)
    html = env.from_string(input.template).render(items=input.items, note=markupsafe.Markup("<hr>"))
    return Output(html=html, escape=markupsafe._escape_inner.__module__)
'''

# yaml and jinja2 (already loaded by then) together
YAML = '''
from pydantic import BaseModel

from pharia_skill import Csi, skill


class Input(BaseModel):
    doc: str


class Output(BaseModel):
    data: str
    dumped: str
    listing: str


@skill
def yaml_tour(csi: Csi, input: Input) -> Output:
    """Read YAML, write it back, list it with a template."""
    import jinja2
    import yaml

    data = yaml.safe_load(input.doc)
    listing = jinja2.Template("{% for k, v in data | dictsort %}{{ k }}={{ v }};{% endfor %}").render(data=data)
    return Output(data=repr(data), dumped=yaml.safe_dump(data, sort_keys=True), listing=listing)
'''
DOC = "name: csi-web\nitems: [1, 2.5, yes, ~]\nwhen: 2026-11-25\nnested: {a: {b: [x, y]}}\ntext: |\n  two\n  lines\n"

# The SDK's types, and fastjsonschema's verdicts: the same code runs in the skill and here
FACTS = '''
def facts():
    import fastjsonschema
    import pharia_skill
    from pharia_skill import ChatParams, Message

    validate = fastjsonschema.compile({"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}},
                                       "required": ["n"], "additionalProperties": False})
    verdicts = []
    for value in [{"n": 2}, {"n": 0}, {}, {"n": 1, "x": 1}, [], {"n": "1"}]:
        try:
            verdicts.append(repr(validate(value)))
        except fastjsonschema.JsonSchemaException as exc:
            verdicts.append(exc.message)
    return {"sdk": sorted(pharia_skill.__all__), "message": repr(Message.user("hi")),
            "params": repr(ChatParams(max_tokens=5, temperature=0.0)), "verdicts": verdicts}
'''
PHARIA = FACTS + '''
import json

from pydantic import BaseModel

from pharia_skill import Csi, skill


class Input(BaseModel):
    pass


class Output(BaseModel):
    facts: str


@skill
def sdk_facts(csi: Csi, input: Input) -> Output:
    """What the SDK and fastjsonschema say."""
    return Output(facts=json.dumps(facts()))
'''

NUMPY = '''
from pydantic import BaseModel

from pharia_skill import Csi, skill


class Input(BaseModel):
    n: int


@skill
def mean(csi: Csi, input: Input) -> float:
    """A mean."""
    import numpy as np
    return float(np.mean(np.arange(input.n)))
'''

REGISTER = "return await engine.skills.register(arg);"


def fetched(requests: list[str], since: int = 0) -> list[str]:
    """The files of wheels/packages/ requested (after the first ``since`` requests)."""
    return [u.split("/wheels/packages/")[1] for u in requests[since:] if "/wheels/packages/" in u]


@pytest.fixture(scope="module")
def page(browser: Any, site_url: str) -> Any:
    ep = open_engine_page(browser, site_url, ["tiny-chat"])
    yield ep
    ep.page.context.close()


def test_packages_load_when_a_skill_imports_them_once_each_and_render_as_in_cpython(page: Any,
                                                                                    site_url: str) -> None:
    assert fetched(page.requests) == []  # not at boot
    page.ok(REGISTER, {"name": "echo", "source": ECHO})
    sdk = "pharia_skill-0.20.0-py3-none-any.whl"
    assert sorted(fetched(page.requests)) == ["index.json", sdk]  # the SDK only, once skills are used

    # two skills that import jinja2, registered at once: one load, which both wait for
    metas = page.ok("return await Promise.all(arg.map((s) => engine.skills.register(s)));",
                    [{"name": "render", "source": JINJA}, {"name": "render-2", "source": JINJA}])
    assert [m["name"] for m in metas] == ["render", "render-2"]
    assert sorted(fetched(page.requests)) == ["index.json", "jinja2-3.1.6-py3-none-any.whl",
                                              "markupsafe-3.0.3-py3-none-any.whl", sdk]
    out = page.ok("return await engine.skills.run('render', arg);", {"template": TEMPLATE, "items": ITEMS})
    want = jinja2.Environment(autoescape=True).from_string(TEMPLATE).render(items=ITEMS, note=markupsafe.Markup("<hr>"))
    assert out == {"html": want, "escape": "markupsafe._native"}  # markupsafe without its C speedups
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in out["html"]

    page.ok(REGISTER, {"name": "yaml-tour", "source": YAML})
    assert sorted(fetched(page.requests)) == ["index.json", "jinja2-3.1.6-py3-none-any.whl",
                                              "markupsafe-3.0.3-py3-none-any.whl", sdk,
                                              "pyyaml-6.0.3-py3-none-any.whl"]
    data = yaml.safe_load(DOC)
    listing = jinja2.Template("{% for k, v in data | dictsort %}{{ k }}={{ v }};{% endfor %}").render(data=data)
    assert page.ok("return await engine.skills.run('yaml-tour', arg);", {"doc": DOC}) == {
        "data": repr(data), "dumped": yaml.safe_dump(data, sort_keys=True), "listing": listing}

    page.ok(REGISTER, {"name": "sdk-facts", "source": PHARIA})
    namespace: dict[str, Any] = {}
    exec(FACTS, namespace)  # CPython's pharia-skill and fastjsonschema, the same versions
    got = json.loads(page.ok("return await engine.skills.run('sdk-facts', {});")["facts"])
    assert got == namespace["facts"]()
    assert "ChatParams" in got["sdk"] and got["verdicts"][0] == "{'n': 2}" and len(set(got["verdicts"])) == 6
    index = json.loads((DIST / "wheels" / "packages" / "index.json").read_text())
    assert sorted(fetched(page.requests)) == sorted({"index.json"} | {w for ws in index.values() for w in ws})
    assert page.foreign_requests() == []


def test_a_skill_importing_numpy_is_refused_naming_it(page: Any) -> None:
    before = len(page.requests)
    err = page.call(REGISTER, {"name": "mean", "source": NUMPY})["error"]
    assert err["name"] == "InvalidInputError" and err["param"] == "source"
    line = NUMPY.splitlines().index("    import numpy as np") + 1
    assert err["message"].startswith(f"line {line}: ModuleNotFoundError: the skill imports 'numpy', which csi-web does "
                                     "not serve (it has no build for Pyodide 314")
    assert "jinja2" in err["message"] and "yaml" in err["message"]
    assert "mean" not in {s["name"] for s in page.ok("return await engine.skills.list();")}
    assert fetched(page.requests, before) == []


def test_a_new_worker_loads_a_stored_skills_packages_when_skills_are_first_used(page: Any, site_url: str) -> None:
    """(after the first test: the skills it registered are stored in this page's IndexedDB)"""
    before = len(page.requests)
    boot_engine(page.page, site_url, ["tiny-chat"])
    assert fetched(page.requests, before) == []  # booting loads none
    listed = {s["name"]: s for s in page.ok("return await engine.skills.list();")}
    assert listed["render"]["error"] is None and listed["yaml-tour"]["error"] is None
    assert "jinja2-3.1.6-py3-none-any.whl" in fetched(page.requests, before)
    out = page.ok("return await engine.skills.run('render', arg);", {"template": "{{ items[0] }}", "items": ["<&>"]})
    assert out["html"] == "&lt;&amp;&gt;"


def test_packages_used_once_online_load_offline(browser: Any, own_site: OwnSite) -> None:  # noqa: F811
    context, page, requests = open_page(browser)
    visit(page, own_site.url + "index.html?model=tiny-chat")
    version = controlled(page)
    assert not [p for p in own_site.paths if p.startswith("/wheels/packages/") and p.endswith(".whl")]  # lazily

    boot_engine(page, own_site.url, ["tiny-chat"])  # a page the service worker controls, with an engine
    assert page.evaluate("navigator.serviceWorker.controller !== null")
    register = page.evaluate("async (s) => (await engine.skills.register(s)).name", {"name": "render", "source": JINJA})
    assert register == "render"
    run = "async (arg) => await engine.skills.run('render', arg)"
    online = page.evaluate(run, {"template": TEMPLATE, "items": ITEMS})
    kept = """async (cacheName) => (await Promise.all(['jinja2-3.1.6', 'markupsafe-3.0.3'].map(
                (w) => caches.match(`/wheels/packages/${w}-py3-none-any.whl`, {cacheName})))).every(Boolean)"""
    deadline = time.monotonic() + 30
    while not page.evaluate(kept, f"csi-site-{version}"):  # the service worker stores them once fetched
        assert time.monotonic() < deadline, "the wheels a skill used were not kept for offline use"
        time.sleep(0.2)

    own_site.stop()
    context.set_offline(True)
    failed: list[str] = []
    context.on("requestfailed", lambda r: failed.append(r.url))
    boot_engine(page, own_site.url, ["tiny-chat"])
    assert page.evaluate(run, {"template": TEMPLATE, "items": ITEMS}) == online
    assert failed == []
    assert [u for u in requests if not u.startswith(("http://127.0.0.1:", "blob:", "data:"))] == []
    context.close()
