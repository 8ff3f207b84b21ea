"""Skill files written against pharia-skill's API build into Pharia Kernel components with the SDK's own
`pharia-skill build` (in its own venv), and those components run: wasmtime-py instantiates each one with
WASI and a scripted CSI, calls the export the decorator targets and checks what crossed the boundary.

The expected interface names are read from the WIT the installed SDK ships, not written here."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from buildtools.deps.kernel_sdk import VENV, KernelBuildError, build_component, ensure_sdk, skill_world
from tests.support.kernel_host import (
    CsiNotProvided,
    HostResources,
    ScriptedChat,
    SkillComponent,
    StreamRecorder,
    record,
)
from tests.support.paths import ROOT

pytestmark = pytest.mark.kernel

SKILLS = ROOT / "tests" / "support" / "kernel_skills"
MODEL = "llama-3.1-8b-instruct"
# The component-model binary preamble: magic, version 0x0d, layer 1 (a core module has version 1, layer 0).
COMPONENT_PREAMBLE = b"\0asm\x0d\x00\x01\x00"
CORE_MODULE_PREAMBLE = b"\0asm\x01\x00\x00\x00"


@pytest.fixture(scope="module")
def sdk() -> Path:
    started = time.monotonic()
    bin_dir = ensure_sdk()
    print(f"\nkernel SDK venv ready in {time.monotonic() - started:.1f}s")
    return bin_dir


@pytest.fixture(scope="module")
def wit(sdk: Path) -> dict[str, Any]:
    """What the installed SDK's WIT says: its package version, the CSI world's imports, each world's export."""
    (skill_wit,) = VENV.glob("lib/python*/site-packages/pharia_skill/wit/skill.wit")
    text = skill_wit.read_text()
    package = re.search(r"^package (pharia:skill)@([\d.]+);", text, re.M)
    assert package is not None
    csi_world = re.search(r"world csi \{(.*?)\}", text, re.S)
    assert csi_world is not None
    return {
        "version": package.group(2),
        "csi": re.findall(r"import ([\w-]+);", csi_world.group(1)),
        "exports": dict(re.findall(r"world ([\w-]+) \{[^}]*?export ([\w-]+);", text, re.S)),
    }


@pytest.fixture(scope="module")
def build(sdk: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], Path]]:
    """Build tests/support/kernel_skills/<name>.py once per module; prints each build's time."""
    out_dir = tmp_path_factory.mktemp("kernel-components")
    built: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in built:
            started = time.monotonic()
            built[name] = build_component(SKILLS / f"{name}.py", out_dir)
            print(f"\npharia-skill build {name}: {time.monotonic() - started:.1f}s")
        return built[name]

    yield get


@pytest.fixture(scope="module")
def component(build: Callable[[str], Path]) -> Callable[[str], SkillComponent]:
    """The built component of a skill, compiled by wasmtime once per module."""
    compiled: dict[str, SkillComponent] = {}

    def get(name: str) -> SkillComponent:
        if name not in compiled:
            compiled[name] = SkillComponent(build(name))
        return compiled[name]

    return get


def qualified(wit: dict[str, Any], interface: str) -> str:
    return f"pharia:skill/{interface}@{wit['version']}"


@pytest.mark.parametrize("name", ["haiku", "relay"])
def test_the_build_is_a_component_not_a_core_module(build: Callable[[str], Path], name: str) -> None:
    head = build(name).read_bytes()[:8]
    assert head == COMPONENT_PREAMBLE, head
    assert head != CORE_MODULE_PREAMBLE


@pytest.mark.parametrize(("name", "world"), [("haiku", "skill"), ("relay", "message-stream-skill")])
def test_the_component_exports_its_decorators_world_and_imports_the_csi(
    component: Callable[[str], SkillComponent], wit: dict[str, Any], name: str, world: str
) -> None:
    built = component(name)
    exported = qualified(wit, wit["exports"][world])
    other = next(qualified(wit, e) for w, e in wit["exports"].items() if w != world)
    assert exported in built.exports and other not in built.exports
    assert {"skill-handler", "message-stream"} == set(wit["exports"].values())
    csi = {qualified(wit, i) for i in wit["csi"]}
    assert {"chunking", "document-index", "inference", "language", "tool"} <= set(wit["csi"])
    assert csi <= set(built.imports), sorted(csi - set(built.imports))
    streaming = qualified(wit, "streaming-output")
    assert (streaming in built.imports) == (world == "message-stream-skill")
    # Everything else it imports is WASI 0.2, which every component host provides.
    assert all(i.startswith("wasi:") for i in set(built.imports) - csi - {streaming})


def test_the_haiku_component_runs_and_calls_chat_through_the_csi(
    component: Callable[[str], SkillComponent], wit: dict[str, Any]
) -> None:
    built = component("haiku")
    chat = ScriptedChat("  old pond / a frog jumps in / the sound of water \n")
    store, instance, _ = built.instantiate(lambda resources: {"inference": chat.functions(resources)})
    handler = qualified(wit, "skill-handler")

    out = built.call(store, instance, handler, "run", json.dumps({"subject": "frogs"}).encode())

    assert isinstance(out, bytes), out  # result<list<u8>, error> lifts an ok as the bytes themselves
    assert json.loads(out) == {"text": "old pond / a frog jumps in / the sound of water"}  # stripped in the skill
    assert chat.requests == [{"model": MODEL, "max_tokens": 48,
                              "messages": [("system", "You answer with a single haiku."), ("user", "frogs")]}]


def test_the_haiku_components_metadata_has_pydantics_schemas(
    component: Callable[[str], SkillComponent], wit: dict[str, Any]
) -> None:
    class Topic(BaseModel):  # the same models as haiku.py, schema'd by our own pydantic (2.14, not 2.11)
        subject: str

    class Poem(BaseModel):
        text: str

    built = component("haiku")
    store, instance, _ = built.instantiate(lambda resources: {})
    meta = built.call(store, instance, qualified(wit, "skill-handler"), "metadata")
    assert json.loads(getattr(meta, "input-schema")) == Topic.model_json_schema()
    assert json.loads(getattr(meta, "output-schema")) == Poem.model_json_schema()
    assert meta.description == "Write a haiku about the subject."


def test_bad_input_comes_back_as_the_worlds_invalid_input_error_naming_the_field(
    component: Callable[[str], SkillComponent], wit: dict[str, Any]
) -> None:
    built = component("haiku")
    chat = ScriptedChat("unused")
    store, instance, _ = built.instantiate(lambda resources: {"inference": chat.functions(resources)})
    out = built.call(store, instance, qualified(wit, "skill-handler"), "run", b'{"subjekt": "frogs"}')
    assert out.tag == "invalid-input"
    assert "subject" in out.payload and "Field required" in out.payload
    assert chat.requests == []


def test_the_streaming_component_forwards_chat_stream_events_to_its_output(
    component: Callable[[str], SkillComponent], wit: dict[str, Any]
) -> None:
    built = component("relay")
    chat = ScriptedChat("rivers run to the sea")
    recorder = StreamRecorder()

    def csi(resources: HostResources) -> dict[str, Any]:
        return {"inference": chat.functions(resources), "streaming-output": recorder.functions(resources)}

    store, instance, resources = built.instantiate(csi)
    output = resources.own(recorder, "stream-output")
    out = built.call(store, instance, qualified(wit, "message-stream"), "run", b'{"text": "where do rivers go?"}',
                     output)

    assert out is None  # result<_, error>: ok
    assert recorder.items == [("begin", "assistant"), ("append", "rivers "), ("append", "run "),
                              ("append", "to "), ("append", "the "), ("append", "sea"),
                              ("end", b'{"finish_reason":"stop"}')]
    assert chat.requests == [{"model": MODEL, "max_tokens": 32,
                              "messages": [("system", "Answer briefly."), ("user", "where do rivers go?")]}]
    assert resources.objects == {}, "the chat stream and the output were dropped"


def test_a_skill_using_chunk_language_and_complete_builds_and_runs(
    component: Callable[[str], SkillComponent], wit: dict[str, Any]
) -> None:
    text = "Rivers run to the sea. The sea does not fill. Clouds carry water back."
    seen: dict[str, Any] = {}

    def chunk_with_offsets(_store: Any, requests: list[Any]) -> list[list[Any]]:
        seen["chunk"] = [(r.text, r.params.model, getattr(r.params, "max-tokens"), r.params.overlap,
                          getattr(r, "character-offsets")) for r in requests]
        out = []
        for r in requests:
            starts = [0] + [m.end() for m in re.finditer(r"\. ", r.text)]
            pieces = [r.text[a:b].strip() for a, b in zip(starts, starts[1:] + [len(r.text)], strict=True)]
            out.append([record(text=p, byte_offset=s, character_offset=s) for p, s in zip(pieces, starts, strict=True)])
        return out

    def select_language(_store: Any, requests: list[Any]) -> list[str | None]:
        seen["language"] = [(r.text, r.languages) for r in requests]
        return ["eng" for _ in requests]

    def complete_v2(_store: Any, requests: list[Any]) -> list[Any]:
        seen["complete"] = [(r.model, r.prompt, getattr(r.params, "max-tokens"), r.params.stop) for r in requests]
        return [record(text=" Where rivers go ", finish_reason="stop", logprobs=[],
                       usage=record(prompt=9, completion=3)) for _ in requests]

    built = component("tour")
    store, instance, _ = built.instantiate(lambda resources: {
        "chunking": {"chunk-with-offsets": chunk_with_offsets},
        "language": {"select-language": select_language},
        "inference": {"complete-v2": complete_v2},
    })
    out = built.call(store, instance, qualified(wit, "skill-handler"), "run", json.dumps({"text": text}).encode())

    assert json.loads(out) == {
        "chunks": ["Rivers run to the sea.", "The sea does not fill.", "Clouds carry water back."],
        "offsets": [0, 23, 46], "language": "eng", "headline": "Where rivers go",
    }
    assert seen == {
        "chunk": [(text, MODEL, 16, 0, True)],
        "language": [(text, ["eng", "deu"])],
        "complete": [(MODEL, "A headline for: Rivers run to the sea.\nHeadline:", 12, ["\n"])],
    }


def test_a_csi_function_the_host_lacks_traps_instead_of_answering(
    component: Callable[[str], SkillComponent], wit: dict[str, Any]
) -> None:
    built = component("haiku")
    store, instance, _ = built.instantiate(lambda resources: {})  # no chat
    with pytest.raises(CsiNotProvided, match="inference#chat is not provided"):
        built.call(store, instance, qualified(wit, "skill-handler"), "run", b'{"subject": "frogs"}')


def test_a_skill_importing_requests_is_refused_by_the_sdks_build(sdk: Path, tmp_path: Path) -> None:
    with pytest.raises(KernelBuildError) as caught:
        build_component(SKILLS / "fetcher.py", tmp_path)
    assert "outbound http" in caught.value.stdout  # the CLI's NoHttpError panel
    assert not list(tmp_path.glob("*.wasm"))


def test_a_failing_build_raises_with_the_commands_stderr(sdk: Path, tmp_path: Path) -> None:
    skill_file = tmp_path / "lost.py"
    skill_file.write_text("import no_such_module_q7\n" + (SKILLS / "haiku.py").read_text())
    with pytest.raises(KernelBuildError) as caught:
        build_component(skill_file, tmp_path / "out")
    assert "No module named 'no_such_module_q7'" in caught.value.stderr
    assert "No module named 'no_such_module_q7'" in str(caught.value)
    assert not (tmp_path / "out" / "lost.wasm").exists()


def test_the_world_comes_from_the_decorator(tmp_path: Path) -> None:
    assert skill_world((SKILLS / "haiku.py").read_text()) == "skill"
    assert skill_world((SKILLS / "relay.py").read_text()) == "message-stream-skill"
    assert skill_world("import pharia_skill\n@pharia_skill.message_stream\ndef f(): ...") == "message-stream-skill"
    with pytest.raises(KernelBuildError, match="found none"):
        skill_world("def f(): ...")
    with pytest.raises(KernelBuildError, match="exactly one kind"):
        skill_world("@skill\ndef f(): ...\n@message_stream\ndef g(): ...")
    bad_name = tmp_path / "my-skill.py"
    bad_name.write_text((SKILLS / "haiku.py").read_text())
    with pytest.raises(KernelBuildError, match="Python identifier"):
        build_component(bad_name, tmp_path)
