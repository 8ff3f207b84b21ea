"""Skills in the worker: registered from the page, run with the CSI, kept in IndexedDB."""

from __future__ import annotations

import pytest

from conftest import boot_engine, open_engine_page
from skill_sources import ECHO, IMPORT_ERROR, RAISES, SYNTAX_ERROR, Echo

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def skills_page(browser, site_url):
    """A page of its own (its own IndexedDB), with tiny-chat only."""
    ep = open_engine_page(browser, site_url, ["tiny-chat"])
    yield ep
    ep.page.context.close()


def test_register_metadata_run_errors_and_survive_a_reload(skills_page, site_url):
    ep = skills_page
    meta = ep.ok("return await engine.skills.register(arg);", {"name": "echo", "source": ECHO})
    assert meta["input_schema"] == Echo.Input.model_json_schema()
    assert meta["output_schema"] == Echo.Output.model_json_schema()
    assert meta["description"] == "Repeat the topic `times` times."
    assert ep.ok("return await engine.skills.metadata('echo');")["input_schema"] == Echo.Input.model_json_schema()
    assert ep.ok("return await engine.skills.run('echo', arg);", {"topic": "owl", "times": 3}) == {
        "echoed": ["owl"] * 3}

    bad = ep.call("return await engine.skills.run('echo', arg);", {"topic": 5})
    assert bad["error"]["name"] == "InvalidInputError" and bad["error"]["param"] == "input.topic"

    ep.ok("return await engine.skills.register(arg);", {"name": "divide", "source": RAISES})
    boom = ep.call("return await engine.skills.run('divide', {n: 0});")
    assert boom["error"]["name"] == "InternalError"
    assert "ZeroDivisionError" in boom["error"]["message"] and "return 10 // n" in boom["error"]["message"]

    for source, line in [(SYNTAX_ERROR, 3), (IMPORT_ERROR, 3)]:
        err = ep.call("return await engine.skills.register(arg);", {"name": "broken", "source": source})
        assert err["error"]["name"] == "InvalidInputError" and err["error"]["param"] == "source"
        assert f"line {line}" in err["error"]["message"]
    missing = ep.call("return await engine.skills.run('nope', {});")
    assert missing["error"]["name"] == "InvalidInputError" and missing["error"]["param"] == "name"

    # a new page and worker over the same browser profile: the skills are still there
    boot_engine(ep.page, site_url, ["tiny-chat"])
    names = {s["name"]: s for s in ep.ok("return await engine.skills.list();")}
    assert {"echo", "divide", "summarize", "reply-in-language", "language-sections"} <= set(names)
    assert "broken" not in names and names["summarize"]["builtin"] and not names["echo"]["builtin"]
    assert ep.ok("return await engine.skills.run('echo', {topic: 'again'});") == {"echoed": ["again"]}

    ep.ok("await engine.skills.remove('divide');")
    boot_engine(ep.page, site_url, ["tiny-chat"])
    assert "divide" not in {s["name"] for s in ep.ok("return await engine.skills.list();")}
    assert ep.foreign_requests() == []
