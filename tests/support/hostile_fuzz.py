"""The hostile server's fuzzer: a polite answer bent by a few random mutations (its bytes cut, flipped,
repeated or dropped; junk events and lines; numbers out of range; its framing and content type lied
about), sent in random pieces at random pace, then closed, held or reset. The request's ``seed`` (or
``"fuzz <seed>"`` in its text) picks the mutations, so a failing case is replayed by its seed."""

from __future__ import annotations

import json
import random
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.support.hostile_behaviors import Exchange

JUNK_LINES = [b": keep-alive", b"data: ", b"data: {}", b"data: [DONE]", b"event: message", b"error: {}",
              b"data: {\"choices\": null}", b"data: {\"choices\": [{\"delta\": {\"content\": null}}]}",
              b"data: {\"error\": \"x\"}", b"retry: 10", b"id: 7", b"data: \xff\xfe", b"data: 1e999",
              b"data: {\"choices\": [{\"index\": 99, \"delta\": {\"tool_calls\": [{\"index\": 5000}]}}]}",
              b"data: {\"usage\": {\"prompt_tokens\": -1}}", b"data: [" * 50]
NUMBERS = [b"-1", b"1e308", b"\"x\"", b"null", b"[]", b"{}", b"9007199254740993", b"-0", b"true"]
KINDS = ["text/event-stream", "application/json", "text/plain", "text/html", "", "application/x-ndjson"]


def seed_of(x: Exchange) -> int:
    seed = x.body.get("seed")
    if isinstance(seed, int):
        return seed
    found = re.search(r"fuzz (\d+)", json.dumps(x.body))
    return int(found.group(1)) if found else 0


def _mutate(data: bytes, rng: random.Random) -> bytes:
    op = rng.randrange(8)
    at = rng.randrange(len(data) + 1)
    if op == 0:  # cut
        return data[:at]
    if op == 1:  # flip bytes
        out = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            if out:
                out[rng.randrange(len(out))] = rng.randrange(256)
        return bytes(out)
    if op == 2:  # a junk line
        return data[:at] + b"\n" + rng.choice(JUNK_LINES) + b"\n\n" + data[at:]
    if op == 3:  # a range repeated
        end = min(len(data), at + rng.randint(1, 400))
        return data[:end] + data[at:end] * rng.randint(1, 20) + data[end:]
    if op == 4:  # a range dropped
        return data[:at] + data[at + rng.randint(1, 200):]
    if op == 5:  # a number out of range
        numbers = list(re.finditer(rb"-?\d+(\.\d+)?", data))
        if numbers:
            m = rng.choice(numbers)
            return data[:m.start()] + rng.choice(NUMBERS) + data[m.end():]
        return data
    if op == 6:  # newlines as the standard allows them, or not
        return data.replace(b"\n\n", rng.choice([b"\r\n\r\n", b"\n", b"\r\r", b"\n\n\n"]))
    return data + data[: rng.randint(0, len(data))]  # more after the end


def fuzz(x: Exchange) -> None:
    """One fuzzed answer, by the request's seed."""
    rng = random.Random(seed_of(x))
    data = x.body_bytes(done=rng.random() < 0.8, usage=rng.random() < 0.8)
    for _ in range(rng.randint(1, 3)):
        data = _mutate(data, rng)
    kind = rng.choice(KINDS) if rng.random() < 0.2 else None
    length = rng.choice([len(data), None, len(data) + rng.randint(1, 50), max(len(data) - rng.randint(1, 50), 0)])
    status = "200 OK" if rng.random() < 0.9 else rng.choice(["500 Oops", "404 Not Found", "429 Slow", "204 No"])
    x.head(status, kind=kind, length=length)
    pos = 0
    while pos < len(data):
        size = rng.choice([1, 7, 64, 1000, 1 << 16])
        x.conn.send(data[pos:pos + size])
        pos += size
        if rng.random() < 0.05:
            x.conn.wait(rng.choice([0.01, 0.05, 0.2]))
    ending = rng.random()
    if ending < 0.15:
        x.conn.wait(60)
    elif ending < 0.25:
        x.conn.reset()
