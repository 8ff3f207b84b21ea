"""Server-sent events read back as they were written (the HTML standard's framing: ``data`` lines
joined by newlines, comments and other fields skipped, CRLF or LF), however the bytes are split
into pieces; and the bound on an event's size holds."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from csi.servers.sse import EventTooLarge, SseParser

LINE = st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=30)
EVENT = st.lists(LINE, min_size=1, max_size=4)


def written(events: list[list[str]], newline: bytes, extras: bool) -> bytes:
    out = b""
    for lines in events:
        if extras:
            out += b": keep-alive" + newline + b"id: 7" + newline + b"event: message" + newline
        out += b"".join(b"data: " + line.encode() + newline for line in lines) + newline
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(EVENT, max_size=6), st.sampled_from([b"\n", b"\r\n"]), st.booleans(), st.data())
def test_events_read_back_as_written_however_split(events, newline, extras, data):
    raw = written(events, newline, extras)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=8)))
    parser = SseParser(1 << 20)
    got = []
    for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True):
        got += parser.feed(raw[a:b])
    # the standard dispatches no event whose data is empty (one empty `data:` line)
    assert got == [("data", "\n".join(lines).encode()) for lines in events if lines != [""]]


def test_an_unfinished_event_is_not_an_event_and_error_lines_are_their_own():
    parser = SseParser(1 << 20)
    assert parser.feed(b'error: {"message": "x"}\n\ndata: {"a": 1}\n') == [("error", b'{"message": "x"}')]
    assert parser.feed(b"\n") == [("data", b'{"a": 1}')]


def test_a_line_or_an_event_past_the_limit_is_refused_as_it_grows():
    parser = SseParser(1000)
    with pytest.raises(EventTooLarge):
        for _ in range(20):
            parser.feed(b"a" * 100)  # one line without end
    parser = SseParser(1000)
    with pytest.raises(EventTooLarge):
        for _ in range(20):
            parser.feed(b"data: " + b"b" * 90 + b"\n")  # one event of many lines
