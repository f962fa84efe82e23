"""shard_of, token_for_next_shard and first_token_for_shard against ScyllaDB's published cases."""

import random

import numpy as np
import pytest

from spark.streams import InvalidTopology, first_token_for_shard, shard_of, shards_of, token_for_next_shard
from spark.streams.sharding import AFTER_ALL_TOKENS, shard_starts
from spark.streams.tokens import MAX_TOKEN, MIN_TOKEN


def signed(unsigned: int) -> int:
    return unsigned - 2**64 if unsigned >= 2**63 else unsigned


@pytest.mark.parametrize(
    ("token", "shards", "msb", "shard"),
    [
        # scylla-rust-driver sharding.rs (from gocql).
        (-9219783007514621794, 4, 12, 3),
        (9222582454147032830, 4, 12, 3),
        # By hand: unbias adds 2**63; drop 12 top bits; shard = floor(fraction * shards).
        (MIN_TOKEN, 4, 12, 0),  # unbiased 0
        (0, 4, 12, 0),  # unbiased 2**63, shifted out entirely
        (MAX_TOKEN, 4, 12, 3),  # unbiased 2**64-1: fraction just below 1
        (MIN_TOKEN + (1 << 50), 4, 12, 1),  # unbiased 2**50 << 12 = 2**62: a quarter
        (MIN_TOKEN + (1 << 51), 4, 12, 2),  # a half
        (MIN_TOKEN + (1 << 52), 4, 12, 0),  # the next 2**52 span starts over
        (MIN_TOKEN + (1 << 62), 4, 0, 1),  # msb 0: a quarter of the whole ring
        (-1, 3, 0, 1),  # unbiased 2**63-1: just under a half of three shards
        (12345, 1, 12, 0),
    ],
)
def test_shard_of_by_hand(token, shards, msb, shard):
    assert shard_of(token, shards, msb) == shard
    assert shards_of(np.array([token]), shards, msb).tolist() == [shard]


def test_vectorized_shard_of_matches_scalar():
    rng = random.Random(11)
    tokens = [rng.randrange(MIN_TOKEN, MAX_TOKEN + 1) for _ in range(3000)] + [MIN_TOKEN, MAX_TOKEN, 0, -1]
    counts = [rng.choice([1, 2, 3, 7, 12, 64, 255, 2**16 + 1]) for _ in tokens]
    msbs = [rng.choice([0, 1, 12, 20, 63]) for _ in tokens]
    expected = [shard_of(t, c, m) for t, c, m in zip(tokens, counts, msbs)]
    assert shards_of(np.array(tokens), np.array(counts), np.array(msbs)).tolist() == expected


# ScyllaDB test/boost/partitioner_test.cc: first key token of each span; span i belongs to shard i % shards.
SHARD_LIMITS = [
    (7, 0, [-9223372036854775807, -6588122883467697006 + 1, -3952873730080618204 + 1, -1317624576693539402 + 1,
            1317624576693539401 + 1, 3952873730080618203 + 1, 6588122883467697005 + 1]),
    (2, 0, [-9223372036854775807, 0]),
    (1, 0, [-9223372036854775807]),
    (7, 2, [-9223372036854775807, -8564559748508006107, -7905747460161236406, -7246935171814466706,
            -6588122883467697005, -5929310595120927305, -5270498306774157604, -4611686018427387904,
            -3952873730080618203, -3294061441733848502, -2635249153387078802, -1976436865040309101,
            -1317624576693539401, -658812288346769700, 0, 658812288346769701, 1317624576693539402,
            1976436865040309102, 2635249153387078803, 3294061441733848503, 3952873730080618204,
            4611686018427387904, 5270498306774157605, 5929310595120927306, 6588122883467697006,
            7246935171814466707, 7905747460161236407, 8564559748508006108]),
    # Published as 32 values: the ring start, then steps of 2**59.
    (2, 4, [-9223372036854775807] + [-8646911284551352320 + 576460752303423488 * i for i in range(31)]),
]


@pytest.mark.parametrize(("shards", "msb", "limits"), SHARD_LIMITS)
def test_scylla_shard_limits(shards, msb, limits):
    assert len(limits) == shards << msb
    for i, limit in enumerate(limits):
        assert shard_of(limit, shards, msb) == i % shards
        if i:
            assert shard_of(limit - 1, shards, msb) == (i - 1) % shards
            assert token_for_next_shard(limit - 1, i % shards, shards, msb) == limit


def test_shard_starts():
    assert shard_starts(1, 12) == (0,)
    assert shard_starts(2, 0) == (0, 2**63)
    assert shard_starts(3, 12) == (0, 0x0005555555555556, 0x000AAAAAAAAAAAAB)


def test_first_tokens_from_the_ring_start():
    # Reference §10.2: 3 shards, msb 12.
    firsts = [first_token_for_shard(MIN_TOKEN, AFTER_ALL_TOKENS, j, 3, 12) for j in range(3)]
    assert firsts == [signed(0x8000000000000001), signed(0x8005555555555556), signed(0x800AAAAAAAAAAAAB)]


def test_scylla_find_first_token_for_shard_cases():
    # ScyllaDB test_find_first_token_for_shard: 3 shards, ignore_msb 10.
    shards, msb = 3, 10

    def first(start, end, shard):
        return first_token_for_shard(start, end, shard, shards, msb)

    b1 = token_for_next_shard(MIN_TOKEN, 1, shards, msb)
    b2 = token_for_next_shard(MIN_TOKEN, 2, shards, msb)
    b3 = token_for_next_shard(MIN_TOKEN, 0, shards, msb)
    end = AFTER_ALL_TOKENS
    assert first(MIN_TOKEN, end, 0) == MIN_TOKEN + 1
    assert first(MIN_TOKEN, end, 1) == b1
    assert first(MIN_TOKEN, end, 2) == b2
    assert first(MIN_TOKEN, MIN_TOKEN + 1, 0) == MIN_TOKEN + 1
    assert first(MIN_TOKEN, b1, 1) == b1
    assert first(MIN_TOKEN, b2, 2) == b2
    assert first(b1 - 1, end, 0) == b3
    assert first(b1, end, 0) == b3
    assert first(b2, end, 0) == b3
    assert first(b1, end, 1) == b1 + 1
    assert first(b2, end, 2) == b2 + 1
    assert first(b3, end, 0) == b3 + 1
    assert first(b1 - 1, end, 1) == b1
    assert first(b2 - 1, end, 2) == b2
    assert first(b3 - 1, end, 0) == b3
    assert first(MIN_TOKEN, b1 - 1, 1) == b1 - 1  # shard 1 owns nothing there: the end
    assert first(MIN_TOKEN, b2 - 1, 2) == b2 - 1
    assert first(b1 - 1, b3 - 1, 0) == b3 - 1
    last_shard = shard_of(MAX_TOKEN, shards, msb)
    assert first(MAX_TOKEN - 1, end, last_shard) == MAX_TOKEN
    assert first(MAX_TOKEN - 1, end, (last_shard + 1) % 3) == AFTER_ALL_TOKENS
    assert first(MAX_TOKEN - 1, end, (last_shard + 2) % 3) == AFTER_ALL_TOKENS
    # Wrap-around ranges continue from the start of the ring.
    assert first(MAX_TOKEN - 1, b3, (last_shard + 1) % 3) == MIN_TOKEN + 1
    assert first(MAX_TOKEN - 1, b3, (last_shard + 2) % 3) == b1
    assert first(MAX_TOKEN - 1, b1 - 1, (last_shard + 2) % 3) == b1 - 1


def brute_force_first(start, end, shard, shards, msb):
    """Walk the ring token by token; cheap only where every shard recurs within a few tokens (msb near 64)."""
    token = start
    while True:
        token = MIN_TOKEN + 1 if token == MAX_TOKEN else token + 1
        if shard_of(token, shards, msb if shards > 1 else 0) == shard:
            return token
        if token == end:
            return end


@pytest.mark.parametrize("shards", [1, 2, 3, 5])
def test_first_token_for_shard_against_brute_force(shards):
    # With msb 60 the shard pattern repeats every 16 tokens, so a walk is cheap.
    msb = 60
    rng = random.Random(shards)
    points = [MIN_TOKEN + 1, MIN_TOKEN + 7, -40, -3, 0, 5, 6, 31, MAX_TOKEN - 9, MAX_TOKEN]
    for _ in range(40):
        start, end = rng.choice(points), rng.choice(points)
        for shard in range(shards):
            expected = brute_force_first(start, end, shard, shards, msb)
            assert first_token_for_shard(start, end, shard, shards, msb) == expected


@pytest.mark.parametrize(("shards", "msb"), [(0, 12), (2**32, 12), (2, 64), (2, -1)])
def test_invalid_sharding(shards, msb):
    with pytest.raises(InvalidTopology):
        shard_of(0, shards, msb)


@pytest.mark.parametrize(("shards", "msb"), [(3, 63), (5, 62)])
def test_shards_that_own_no_token_are_rejected(shards, msb):
    # A span of 2**(64 - msb) tokens cannot give each shard one; ScyllaDB's search would not end either.
    with pytest.raises(InvalidTopology):
        shard_starts(shards, msb)
    with pytest.raises(InvalidTopology):
        first_token_for_shard(0, 10, 0, shards, msb)


def test_every_shard_owns_a_token_at_the_largest_msb_allowed():
    assert shard_starts(2, 63) == (0, 1)
    assert shard_starts(4, 62) == (0, 1, 2, 3)
    assert [shard_of(MIN_TOKEN + v, 4, 62) for v in range(5)] == [0, 1, 2, 3, 0]


def test_shard_out_of_range():
    with pytest.raises(InvalidTopology):
        first_token_for_shard(0, 10, 3, 3, 12)
