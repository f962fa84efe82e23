"""Generations by timestamp: lookup, the write acceptance window, ring changes and expiry."""

import numpy as np
import pytest

from spark.streams import (
    DEFAULT_GENERATION_DELAY,
    STREAM_ID_DTYPE,
    Generation,
    GenerationDataUnavailable,
    Generations,
    InvalidTopology,
    NoGenerationOperating,
    WriteFromThePast,
    WriteFromTheFuture,
    WriteOutsideAcceptanceWindow,
    build_topology_description,
)

SECOND = 1_000_000
T0 = 1_700_000_000 * SECOND  # first generation, in microseconds
T1 = T0 + 3600 * SECOND
RING = {"a": [-100, 5000], "b": [0]}
GROWN_RING = {**RING, "c": [2500]}


@pytest.fixture
def generations() -> Generations:
    old = build_topology_description(RING, shards=2, rand=1)
    new = build_topology_description(GROWN_RING, shards=2, rand=2)
    return Generations([Generation(T1, new), Generation(T0, old)])


def test_operating_generation_by_timestamp(generations):
    first, second = generations.generations
    assert (first.timestamp, second.timestamp) == (T0, T1)  # kept sorted
    assert generations.operating_at(T0) is first
    assert generations.operating_at(T1 - 1) is first
    assert generations.operating_at(T1) is second  # a generation operates from its timestamp on
    assert generations.operating_at(T1 * 2) is second
    with pytest.raises(NoGenerationOperating):
        generations.operating_at(T0 - 1)


def test_get_stream_switches_at_the_generation_timestamp(generations):
    first, second = generations.generations
    assert generations.get_stream(T1 - 1, 2600) == first.description.get_stream(2600)
    assert generations.get_stream(T1, 2600) == second.description.get_stream(2600)
    assert generations.get_stream(T1 - 1, 2600).index == 2  # (0, 5000] is the third vnode
    assert generations.get_stream(T1, 2600).index == 3  # the new token 2500 split it: (2500, 5000] is fourth
    with pytest.raises(NoGenerationOperating):
        generations.get_stream(T0 - 1, 2600)


def test_vectorized_get_streams(generations):
    rng = np.random.default_rng(4)
    timestamps = rng.integers(T0, T1 + 10 * SECOND, size=2000)
    tokens = rng.integers(-(2**63) + 1, 2**63 - 1, size=2000, dtype=np.int64)
    expected = [generations.get_stream(int(ts), int(t)) for ts, t in zip(timestamps, tokens)]
    assert generations.get_streams(timestamps, tokens) == expected
    with pytest.raises(NoGenerationOperating):
        generations.get_streams(np.array([T0, T0 - 1]), np.array([1, 2]))


def test_generation_known_only_by_timestamp(generations):
    generations.insert(Generation(T1 + SECOND))
    assert generations.get_stream(T1, 1) == generations.generations[1].description.get_stream(1)
    with pytest.raises(GenerationDataUnavailable):
        generations.get_stream(T1 + SECOND, 1)
    # Its description arrives later.
    generations.insert(Generation(T1 + SECOND, build_topology_description(RING, rand=3)))
    assert generations.get_stream(T1 + SECOND, 1).index == 2


def test_conflicting_generations_at_one_timestamp(generations):
    with pytest.raises(InvalidTopology):
        generations.insert(Generation(T0, build_topology_description(GROWN_RING, rand=9)))


class TestAcceptanceWindow:
    """Writes are accepted in [T, C + leeway): T is the generation operating at the coordinator's time C."""

    def test_inside_the_window(self, generations):
        now = T1 + 10 * SECOND
        assert generations.accept_write(T1, now).timestamp == T1
        assert generations.accept_write(now, now).timestamp == T1
        assert generations.accept_write(now + 5 * SECOND - 1, now).timestamp == T1

    def test_from_the_future(self, generations):
        now = T1 + 10 * SECOND
        with pytest.raises(WriteFromTheFuture) as caught:
            generations.accept_write(now + 5 * SECOND, now)
        assert (caught.value.write_ts, caught.value.now) == (now + 5 * SECOND, now)
        assert isinstance(caught.value, WriteOutsideAcceptanceWindow)

    def test_from_the_past(self, generations):
        now = T1 + 10 * SECOND
        with pytest.raises(WriteFromThePast):
            generations.accept_write(T1 - 1, now)  # the previous generation no longer takes writes

    def test_just_before_a_switch_writes_may_target_the_next_generation(self, generations):
        now = T1 - SECOND
        assert generations.accept_write(T1 - 1, now).timestamp == T0
        assert generations.accept_write(T1 + SECOND, now).timestamp == T1
        assert generations.accept_write(T0, now).timestamp == T0

    def test_no_generation_yet(self, generations):
        with pytest.raises(NoGenerationOperating):
            generations.accept_write(T0 - SECOND, T0 - 2 * SECOND)
        with pytest.raises(NoGenerationOperating):
            Generations().accept_write(T0, T0)

    def test_leeway_is_configurable(self):
        generations = Generations([Generation(T0, build_topology_description(RING, rand=1))], leeway=60 * SECOND)
        assert generations.accept_write(T0 + 59 * SECOND, T0).timestamp == T0
        with pytest.raises(WriteFromTheFuture):
            generations.accept_write(T0 + 60 * SECOND, T0)
        with pytest.raises(ValueError):
            Generations(leeway=-1)

    def test_stream_for_write(self, generations):
        now = T1 + SECOND
        assert generations.stream_for_write(now, 2600, now) == generations.get_stream(now, 2600)
        with pytest.raises(WriteFromThePast):
            generations.stream_for_write(T0, 2600, now)


class TestRingChanges:
    def test_first_generation_starts_now_in_whole_milliseconds(self):
        generations = Generations()
        first = generations.add_for_ring(RING, T0 + 1234, rand=1)
        assert first.timestamp == T0 + 1000
        assert first.timestamp_ms == (T0 + 1000) // 1000

    def test_unchanged_ring_makes_no_generation(self):
        generations = Generations()
        generations.add_for_ring(RING, T0, shards=2, rand=1)
        assert generations.add_for_ring(RING, T1, shards=2, rand=99) is None
        assert len(generations.generations) == 1

    def test_changed_ring_or_sharding_makes_a_delayed_generation(self):
        generations = Generations()
        generations.add_for_ring(RING, T0, rand=1)
        second = generations.add_for_ring(GROWN_RING, T1, rand=2)
        assert second.timestamp == T1 + DEFAULT_GENERATION_DELAY == T1 + 65 * SECOND
        third = generations.add_for_ring(GROWN_RING, T1 + 100 * SECOND, shards=4, delay=10 * SECOND, rand=3)
        assert third.timestamp == T1 + 110 * SECOND
        assert len(third.description.entries[0].streams) == 4
        # Until the new generation operates, writes still go to the old one.
        assert generations.get_stream(T1, 2600).index == 2
        assert generations.get_stream(second.timestamp, 2600).index == 3

    def test_new_generation_must_follow_the_latest(self):
        generations = Generations()
        generations.add_for_ring(RING, T1, rand=1)
        with pytest.raises(InvalidTopology):
            generations.add_for_ring(GROWN_RING, T0, rand=1)


class TestExpiry:
    def test_generation_expires_ttl_after_it_stopped_taking_writes(self, generations):
        ttl = 86_400
        dead_from = T1 + ttl * SECOND
        assert generations.expire(dead_from, ttl) == []
        (expired,) = generations.expire(dead_from + 1, ttl)
        assert (expired.timestamp, expired.expired) == (T0, dead_from)
        assert generations.generations[0].expired == dead_from
        assert generations.generations[1].expired is None  # the latest one is still current
        assert generations.expire(dead_from + 2, ttl) == []  # already marked

    def test_zero_ttl_keeps_everything(self, generations):
        assert generations.expire(T1 * 10, 0) == []

    def test_expired_generations_still_answer_lookups(self, generations):
        generations.expire(T1 * 2, 1)
        assert generations.get_stream(T0, 1) == generations.generations[0].description.get_stream(1)


class TestVectorizedStreamIds:
    """The batch path (searchsorted over generations and ranges, then shard arithmetic) equals get_stream."""

    def test_equals_the_per_row_path(self, generations):
        rng = np.random.default_rng(5)
        timestamps = rng.integers(T0, T1 + 10 * SECOND, size=3000)
        timestamps[:4] = [T0, T1 - 1, T1, T1 + 1]
        tokens = rng.integers(-(2**63) + 1, 2**63 - 1, size=3000, dtype=np.int64)
        ids = generations.stream_ids(timestamps, tokens)
        assert ids.dtype == STREAM_ID_DTYPE and ids.shape == (3000,)
        assert ids.tolist() == [generations.get_stream(int(ts), int(t)).value for ts, t in zip(timestamps, tokens)]

    def test_one_timestamp_for_every_token(self, generations):
        tokens = np.array([-5000, 0, 2600, 9000])
        second = generations.generations[1]
        assert generations.stream_ids(T1, tokens).tolist() == second.streams_for_tokens(tokens).tolist()
        assert generations.get_streams(T1, tokens) == second.description.get_streams(tokens)

    def test_no_tokens(self, generations):
        assert generations.stream_ids(T1, np.array([], dtype=np.int64)).shape == (0,)

    def test_generation_known_only_by_timestamp(self, generations):
        generations.insert(Generation(T1 + SECOND))
        with pytest.raises(GenerationDataUnavailable):
            generations.stream_ids(np.array([T1, T1 + SECOND]), np.array([1, 2]))
        with pytest.raises(GenerationDataUnavailable):
            Generation(T0).streams_for_tokens(np.array([1]))
