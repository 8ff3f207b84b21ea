"""Model aliases: other names for loaded models, so that requests and skills written for another
platform's models (Pharia Kernel's ``llama-3.1-8b-instruct``) run unchanged."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ..errors import InvalidInputError, ModelNotSupportedError

MODEL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}(/[A-Za-z0-9][A-Za-z0-9._-]{0,95})?")


class ModelAliases:
    """Alias -> model id; a loaded model's own id wins over an alias of the same name."""

    def __init__(self) -> None:
        self._map: dict[str, str] = {}

    def set(self, aliases: Mapping[str, str]) -> dict[str, str]:
        """Replace the aliases; each names a model id, never another alias (param ``aliases.<name>``)."""
        for alias, target in aliases.items():
            param = f"aliases.{alias}"
            if not alias.strip() or len(alias) > 256:
                raise InvalidInputError("an alias is a model name of 1 to 256 characters", param)
            if not isinstance(target, str) or not MODEL_ID.fullmatch(target):
                raise InvalidInputError(f"alias {alias!r} must name a model id, not {target!r}", param)
            if target in aliases:
                raise InvalidInputError(f"alias {alias!r} names {target!r}, itself an alias: name the model", param)
        self._map = dict(aliases)
        return dict(self._map)

    def target(self, name: str) -> str:
        """The model id ``name`` names (``name`` itself when it is no alias)."""
        return self._map.get(name, name)

    def not_served(self, requested: str, loaded: Sequence[str]) -> ModelNotSupportedError:
        """The error for a model that is not loaded: which alias points where, or how to add one."""
        names = ", ".join(loaded) or "none"
        target = self._map.get(requested)
        if target is not None:
            return ModelNotSupportedError(f"model {requested!r} is an alias of {target!r}, which is not loaded "
                                          f"(loaded: {names})", "model")
        example = loaded[0] if loaded else "a-loaded-model"
        return ModelNotSupportedError(
            f"model {requested!r} is not loaded (loaded: {names}). To serve it with a loaded model, alias it: "
            f"CreateWebWorkerEngine(worker, models, {{modelAliases: {{{requested!r}: {example!r}}}}}) in the "
            f"browser, local_csi(site, models, aliases={{{requested!r}: {example!r}}}) in CPython", "model")
