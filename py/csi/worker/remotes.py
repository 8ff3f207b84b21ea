"""``set_remotes``: the page's OpenAI-compatible servers and the models on them, checked and handed
to the engine's placement."""

from __future__ import annotations

from ..core.aliases import MODEL_ID
from ..core.engine import Engine
from ..errors import InvalidInputError, NotSupportedError
from ..servers import Endpoint, ServerModel, ServerPlacement, check_server_url
from .replies import ConfiguredRemoteModel, ConfiguredRemoteModels
from .requests import RemoteModelSpec, RemotesRequest


async def set_remotes(engine: Engine, r: RemotesRequest) -> ConfiguredRemoteModels:
    """Replace the servers' configuration; the models configured, with where each is served."""
    placement = engine.servers
    if not isinstance(placement, ServerPlacement):
        if not r.remotes:
            return ConfiguredRemoteModels([])
        raise NotSupportedError("this engine has no HTTP client to reach servers with", "remotes")
    models: dict[str, ServerModel] = {}
    for i, server in enumerate(r.remotes):
        endpoint = Endpoint(check_server_url(server.base_url, f"remotes[{i}].base_url"), server.api_key,
                            server.timeout_s, server.deadline_s)
        for j, spec in enumerate(server.models):
            spec = RemoteModelSpec(id=spec) if isinstance(spec, str) else spec
            param = f"remotes[{i}].models[{j}]"
            if not MODEL_ID.fullmatch(spec.id) or ".." in spec.id:
                raise InvalidInputError(f"{spec.id[:80]!r} is not a model id (letters, digits, '-', '_', '.', "
                                        "one '/'; at most 200 characters)", param)
            if spec.id in models:
                raise InvalidInputError(f"{spec.id!r} is named by two servers", param)
            name = spec.server_model or spec.id
            if not name or len(name) > 500:
                raise InvalidInputError("`server_model` must be 1 to 500 characters", f"{param}.server_model")
            models[spec.id] = ServerModel(spec.id, endpoint, name, spec.policy)
    placement.set(list(models.values()))
    return ConfiguredRemoteModels([ConfiguredRemoteModel(id=m.model_id, base_url=m.endpoint.base_url,
                                                         server_model=m.server_model, policy=m.policy)
                                   for m in models.values()])
