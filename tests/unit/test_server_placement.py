"""Where a model runs, decided once when it loads (``ServerPlacement``), and the errors for a model
placed on a server but not loaded, or whose server changed since it loaded. The generation itself
runs against a real llama.cpp server in tests/cpython/test_remote_models.py."""

from __future__ import annotations

import pytest

from csi.core.engine import Engine
from csi.errors import ModelLoadError, ModelNotSupportedError, NotSupportedError
from csi.servers import Endpoint, ServerModel, ServerPlacement
from csi.servers.http import HttpClient, HttpResponse
from csi.testing import ScriptedBackend
from tests.support.aio import run_async

VOCAB = [b"<eos>", b"a"]
SERVER = Endpoint("http://127.0.0.1:9/v1")


class NoNetwork(HttpClient):
    async def open(self, method: str, url: str, headers: dict[str, str], body: bytes | None) -> HttpResponse:
        raise AssertionError("nothing here may reach a server")


class FailingLoads(ScriptedBackend):
    async def load_model(self, model_id, device, progress, hub=None, gguf_budget=None):  # type: ignore[no-untyped-def]
        if model_id.startswith("big"):
            raise ModelLoadError("no room for it here", "model")
        return await super().load_model(model_id, device, progress, hub)


def engine_with(*models: ServerModel, backend: ScriptedBackend | None = None) -> Engine:
    placement = ServerPlacement(NoNetwork())
    placement.set(list(models))
    return Engine(backend or ScriptedBackend(VOCAB, [1]), placement)


def test_a_model_placed_on_a_server_but_not_loaded_is_named_as_such_with_how_to_load_it() -> None:
    engine = engine_with(ServerModel("on-server", SERVER, "smollm2"))
    run_async(engine.load(["local-chat"]))
    with pytest.raises(ModelNotSupportedError) as err:
        engine.resolve_model("on-server", "chat")
    message = err.value.message
    assert err.value.param == "model"
    assert "configured on a server" in message and "not loaded" in message and "local-chat" in message
    assert "engine.reload([..., 'on-server'])" in message and "alias" not in message


def test_a_model_the_page_did_not_place_gets_the_alias_advice() -> None:
    engine = engine_with(ServerModel("on-server", SERVER, "smollm2"))
    run_async(engine.load(["local-chat"]))
    with pytest.raises(ModelNotSupportedError) as err:
        engine.resolve_model("elsewhere", "chat")
    assert "alias" in err.value.message and "configured on a server" not in err.value.message


def test_placement_decides_at_load_time_remote_always_prefer_local_only_when_the_local_load_fails() -> None:
    engine = engine_with(ServerModel("big-remote", SERVER, "m"),
                         ServerModel("big-fallback", SERVER, "m", "prefer-local"),
                         ServerModel("small-fallback", SERVER, "m", "prefer-local"),
                         backend=FailingLoads(VOCAB, [1]))
    infos = {i.model_id: i for i in run_async(engine.load(["big-remote", "big-fallback", "small-fallback"]))}
    assert (infos["big-remote"].remote, infos["big-remote"].fallback) == (SERVER.base_url, None)
    assert infos["big-fallback"].remote == SERVER.base_url
    assert infos["big-fallback"].fallback == "ModelLoadError: no room for it here"
    assert infos["small-fallback"].remote is None  # loaded here: the server stays unused


def test_what_needs_the_tokenizer_is_refused_for_a_model_on_a_server_and_a_changed_server_is_named() -> None:
    engine = engine_with(ServerModel("on-server", SERVER, "m"))
    run_async(engine.load(["on-server"]))
    runner = engine.runner("on-server")
    with pytest.raises(NotSupportedError) as echo:
        runner.text_of([1])
    assert echo.value.param == "echo"
    with pytest.raises(ModelNotSupportedError) as tokens:
        runner.needs_tokenizer("its tokenizer is not here", "model", ModelNotSupportedError)
    assert tokens.value.message == "its tokenizer is not here"
    assert isinstance(engine.servers, ServerPlacement)
    engine.servers.set([ServerModel("on-server", Endpoint("http://127.0.0.1:10/v1"), "m")])
    from csi.core.request import GenerationRequest  # noqa: PLC0415

    with pytest.raises(ModelNotSupportedError) as moved:
        engine.generate(GenerationRequest(model="on-server", prompt="hi"))
    assert "no longer configured" in moved.value.message
