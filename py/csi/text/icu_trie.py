"""ICU's ``UCharsTrie`` and ``BytesTrie``, walked one character at a time as ICU walks them.

The word dictionaries of ``segmentation_dictionaries`` are stored in ICU's trie formats; ``IcuTrie.next``
answers, like ICU's ``next()``, whether the text so far is a word, a prefix of one, or neither.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable

NO_MATCH, NO_VALUE, FINAL, INTERMEDIATE_VALUE = 0, 1, 2, 3  # ICU's UStringTrieResult


class IcuTrie:
    """An ICU ``UCharsTrie`` (16-bit units) or ``BytesTrie`` (with a code point offset), walked like ICU does."""

    def __init__(self, kind: str, offset: int, data: bytes) -> None:
        self.bytes = kind == "b"
        self.offset = offset
        if self.bytes:
            self.units: bytes | array = data
        else:
            units = array("H")
            units.frombytes(data[: len(data) // 2 * 2])
            self.units = units
        self.root = (0, -1)  # (position, remaining length of a linear-match node minus one)
        self.next: Callable[[tuple[int, int], str], tuple[int, tuple[int, int]]] = (
            self._next_bytes if self.bytes else self._next_chars)

    # -- UCharsTrie ---------------------------------------------------------------------------------------

    def _next_chars(self, state: tuple[int, int], ch: str) -> tuple[int, tuple[int, int]]:
        c = ord(ch)
        if c <= 0xFFFF:
            return self._u_next(state, c)
        c -= 0x10000
        result, state = self._u_next(state, 0xD800 | (c >> 10))
        if result & 1:  # has a next unit
            return self._u_next(state, 0xDC00 | (c & 0x3FF))
        return NO_MATCH, (-1, -1)

    def _u_next(self, state: tuple[int, int], c: int) -> tuple[int, tuple[int, int]]:
        u = self.units
        pos, rem = state
        if pos < 0:
            return NO_MATCH, state
        if rem >= 0:  # inside a linear-match node
            if c != u[pos]:
                return NO_MATCH, (-1, -1)
            pos += 1
            if rem == 0 and u[pos] >= 0x40:
                return (FINAL if u[pos] & 0x8000 else INTERMEDIATE_VALUE), (pos, -1)
            return NO_VALUE, (pos, rem - 1)
        node = u[pos]
        pos += 1
        while True:
            if node < 0x30:  # branch
                return self._u_branch(pos, node, c)
            if node < 0x40:  # linear match of node - 0x30 + 1 units
                if c != u[pos]:
                    return NO_MATCH, (-1, -1)
                pos += 1
                length = node - 0x30 - 1
                if length < 0 and u[pos] >= 0x40:
                    return (FINAL if u[pos] & 0x8000 else INTERMEDIATE_VALUE), (pos, -1)
                return NO_VALUE, (pos, length)
            if node & 0x8000:  # final value: nothing follows
                return NO_MATCH, (-1, -1)
            lead = node & 0x7FFF  # a value on this node: skip it
            if lead >= 0x4040:
                pos += 1 if lead < 0x7FC0 else 2
            node &= 0x3F

    def _u_branch(self, pos: int, length: int, c: int) -> tuple[int, tuple[int, int]]:
        u = self.units
        if length == 0:
            length = u[pos]
            pos += 1
        length += 1
        while length > 5:  # binary search part
            if c < u[pos]:
                pos += 1
                length >>= 1
                delta = u[pos]
                pos += 1
                if delta >= 0xFC00:
                    if delta == 0xFFFF:
                        delta = (u[pos] << 16) | u[pos + 1]
                        pos += 2
                    else:
                        delta = ((delta - 0xFC00) << 16) | u[pos]
                        pos += 1
                pos += delta
            else:
                pos += 1
                length -= length >> 1
                delta = u[pos]
                pos += 1
                if delta >= 0xFC00:
                    pos += 2 if delta == 0xFFFF else 1
        while length > 1:  # linear part: (unit, value or jump delta) pairs
            if c == u[pos]:
                pos += 1
                node = u[pos]
                if node & 0x8000:
                    return FINAL, (pos, -1)
                pos += 1
                if node < 0x4000:
                    delta = node
                elif node < 0x7FFF:
                    delta = ((node - 0x4000) << 16) | u[pos]
                    pos += 1
                else:
                    delta = (u[pos] << 16) | u[pos + 1]
                    pos += 2
                pos += delta
                node = u[pos]
                return (NO_VALUE if node < 0x40 else FINAL if node & 0x8000 else INTERMEDIATE_VALUE), (pos, -1)
            pos += 1
            length -= 1
            lead = u[pos] & 0x7FFF
            pos += 1
            if lead >= 0x4000:
                pos += 1 if lead < 0x7FFF else 2
        if c == u[pos]:
            pos += 1
            node = u[pos]
            return (NO_VALUE if node < 0x40 else FINAL if node & 0x8000 else INTERMEDIATE_VALUE), (pos, -1)
        return NO_MATCH, (-1, -1)

    # -- BytesTrie ----------------------------------------------------------------------------------------

    def _next_bytes(self, state: tuple[int, int], ch: str) -> tuple[int, tuple[int, int]]:
        c = ord(ch)
        if c == 0x200D:
            c = 0xFF
        elif c == 0x200C:
            c = 0xFE
        else:
            c -= self.offset
            if not 0 <= c <= 0xFD:
                return NO_MATCH, (-1, -1)
        b = self.units
        pos, rem = state
        if pos < 0:
            return NO_MATCH, state
        if rem >= 0:
            if c != b[pos]:
                return NO_MATCH, (-1, -1)
            pos += 1
            if rem == 0 and b[pos] >= 0x20:
                return (FINAL if b[pos] & 1 else INTERMEDIATE_VALUE), (pos, -1)
            return NO_VALUE, (pos, rem - 1)
        while True:
            node = b[pos]
            pos += 1
            if node < 0x10:
                return self._b_branch(pos, node, c)
            if node < 0x20:
                if c != b[pos]:
                    return NO_MATCH, (-1, -1)
                pos += 1
                length = node - 0x10 - 1
                if length < 0 and b[pos] >= 0x20:
                    return (FINAL if b[pos] & 1 else INTERMEDIATE_VALUE), (pos, -1)
                return NO_VALUE, (pos, length)
            if node & 1:
                return NO_MATCH, (-1, -1)
            pos = self._b_skip_value(pos, node)

    @staticmethod
    def _b_skip_value(pos: int, lead: int) -> int:
        if lead >= 0xA2:  # two or more bytes
            if lead < 0xD8:
                pos += 1
            elif lead < 0xFC:
                pos += 2
            else:
                pos += 3 + ((lead >> 1) & 1)
        return pos

    def _b_branch(self, pos: int, length: int, c: int) -> tuple[int, tuple[int, int]]:
        b = self.units
        if length == 0:
            length = b[pos]
            pos += 1
        length += 1
        while length > 5:
            if c < b[pos]:
                pos += 1
                length >>= 1
                delta = b[pos]
                pos += 1
                if delta >= 0xC0:
                    if delta < 0xF0:
                        delta = ((delta - 0xC0) << 8) | b[pos]
                        pos += 1
                    elif delta < 0xFE:
                        delta = ((delta - 0xF0) << 16) | (b[pos] << 8) | b[pos + 1]
                        pos += 2
                    elif delta == 0xFE:
                        delta = (b[pos] << 16) | (b[pos + 1] << 8) | b[pos + 2]
                        pos += 3
                    else:
                        delta = int.from_bytes(b[pos:pos + 4], "big")
                        pos += 4
                pos += delta
            else:
                pos += 1
                length -= length >> 1
                delta = b[pos]
                pos += 1
                if delta >= 0xC0:
                    if delta < 0xF0:
                        pos += 1
                    elif delta < 0xFE:
                        pos += 2
                    else:
                        pos += 3 + (delta & 1)
        while length > 1:
            if c == b[pos]:
                pos += 1
                node = b[pos]
                if node & 1:
                    return FINAL, (pos, -1)
                pos += 1
                node >>= 1
                if node < 0x51:
                    delta = node - 0x10
                elif node < 0x6C:
                    delta = ((node - 0x51) << 8) | b[pos]
                    pos += 1
                elif node < 0x7E:
                    delta = ((node - 0x6C) << 16) | (b[pos] << 8) | b[pos + 1]
                    pos += 2
                elif node == 0x7E:
                    delta = (b[pos] << 16) | (b[pos + 1] << 8) | b[pos + 2]
                    pos += 3
                else:
                    delta = int.from_bytes(b[pos:pos + 4], "big")
                    pos += 4
                pos += delta
                node = b[pos]
                return (NO_VALUE if node < 0x20 else FINAL if node & 1 else INTERMEDIATE_VALUE), (pos, -1)
            pos += 1
            length -= 1
            lead = b[pos]
            pos = self._b_skip_value(pos + 1, lead)
        if c == b[pos]:
            pos += 1
            node = b[pos]
            return (NO_VALUE if node < 0x20 else FINAL if node & 1 else INTERMEDIATE_VALUE), (pos, -1)
        return NO_MATCH, (-1, -1)
