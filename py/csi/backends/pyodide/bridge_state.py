"""What every role of the Pyodide backend shares: the JS bridge (worker/bridge/) and what Python
keeps of what it said."""

from __future__ import annotations

from typing import Any

from ...core.insides import InsidesTensors


class BridgeState:
    """The bridge and, per model, its end-of-sequence ids, vocabulary type and insides tensors."""

    def __init__(self, bridge: Any) -> None:
        self._bridge = bridge
        self._vocab_types: dict[str, tuple[str, bool]] = {}
        """Per model, from the token table the engine reads at load (for grammars, without a second copy)."""
        self._eos: dict[str, tuple[int, ...]] = {}
        self._insides: dict[str, tuple[InsidesTensors, tuple[float, ...] | None]] = {}
