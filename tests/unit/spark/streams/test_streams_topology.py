"""Building topology descriptions from a ring, and looking streams up in them."""

import random

import numpy as np
import pytest

from spark.streams import (
    InvalidTopology,
    StreamId,
    TokenRangeDescription,
    TopologyDescription,
    build_topology_description,
    rebuild_from_stream_set,
    rebuild_topology_description,
    shard_of,
)
from spark.streams.tokens import MAX_TOKEN, MIN_TOKEN

# With ignore_msb 12 and 2 shards, every 2**52-token span is split in halves: shard 0, then shard 1.
SPAN = 2**52
HALF = 2**51
RING = {"A": [0, HALF + 10], "B": [100], "C": [-SPAN]}
SHARDS = {"A": 2, "B": 2, "C": 1}
# (range end, stream tokens by shard), worked out by hand.
EXPECTED = [
    (-SPAN, [HALF + 11]),  # wraps from HALF+10; C has one shard
    (0, [-SPAN + 1, -HALF]),
    (100, [1, 100]),  # shard 1 owns nothing in (0, 100]: its stream falls back to the end
    (HALF + 10, [101, HALF]),
]


@pytest.fixture
def description() -> TopologyDescription:
    return build_topology_description(RING, shards=SHARDS, ignore_msb=12, rand=42)


def test_entries_by_hand(description):
    got = [(entry.token_range_end, [s.token for s in entry.streams]) for entry in description.entries]
    assert got == EXPECTED
    for index, entry in enumerate(description.entries):
        assert entry.sharding_ignore_msb == 12  # kept even for the one-shard node, as ScyllaDB does
        assert {s.index for s in entry.streams} == {index}
        assert {s.version for s in entry.streams} == {1}


@pytest.mark.parametrize(
    ("token", "expected_stream_token"),
    [
        (-SPAN, HALF + 11),  # equal to the first end: entry 0
        (MIN_TOKEN + 1, HALF + 11),  # below the first end: entry 0
        (-SPAN + 1, -SPAN + 1),  # just above an end: the next entry
        (0, -SPAN + 1),  # equal to an end; token 0 is on shard 0
        (-1, -HALF),  # shard 1 half of the span before 0
        (50, 1),
        (100, 1),
        (HALF + 5, HALF),
        (HALF + 10, HALF),
        (HALF + 11, HALF + 11),  # above the last end: wraps to entry 0
        (MAX_TOKEN, HALF + 11),
    ],
)
def test_get_stream_at_boundaries(description, token, expected_stream_token):
    assert description.get_stream(token).token == expected_stream_token
    (index,) = description.stream_indices(np.array([token]))
    assert description.streams[index].token == expected_stream_token


def test_fallback_stream_is_never_used(description):
    fallback = description.entries[2].streams[1]
    tokens = np.arange(1, 101)
    assert fallback not in description.get_streams(tokens)


def test_seed_makes_random_bits_reproducible():
    first = build_topology_description(RING, shards=SHARDS, rand=7)
    assert first == build_topology_description(RING, shards=SHARDS, rand=random.Random(7))
    other = build_topology_description(RING, shards=SHARDS, rand=8)
    assert first != other
    assert [s.token for s in first.streams] == [s.token for s in other.streams]


def random_ring(rng: random.Random, nodes: int, vnodes: int) -> dict[str, list[int]]:
    tokens = list({rng.randrange(MIN_TOKEN + 1, MAX_TOKEN + 1) for _ in range(nodes * vnodes)})
    rng.shuffle(tokens)
    return {f"n{i}": tokens[i * vnodes : (i + 1) * vnodes] for i in range(nodes)}


@pytest.mark.parametrize("seed", range(5))
def test_invariants_on_random_rings(seed):
    rng = random.Random(seed)
    ring = random_ring(rng, nodes=4, vnodes=16)
    shards = {node: rng.choice([1, 2, 3, 8]) for node in ring}
    description = build_topology_description(ring, shards=shards, ignore_msb=rng.choice([0, 12]), rand=seed)
    ends = sorted(t for tokens in ring.values() for t in tokens)
    assert [e.token_range_end for e in description.entries] == ends
    owner = {t: node for node, tokens in ring.items() for t in tokens}
    for index, entry in enumerate(description.entries):
        start, end = ends[index - 1], entry.token_range_end
        assert len(entry.streams) == shards[owner[end]]
        for shard, stream in enumerate(entry.streams):
            inside = start < stream.token <= end if start < end else (stream.token > start or stream.token <= end)
            assert inside
            assert stream.token == end or shard_of(stream.token, len(entry.streams), entry.sharding_ignore_msb) == shard


@pytest.mark.parametrize("seed", range(3))
def test_vectorized_lookup_matches_scalar(seed):
    rng = random.Random(seed)
    ring = random_ring(rng, nodes=5, vnodes=32)
    description = build_topology_description(ring, shards=4, rand=seed)
    ends = [e.token_range_end for e in description.entries]
    tokens = [rng.randrange(MIN_TOKEN + 1, MAX_TOKEN + 1) for _ in range(3000)]
    tokens += ends + [e + 1 for e in ends if e < MAX_TOKEN] + [e - 1 for e in ends] + [MIN_TOKEN + 1, MAX_TOKEN]
    assert description.get_streams(np.array(tokens)) == [description.get_stream(t) for t in tokens]


def test_single_token_ring_covers_everything():
    description = build_topology_description({"solo": [10]}, shards=2, ignore_msb=12, rand=1)
    (entry,) = description.entries
    # (10, 10] is the whole ring: shard 0's first token after 10 is 11, shard 1's the next half span.
    assert [s.token for s in entry.streams] == [11, HALF]
    assert description.get_stream(MIN_TOKEN + 1) == entry.streams[0]
    assert description.get_stream(HALF) == entry.streams[1]


def test_ring_ending_at_max_token_wraps_from_the_ring_start():
    description = build_topology_description({"a": [MAX_TOKEN], "b": [-5]}, shards=1, rand=1)
    assert [s.token for s in description.streams] == [MIN_TOKEN + 1, -4]


def test_tokens_may_be_strings_as_in_system_peers():
    assert build_topology_description({"a": ["5", "-7"]}, rand=1).entries[1].token_range_end == 5


@pytest.mark.parametrize(
    "ring",
    [{}, {"a": []}, {"a": [1], "b": [1]}, {"a": [MIN_TOKEN]}, {"a": [MAX_TOKEN + 1]}],
)
def test_invalid_rings(ring):
    with pytest.raises(InvalidTopology):
        build_topology_description(ring)


def test_per_node_settings_must_cover_every_node():
    with pytest.raises(InvalidTopology):
        build_topology_description({"a": [1], "b": [2]}, shards={"a": 2})


def test_description_validation():
    stream = StreamId.create(1, 0)
    with pytest.raises(InvalidTopology):
        TopologyDescription([])
    with pytest.raises(InvalidTopology):
        TopologyDescription([TokenRangeDescription(5, (stream,), 12), TokenRangeDescription(5, (stream,), 12)])
    with pytest.raises(InvalidTopology):
        TokenRangeDescription(5, (), 12)


def test_rebuild_from_description_rows(description):
    rng = random.Random(5)
    rows = []
    for entry in description.entries:
        streams = list(entry.streams)
        rng.shuffle(streams)  # the set's element order is not shard order
        rows.append((entry.token_range_end, streams))
    rng.shuffle(rows)
    rebuilt = rebuild_topology_description(rows, ignore_msb=12)
    assert rebuilt == description


def test_rebuild_with_tied_fallback_slots():
    ring = {"a": [0, 10]}
    original = build_topology_description(ring, shards=8, ignore_msb=12, rand=3)
    rows = [(e.token_range_end, sorted(e.streams)) for e in original.entries]
    rebuilt = rebuild_topology_description(rows, ignore_msb=12)
    tokens = np.arange(-50, 50)
    assert rebuilt.get_streams(tokens) == original.get_streams(tokens)


def test_rebuild_rejects_foreign_streams(description):
    rows = [(e.token_range_end, e.streams) for e in description.entries]
    rows[0] = (rows[0][0], [StreamId.create(12345, 0)])
    with pytest.raises(InvalidTopology):
        rebuild_topology_description(rows)


def test_place_reports_range_shard_and_stream(description):
    placement = description.place(-1)
    assert (placement.token, placement.index, placement.start, placement.end) == (-1, 1, -SPAN, 0)
    assert placement.shard == 1 and placement.stream.token == -HALF
    wrapped = description.place(MAX_TOKEN)
    assert (wrapped.index, wrapped.start, wrapped.end, wrapped.shard) == (0, HALF + 10, -SPAN, 0)
    assert description.token_range(0) == (HALF + 10, -SPAN)


def test_stream_ids_keep_trailing_zero_bytes():
    # A version-0 id may end in zero bytes; numpy's "S16" would strip them.
    zero = StreamId(bytes(16))
    description = TopologyDescription([TokenRangeDescription(5, (zero,), 12)])
    (value,) = description.stream_ids(np.array([1])).tolist()
    assert value == bytes(16)


def test_a_used_stream_can_tie_with_fallback_slots():
    # (0, 1] holds one token, owned by shard 1: shard 1's stream sits on 1, and shard 0 falls back to 1 too.
    description = build_topology_description({"a": [0, 1]}, shards=2, ignore_msb=0, rand=1)
    entry = description.entries[1]
    assert [s.token for s in entry.streams] == [1, 1]
    assert description.get_stream(1) == entry.streams[1]  # a used stream, tied with the fallback
    # A set keeps both ids but not which one is used, so a rebuild may swap them.
    rebuilt = rebuild_topology_description([(e.token_range_end, sorted(e.streams)) for e in description.entries], 0)
    assert set(rebuilt.entries[1].streams) == set(entry.streams)


def test_rebuild_from_stream_set_by_hand(description):
    # The v1 layout: every stream of the generation in one set, nothing else.
    rebuilt = rebuild_from_stream_set(sorted(description.streams), ignore_msb=12)
    assert rebuilt == description
    two_ranges = rebuild_from_stream_set([StreamId.create(5, 0), StreamId.create(-5, 1)], ignore_msb=12)
    assert [e.token_range_end for e in two_ranges.entries] == [-6, 4]


def test_rebuild_from_stream_set_of_a_one_token_ring():
    description = build_topology_description({"solo": [10]}, shards=2, ignore_msb=12, rand=1)
    rebuilt = rebuild_from_stream_set(description.streams, ignore_msb=12)
    assert rebuilt == description
    ring_end = build_topology_description({"solo": [MAX_TOKEN]}, rand=1)
    assert rebuild_from_stream_set(ring_end.streams, ignore_msb=12) == ring_end


@pytest.mark.parametrize(
    "streams",
    [
        [],
        [StreamId.create(5, 1)],  # indices must start at 0
        [StreamId.create(5, 0), StreamId.create(-5, 2)],  # and have no gap
        # Range 1 would start at 6 and range 2 at 5: the tokens contradict the indices.
        [StreamId.create(5, 0), StreamId.create(7, 1), StreamId.create(6, 2)],
        [StreamId.create(5, 0), StreamId.create(99, 1, 1), StreamId.create(7, 1, 2)],  # 99 is no shard's first
        [StreamId.create(5, 0), StreamId.create(MIN_TOKEN, 1)],  # a range would end before the ring starts
    ],
)
def test_rebuild_from_stream_set_rejects_foreign_sets(streams):
    with pytest.raises(InvalidTopology):
        rebuild_from_stream_set(streams)
