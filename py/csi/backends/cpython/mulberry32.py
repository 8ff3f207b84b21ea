"""The seedable generator of worker/sampling/, bit for bit, so a seeded request draws the same
tokens in CPython and in the browser."""

from __future__ import annotations

import math
import os


class Mulberry32:
    """Mulberry32 over a 32-bit state; ``None`` seeds from the OS."""

    def __init__(self, seed: int | None) -> None:
        if seed is None:
            seed = int.from_bytes(os.urandom(4), "little")
        hi = math.floor(seed / 4294967296)
        self.state = (_to_int32(seed) ^ _to_int32(hi)) & 0xFFFFFFFF

    def next(self) -> float:
        """The next number in [0, 1)."""
        self.state = (self.state + 0x6D2B79F5) & 0xFFFFFFFF
        t = self.state
        t = _imul(t ^ (t >> 15), t | 1)
        t ^= (t + _imul(t ^ (t >> 7), t | 61)) & 0xFFFFFFFF
        return ((t ^ (t >> 14)) & 0xFFFFFFFF) / 4294967296


def _to_int32(x: int) -> int:
    return x & 0xFFFFFFFF


def _imul(a: int, b: int) -> int:
    return (a * b) & 0xFFFFFFFF
