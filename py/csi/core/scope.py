"""Which page message a piece of engine work serves, passed along with the work."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Scope:
    """The message a generation, embedding or insides call serves.

    ``abort(request_id)`` cancels every generation started under it (batch items and a skill's CSI
    calls included), and any ``interrupt()`` after ``epoch`` (the engine's interrupt epoch when the
    message arrived) ends them, even while they wait for their model. A call that must wait for a
    model another request holds reports ``{stage: "queued", waiting_for}`` to ``progress``.
    Without a scope, work gets an id of its own and the epoch at which it starts.
    """

    request_id: str | None = None
    epoch: int | None = None
    progress: Callable[[dict[str, Any]], None] | None = None
