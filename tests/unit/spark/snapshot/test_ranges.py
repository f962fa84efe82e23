"""The snapshot's progress arithmetic: the ring cut into ranges, steps over them, and a split range
inheriting its parent's position (what was delivered is never read again, nothing is skipped)."""
from __future__ import annotations

import random

import pytest

from spark.snapshot.ranges import TokenRange, advance, from_offset, refine, ring_ranges, to_offset
from spark.streams.tokens import MAX_TOKEN, MIN_TOKEN


def delivered(ranges: list[TokenRange], tokens: list[int]) -> set[int]:
    return {t for t in tokens for r in ranges if r.start < t <= r.position}


def test_the_ring_is_cut_at_the_generation_ends_and_the_wrap_around_range_in_two():
    ranges = ring_ranges([100, -50, 100])
    assert [(r.start, r.end) for r in ranges] == [(MIN_TOKEN, -50), (-50, 100), (100, MAX_TOKEN)]
    assert not any(r.started or r.done for r in ranges)


def test_a_range_cannot_be_outside_itself():
    with pytest.raises(ValueError, match=r"range \(0, 10\] cannot be at 11"):
        TokenRange(0, 10, 11)


def test_a_split_range_inherits_its_parents_position():
    parent = [TokenRange(MIN_TOKEN, 0, -500), TokenRange(0, MAX_TOKEN, 0)]
    children = refine(parent, [-1000, -500, -100, 50])
    assert [(r.start, r.end, r.position) for r in children] == [
        (MIN_TOKEN, -1000, -1000),  # below the parent's position: delivered
        (-1000, -500, -500),  # ends at it: delivered
        (-500, -100, -500),  # starts at it: nothing yet
        (-100, 0, -100),
        (0, 50, 0),  # a parent not started: neither are its children
        (50, MAX_TOKEN, 50),
    ]


def test_a_parent_done_gives_children_done():
    children = refine([TokenRange(MIN_TOKEN, 10, 10), TokenRange(10, MAX_TOKEN, 10)], [-5, 0])
    assert [r.done for r in children] == [True, True, True, False]


def test_refining_keeps_exactly_what_was_delivered_whatever_the_cuts():
    rand = random.Random(17)
    tokens = sorted(rand.randrange(MIN_TOKEN + 1, MAX_TOKEN) for _ in range(2000))
    for _ in range(50):
        ends = sorted(rand.sample(tokens, 8))
        ranges = [TokenRange(r.start, r.end,
                             rand.choice([r.start, r.end, *[t for t in tokens if r.start < t <= r.end]]))
                  for r in ring_ranges(ends)]
        cuts = rand.sample(tokens, 12)
        children = refine(ranges, cuts)
        assert delivered(children, tokens) == delivered(ranges, tokens)
        assert [r.start for r in children[1:]] == [r.end for r in children[:-1]]  # still a cover of the ring
        assert (children[0].start, children[-1].end) == (MIN_TOKEN, MAX_TOKEN)


def test_a_step_moves_each_open_range_by_its_share_and_finishes_short_ones():
    partitions = {0: [5, 7, 9, 11], 1: [25]}

    def probe(after: int, end: int, limit: int) -> int | None:
        left = [t for t in partitions[0 if end <= 20 else 1] if after < t <= end]
        return left[limit - 1] if len(left) >= limit else None

    def probes(steps: list[tuple[int, int, int]]) -> list[int | None]:
        asked.append(steps)
        return [probe(*step) for step in steps]

    asked = []

    ranges = [TokenRange(0, 20, 0), TokenRange(20, 40, 20), TokenRange(40, 60, 60)]
    step = advance(ranges, probes, partitions=5)  # two open ranges: two partitions each
    assert [r.position for r in step] == [7, 40, 60]
    assert [r.position for r in advance(step, probes, partitions=4)] == [20, 40, 60]  # 2 left of 4 asked
    assert [r.position for r in advance(step, probes, partitions=2)] == [11, 40, 60]
    assert asked[0] == [(0, 20, 2), (20, 40, 2)]  # every open range of a step probed in one call, none done


def test_an_offset_round_trips_through_json_form():
    ranges = refine(ring_ranges([0]), [5])
    assert from_offset(to_offset(123, ranges)) == (123, ranges)
