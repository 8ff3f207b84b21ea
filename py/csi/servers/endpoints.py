"""The page's servers and the models on them, as configured (``set_remotes``): each server's
``Endpoint`` and each model's ``ServerModel``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from ..core.backend import ModelInfo
from ..errors import InvalidInputError

Policy = Literal["remote", "prefer-local"]
"""``remote``: the server always serves the model; ``prefer-local``: the model is loaded in the
browser, and the server serves it only when that load fails (no WebGPU, no storage, no network)."""


@dataclass(frozen=True)
class Endpoint:
    """One OpenAI-compatible server: its base URL (ending in ``/v1`` or what stands for it), key, the
    longest wait for progress (the answer to begin, its next token, a whole JSON answer) and the
    longest a request may take."""

    base_url: str
    api_key: str | None = None
    timeout_s: float = 120.0
    deadline_s: float = 600.0

    def url(self, path: str) -> str:
        return self.base_url.rstrip("/") + "/" + path

    def headers(self) -> dict[str, str]:
        out = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if self.api_key:
            out["Authorization"] = f"Bearer {self.api_key}"
        return out


@dataclass(frozen=True)
class ServerModel:
    """A model id csi-web answers to, the endpoint serving it and its name there."""

    model_id: str
    endpoint: Endpoint
    server_model: str
    policy: Policy = "remote"

    def info(self, fallback: str | None) -> ModelInfo:
        """The engine's entry for this model, served by its server (``fallback``: why not here)."""
        return ModelInfo(self.model_id, "chat", 0, remote=self.endpoint.base_url, fallback=fallback)


def check_server_url(url: str, param: str) -> str:
    """A base URL of an OpenAI-compatible server (http or https), without its trailing slash."""
    if not (isinstance(url, str) and len(url) <= 2000 and re.fullmatch(r"https?://[^\s/?#]+(/[^\s?#]*)?", url)):
        raise InvalidInputError("a server's `baseURL` must be an http or https URL, such as "
                                "http://127.0.0.1:8080/v1 (at most 2,000 characters)", param)
    return url.rstrip("/")
