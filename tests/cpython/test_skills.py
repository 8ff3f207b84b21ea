"""Skills in CPython: pharia-skill's decorators, the registry (as the worker uses it), and the real engine."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from pharia_skill import IndexPath, Language
from pydantic import BaseModel

from csi.backends.local_host import LocalHost
from csi.errors import CsiError, InternalError, InvalidInputError
from csi.local import local_csi
from csi.runtime import build_runtime
from csi.skills.examples import search_answer
from csi.skills.loaded import find_skill
from csi.skills.registry import EXAMPLES
from csi.testing import ScriptedBackend
from tests.support.aio import run_async
from tests.support.faces import index as index_face
from tests.support.paths import DIST
from tests.support.skill_sources import ECHO, IMPORT_ERROR, NO_SKILL, RAISES, SEARCH_DOCS, SYNTAX_ERROR, Echo
from tests.support.skills import SkillsClient


class In(BaseModel):
    x: int


def registry(host: LocalHost | None = None) -> SkillsClient:
    return SkillsClient(build_runtime(ScriptedBackend([b"<eos>", b"a"], [1]), host or LocalHost()).skills)


def call(coro: Any) -> Any:
    return run_async(coro)  # not asyncio.run: once a browser test ran, Playwright owns this thread's loop


def test_register_gives_pydantic_schemas_and_docstring():
    reg = registry()
    meta = call(reg.register("echo", ECHO))
    assert meta["name"] == "echo"
    assert meta["description"] == "Repeat the topic `times` times."
    assert meta["input_schema"] == Echo.Input.model_json_schema()
    assert meta["output_schema"] == Echo.Output.model_json_schema()
    assert meta["kind"] == "skill"
    assert call(reg.metadata("echo")) == {k: meta[k] for k in ("description", "input_schema", "output_schema",
                                                               "kind")}


def test_run_valid_input_and_invalid_input_names_the_field():
    reg = registry()
    call(reg.register("echo", ECHO))
    assert call(reg.run("echo", {"topic": "owls", "times": 2})) == {"echoed": ["owls", "owls"]}
    with pytest.raises(InvalidInputError) as err:
        call(reg.run("echo", {"topic": "owls", "times": 9}))
    assert err.value.param == "input.times"
    assert "times" in err.value.message
    with pytest.raises(InvalidInputError) as err:
        call(reg.run("echo", {}))
    assert err.value.param == "input.topic"


def test_raising_skill_is_internal_error_with_traceback():
    reg = registry()
    call(reg.register("divide", RAISES))
    assert call(reg.run("divide", {"n": 5})) == {"quotient": 2}
    with pytest.raises(InternalError) as err:
        call(reg.run("divide", {"n": 0}))
    message = err.value.message
    assert "ZeroDivisionError" in message
    assert "Traceback" in message and "in helper" in message
    assert "return 10 // n" in message  # the skill's own source line is shown


@pytest.mark.parametrize(("source", "line", "kind"), [(SYNTAX_ERROR, 3, "SyntaxError"),
                                                      (IMPORT_ERROR, 3, "ModuleNotFoundError")])
def test_broken_source_is_a_typed_error_with_the_line(source, line, kind):
    reg = registry()
    with pytest.raises(InvalidInputError) as err:
        call(reg.register("broken", source))
    assert err.value.param == "source"
    assert f"line {line}" in err.value.message and kind in err.value.message
    assert "broken" not in [s["name"] for s in call(reg.list())]


def test_source_must_define_exactly_one_skill_and_names_are_checked():
    reg = registry()
    with pytest.raises(InvalidInputError, match="decorated with pharia_skill's @skill") as err:
        call(reg.register("none", NO_SKILL))
    assert err.value.param == "source"
    with pytest.raises(InvalidInputError, match="can only be used once"):  # the SDK's own check
        call(reg.register("two", ECHO + ECHO.replace("def echo", "def echo2")))
    for bad in ["", "has space", "x" * 65, "-lead", 7]:
        with pytest.raises(InvalidInputError) as err:
            call(reg.register(bad, ECHO))
        assert err.value.param == "name"
    with pytest.raises(InvalidInputError, match="built-in"):
        call(reg.register("summarize", ECHO))
    with pytest.raises(InvalidInputError) as err:
        call(reg.run("nope", {}))
    assert err.value.param == "name"


def test_registered_skills_persist_in_the_host_and_remove_forgets_them():
    host = LocalHost()
    reg = registry(host)
    call(reg.register("echo", ECHO))
    again = registry(host)  # a new worker over the same storage
    assert call(again.run("echo", {"topic": "x"})) == {"echoed": ["x"]}
    listed = {s["name"]: s for s in call(again.list())}
    assert listed["echo"]["builtin"] is False and listed["summarize"]["builtin"] is True
    call(again.remove("echo"))
    assert "echo" not in host.skills
    with pytest.raises(InvalidInputError):
        call(again.remove("summarize"))
    assert "echo" not in [s["name"] for s in call(registry(host).list())]


def test_a_stored_skill_that_no_longer_loads_is_listed_with_its_error():
    host = LocalHost()
    host.skills["old"] = SYNTAX_ERROR
    reg = registry(host)
    [old] = [s for s in call(reg.list()) if s["name"] == "old"]
    assert "SyntaxError" in old["error"]
    with pytest.raises(InvalidInputError, match="failed to load"):
        call(reg.run("old", {}))
    call(reg.remove("old"))


def test_examples_describe_themselves():
    for module in EXAMPLES.values():
        found = find_skill(importlib.import_module(module))
        assert found is not None
        meta = found.metadata()
        assert meta["description"] and meta["input_schema"]["type"] == "object"
    assert Language("deu") is Language.German


SEARCH_INDEX = {"namespace": "skills", "collection": "docs", "index": "small", "max_tokens": 16}


def test_search_answer_answers_from_the_sections_it_found():
    sa, Input = search_answer.search_answer, search_answer.Input
    with local_csi(DIST, ["tiny-chat"]) as csi:
        csi._run(index_face.create(csi.index, SEARCH_INDEX))
        csi._run(index_face.put(csi.index, [
            {"path": {"namespace": "skills", "collection": "docs", "name": name}, "contents": [{"text": text}]}
            for name, text in SEARCH_DOCS.items()]))
        where = {**{k: SEARCH_INDEX[k] for k in ("namespace", "collection", "index")}, "model": "tiny-chat"}
        out = sa(csi, Input(question="What does json.dumps return?", **where))
        again = sa(csi, Input(question="What does json.dumps return?", **where))
        nothing = sa(csi, Input(question="What does json.dumps return?", min_score=0.99, **where))
        with pytest.raises(CsiError) as missing:
            sa(csi, Input(question="x", namespace="skills", collection="docs", index="nope"))
    assert out.answer and out == again  # greedy
    assert len(out.sources) == 3 and out.sources[0].name == "json.txt"
    assert "json.dumps returns a string" in out.sources[0].content
    assert [s.score for s in out.sources] == sorted((s.score for s in out.sources), reverse=True)
    for s in out.sources:  # each source is a real section of its document (inclusive end)
        assert s.start.item == s.end.item == 0
        assert s.content == SEARCH_DOCS[s.name][s.start.position:s.end.position + 1]
        assert s.content != SEARCH_DOCS[s.name]
    assert nothing == search_answer.Output(answer=search_answer.NOTHING_FOUND, sources=[])
    assert missing.value.param == "requests[0].index_path.index"


def test_documents_metadata_and_filtered_search_through_the_skill_csi():
    from pharia_skill import DocumentPath, GreaterThan, MetadataFilter, Text, With

    where = {k: SEARCH_INDEX[k] for k in ("namespace", "collection")}
    with local_csi(DIST, []) as csi:
        csi._run(index_face.create(csi.index, SEARCH_INDEX))
        csi._run(index_face.put(csi.index, [
            {"path": {**where, "name": name}, "contents": [{"text": text}], "metadata": {"n": i}}
            for i, (name, text) in enumerate(SEARCH_DOCS.items())]))
        owls, missing = DocumentPath("skills", "docs", "owls.txt"), DocumentPath("skills", "docs", "none.txt")
        doc = csi.document(owls)
        metadata = csi.documents_metadata([owls, missing])
        hits = csi.search(IndexPath("skills", "docs", "small"), "birds", 10,
                          filters=[With([MetadataFilter("n", GreaterThan(0))])])
        with pytest.raises(CsiError) as err:
            csi.document(missing)
    assert doc.path == owls and doc.contents == [Text(SEARCH_DOCS["owls.txt"])] and doc.metadata == {"n": 1}
    assert metadata == [{"n": 1}, None]
    assert {h.document_path.name for h in hits} == {"owls.txt", "tea.txt"}
    assert hits[0].document_path.name == "owls.txt"
    assert err.value.param == "requests[0].name"


def test_search_answer_prompt_numbers_the_sections():
    from pharia_skill import Cursor, DocumentPath, SearchResult

    results = [SearchResult(DocumentPath("n", "c", name), f" {text}\n", 0.5, Cursor(0, 0), Cursor(0, len(text)))
               for name, text in [("a.txt", "Alpha."), ("b.txt", "Beta.")]]
    assert search_answer.prompt("Which?", results) == (
        "Sections:\n\n[1] a.txt:\nAlpha.\n\n[2] b.txt:\nBeta.\n\nQuestion: Which?")
