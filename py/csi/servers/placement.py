"""``ServerPlacement``, the engine's ``Placement`` when it can reach servers: which models the page
placed on OpenAI-compatible servers (``set_remotes``), and the one place that decides whether a model
loads here or runs on its server."""

from __future__ import annotations

from collections.abc import Callable

from ..core.runner import LoadHere, Runner
from ..core.scheduler import Scheduler
from ..errors import CsiError, InvalidInputError
from .endpoints import ServerModel
from .http import HttpClient
from .runner import ServerRunner


class ServerPlacement:
    """The models placed on servers, by csi-web model id, and the runners that serve them."""

    def __init__(self, http: HttpClient) -> None:
        self._http = http
        self._models: dict[str, ServerModel] = {}

    def set(self, models: list[ServerModel]) -> None:
        """Replace the configuration (a loaded model whose server changes must be loaded again)."""
        self._models = {m.model_id: m for m in models}

    def get(self, model_id: str) -> ServerModel | None:
        return self._models.get(model_id)

    def all(self) -> list[ServerModel]:
        return list(self._models.values())

    def placed(self, model_id: str) -> bool:
        return model_id in self._models

    async def runner(self, model_id: str, load_here: LoadHere, current: Callable[[], bool],
                     scheduler: Scheduler) -> Runner:
        model = self._models.get(model_id)
        if model is None:
            return await load_here()
        if model.policy == "remote":
            return ServerRunner(model, model.info(None), self._http, scheduler, self.get)
        try:
            return await load_here()
        except CsiError as exc:
            if not current() or isinstance(exc, InvalidInputError):
                raise
            return ServerRunner(model, model.info(f"{exc.name}: {exc.message}"), self._http, scheduler, self.get)
