"""Skills in the worker: registered from the page, run with the CSI, kept in IndexedDB."""

from __future__ import annotations

import pytest

from csi.local import local_csi
from csi.skills.examples import search_answer
from tests.support.browser import boot_engine, open_engine_page
from tests.support.faces import index as index_face
from tests.support.paths import DIST
from tests.support.skill_sources import ECHO, IMPORT_ERROR, RAISES, SEARCH_DOCS, SYNTAX_ERROR, Echo

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
    assert boom["error"]["name"] == "SkillError"
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


WHERE = {"namespace": "skills", "collection": "docs", "index": "small"}
FAST = {"model": "tiny-chat"}  # the example skills' default is the real model; these tests check plumbing
DOCUMENTS = [{"path": {"namespace": "skills", "collection": "docs", "name": name}, "contents": [{"text": text}]}
             for name, text in SEARCH_DOCS.items()]
QUESTIONS = [{"question": "What does json.dumps return?", **WHERE, **FAST},
             {"question": "When do owls hunt?", "max_results": 2, **WHERE, **FAST},
             {"question": "What does json.dumps return?", "min_score": 0.99, **WHERE, **FAST}]


def test_search_answer_agrees_with_cpython_and_cites_real_sections(skills_page):
    ep = skills_page
    ep.ok("return await engine.index.createIndex(arg);", {**WHERE, "max_tokens": 16})
    ep.ok("return await engine.index.put(arg);", DOCUMENTS)
    browser = [ep.ok("return await engine.skills.run('search-answer', arg);", q) for q in QUESTIONS]

    sa = search_answer.search_answer
    with local_csi(DIST, ["tiny-chat"]) as csi:
        csi._run(index_face.create(csi.index, {**WHERE, "max_tokens": 16}))
        csi._run(index_face.put(csi.index, DOCUMENTS))
        cpython = [sa(csi, search_answer.Input(**q)).model_dump(mode="json") for q in QUESTIONS]

    for got, expected in zip(browser, cpython, strict=True):
        # the embeddings of onnxruntime-web and onnxruntime differ in the last float32 bits
        assert [s.pop("score") for s in got["sources"]] == pytest.approx(
            [s.pop("score") for s in expected["sources"]], abs=1e-4)
        assert got == expected
    json_answer, owls, nothing = browser
    assert json_answer["answer"] and [s["name"] for s in json_answer["sources"]][0] == "json.txt"
    assert [s["name"] for s in owls["sources"]][0] == "owls.txt" and len(owls["sources"]) == 2
    assert nothing == {"answer": search_answer.NOTHING_FOUND, "sources": []}
    for s in json_answer["sources"] + owls["sources"]:  # real sections: text[start:end], end inclusive
        assert s["start"]["item"] == s["end"]["item"] == 0
        assert s["content"] == SEARCH_DOCS[s["name"]][s["start"]["position"]:s["end"]["position"] + 1]
    # the same slices of the stored documents, read back through the CSI
    stored = ep.ok("return await engine.csi.documents(arg);", [d["path"] for d in DOCUMENTS])
    assert [d["contents"][0]["text"] for d in stored] == list(SEARCH_DOCS.values())
    # a CSI error inside a skill is the skill's error: SkillError, whose message says what failed
    missing = ep.call("return await engine.skills.run('search-answer', arg);", {**WHERE, "index": "nope",
                                                                                 "question": "x"})
    assert missing["error"]["name"] == "SkillError"
    assert "NotFoundError: index 'nope' does not exist" in missing["error"]["message"]
    assert ep.foreign_requests() == []
