"""Stop-sequence matching over streamed text that never emits text a stop may still claim."""

from __future__ import annotations


class StopMatcher:
    """Feed text deltas; get back what is safe to emit and whether a stop sequence was hit.

    Text that could be the beginning of a stop sequence is held back until it is known not to
    be one, so a stream never shows text that later turns out to start a stop sequence.
    """

    def __init__(self, stops: list[str]) -> None:
        self._stops = [s for s in stops if s]
        self._pending = ""
        self.stopped = False

    def push(self, text: str) -> str:
        if self.stopped:
            return ""
        self._pending += text
        if not self._stops:
            out, self._pending = self._pending, ""
            return out
        cut = min((i for i in (self._pending.find(s) for s in self._stops) if i >= 0), default=-1)
        if cut >= 0:
            self.stopped = True
            out, self._pending = self._pending[:cut], ""
            return out
        hold = self._held_suffix_length()
        out = self._pending[: len(self._pending) - hold]
        self._pending = self._pending[len(out) :]
        return out

    def flush(self) -> str:
        """At the end of generation nothing can match any more: release what was held."""
        out, self._pending = ("" if self.stopped else self._pending), ""
        return out

    def _held_suffix_length(self) -> int:
        best = 0
        for stop in self._stops:
            for n in range(min(len(stop) - 1, len(self._pending)), best, -1):
                if self._pending.endswith(stop[:n]):
                    best = n
                    break
        return best
