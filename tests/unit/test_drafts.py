"""Drafts from the context (``csi.core.drafts``): the tokens after the latest earlier occurrence of
the context's tail, longest n-gram first; the draft length doubling while drafts are all accepted,
shrinking after a miss, and pausing (longer each time) after drafts that all missed."""

from __future__ import annotations

from csi.core.drafts import COOLDOWN_MAX, MAX_LENGTH, MIN_LENGTH, START, DraftLength, PromptLookup


def test_the_latest_earlier_occurrence_of_the_tail_is_followed() -> None:
    lookup = PromptLookup([1, 2, 3, 9, 9, 1, 2, 3, 7, 8, 5, 1, 2, 3])
    assert lookup.propose(3) == [7, 8, 5]  # after the second "1 2 3", not the first, nor the tail itself
    lookup.extend([7])
    assert lookup.propose(2) == [8, 5]  # "2 3 7" now matches longest


def test_longer_matches_win_and_single_tokens_do_not_draft() -> None:
    lookup = PromptLookup([5, 6, 40, 41, 42, 7, 6, 50, 51])
    assert lookup.propose(4) == []  # "50 51" never occurred before; one token (51) is not looked up
    lookup.extend([5, 6])
    assert lookup.propose(2) == [40, 41]  # "5 6" occurred at the start (the later "7 6" is another bigram)
    assert PromptLookup([]).propose(4) == [] and PromptLookup([1]).propose(4) == []


def test_drafts_stop_at_the_end_of_the_context() -> None:
    lookup = PromptLookup([1, 2, 3, 1, 2])
    assert lookup.propose(10) == [3, 1, 2]


def test_the_draft_length_follows_the_acceptance() -> None:
    d = DraftLength()
    calls = [(START, START)]
    assert d.wanted() == START
    d.update(START, START)
    assert d.wanted() == 2 * START
    for _ in range(5):
        calls.append((d.length, d.length))
        d.update(d.length, d.length)
    assert d.wanted() == MAX_LENGTH
    d.update(MAX_LENGTH, 3)
    assert d.wanted() == 4  # accepted + 1
    d.update(4, 0)
    assert d.length == MIN_LENGTH and [d.wanted() for _ in range(2)] == [0, MIN_LENGTH]  # one step without
    d.update(MIN_LENGTH, 0)
    assert [d.wanted() for _ in range(3)] == [0, 0, MIN_LENGTH]  # then two
    for _ in range(10):
        d.update(MIN_LENGTH, 0)
    assert d.cooldown == COOLDOWN_MAX
    calls += [(MAX_LENGTH, 3), (4, 0)] + [(MIN_LENGTH, 0)] * 11
    assert (d.drafted, d.accepted) == (sum(c[0] for c in calls), sum(c[1] for c in calls))
