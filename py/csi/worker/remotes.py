"""``set_remotes``: the page's servers of remote models, checked and handed to the engine."""

from __future__ import annotations

from ..core.aliases import MODEL_ID
from ..core.engine import Engine
from ..core.remote import Endpoint, RemoteModel, check_remote_url
from ..errors import InvalidInputError
from .replies import ConfiguredRemoteModel, ConfiguredRemoteModels
from .requests import RemoteModelSpec, RemotesRequest


async def set_remotes(engine: Engine, r: RemotesRequest) -> ConfiguredRemoteModels:
    """Replace the remote configuration; the models configured, with where each is served."""
    models: dict[str, RemoteModel] = {}
    for i, server in enumerate(r.remotes):
        endpoint = Endpoint(check_remote_url(server.base_url, f"remotes[{i}].base_url"), server.api_key,
                            server.timeout_s)
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
            models[spec.id] = RemoteModel(spec.id, endpoint, name, spec.policy)
    engine.remotes.set(list(models.values()))
    return ConfiguredRemoteModels([ConfiguredRemoteModel(id=m.model_id, base_url=m.endpoint.base_url,
                                                         server_model=m.server_model, policy=m.policy)
                                   for m in models.values()])
