"""Generations stored in the real Cassandra: layout, round trips, trust, idempotence, v1 → v2 rewrite."""

from __future__ import annotations

import uuid

import pytest

from spark.streams import Generation, InvalidTopology, build_topology_description, read_ring
from spark.streams.rewrite import ALREADY_REWRITTEN, NO_V1_TABLE, REWRITTEN, rewrite_v1_to_v2
from spark.streams.storage import GenerationStore

SECOND = 1_000_000
T0 = 1_700_000_000 * SECOND
T1 = T0 + 3600 * SECOND
T2 = T1 + 3600 * SECOND
DAY = 86_400


@pytest.fixture
def store(cql, keyspace: str) -> GenerationStore:
    store = GenerationStore(cql, keyspace)
    store.create_schema()
    return store


@pytest.fixture
def ring(cql) -> dict[str, tuple[int, ...]]:
    return read_ring(cql)


def grown(ring: dict[str, tuple[int, ...]], *tokens: int) -> dict[str, tuple[int, ...]]:
    return {**ring, "joining": tokens}


def count(store: GenerationStore, table: str) -> int:
    return store.session.execute(f"SELECT COUNT(*) FROM {store.keyspace}.{table}").one()[0]


def columns(cql, keyspace: str, table: str) -> dict[str, tuple[str, str, str]]:
    rows = cql.execute(
        "SELECT column_name, kind, type, clustering_order FROM system_schema.columns"
        " WHERE keyspace_name = %s AND table_name = %s",
        (keyspace, table),
    )
    return {row.column_name: (row.kind, row.type, row.clustering_order) for row in rows}


def test_schema_lays_out_tables_as_scylladb_does(cql) -> None:
    keyspace = f"ringtail_{uuid.uuid4().hex[:8]}"
    store = GenerationStore(cql, keyspace)
    try:
        store.create_schema({"class": "SimpleStrategy", "replication_factor": 1})
        store.create_schema()  # again: nothing changes, nothing fails
        replication = cql.execute(
            "SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = %s", (keyspace,)
        ).one().replication
        assert replication["class"].endswith("SimpleStrategy") and replication["replication_factor"] == "1"
        assert columns(cql, keyspace, "cdc_generation_timestamps") == {
            "key": ("partition_key", "text", "none"),
            "time": ("clustering", "timestamp", "desc"),
            "expired": ("regular", "timestamp", "none"),
        }
        assert columns(cql, keyspace, "cdc_streams_descriptions_v2") == {
            "time": ("partition_key", "timestamp", "none"),
            "range_end": ("clustering", "bigint", "asc"),
            "streams": ("regular", "frozen<set<blob>>", "none"),
        }
        assert columns(cql, keyspace, "cdc_generation_descriptions_v2") == {
            "time": ("partition_key", "timestamp", "none"),
            "range_end": ("clustering", "bigint", "asc"),
            "streams": ("regular", "frozen<list<blob>>", "none"),
            "ignore_msb": ("regular", "tinyint", "none"),
            "num_ranges": ("static", "int", "none"),
        }
        assert columns(cql, keyspace, "cdc_local") == {
            "key": ("partition_key", "text", "none"),
            "streams_timestamp": ("regular", "timestamp", "none"),
        }
    finally:
        cql.execute(f"DROP KEYSPACE IF EXISTS {keyspace}")


def test_round_trip(store: GenerationStore, ring) -> None:
    first = Generation(T0, build_topology_description(ring, shards=2, rand=1), expired=T2 + 5 * SECOND)
    # The joining node has its own sharding.
    shards = {**{node: 2 for node in ring}, "joining": 3}
    msb = {**{node: 12 for node in ring}, "joining": 0}
    second = Generation(T1, build_topology_description(grown(ring, 12345), shards=shards, ignore_msb=msb, rand=2))
    store.publish(second)
    store.publish(first)
    loaded = store.load(leeway=9)
    assert loaded.generations == (first, second)
    assert loaded.leeway == 9
    # The user-facing rows: one per range, the range's streams as a set.
    rows = list(store.session.execute(
        f"SELECT range_end, streams FROM {store.keyspace}.cdc_streams_descriptions_v2 WHERE time = %s",
        (T1 // 1000,),
    ))
    assert [(row.range_end, set(row.streams)) for row in rows] == [
        (e.token_range_end, {s.value for s in e.streams}) for e in second.description.entries
    ]
    newest_first = [row.time for row in store.session.execute(
        f"SELECT toUnixTimestamp(time) AS time FROM {store.keyspace}.cdc_generation_timestamps WHERE key = 'timestamps'"
    )]
    assert newest_first == [T1 // 1000, T0 // 1000]


def test_switch_at_exactly_the_stored_timestamp(store: GenerationStore, ring) -> None:
    old = build_topology_description(ring, rand=1)
    new = build_topology_description(grown(ring, 777), rand=2)
    store.publish(Generation(T0, old))
    store.publish(Generation(T1, new))
    generations = store.load()
    for token in (-(2**62), 0, 778, 2**62):
        assert generations.get_stream(T1 - 1, token) == old.get_stream(token)  # T - 1 µs: old generation
        assert generations.get_stream(T1, token) == new.get_stream(token)


def test_a_generation_without_its_timestamp_row_is_not_trusted(store: GenerationStore, ring) -> None:
    trusted = Generation(T0, build_topology_description(ring, rand=1))
    partial = Generation(T1, build_topology_description(grown(ring, 99), rand=2))
    store.publish(trusted)
    store.publish(partial)
    # As if publishing stopped before its last write.
    store.session.execute(
        f"DELETE FROM {store.keyspace}.cdc_generation_timestamps WHERE key = 'timestamps' AND time = %s",
        (T1 // 1000,),
    )
    loaded = store.load()
    assert loaded.generations == (trusted,)
    assert loaded.get_stream(T1 + SECOND, 100) == trusted.description.get_stream(100)
    assert not store.is_published(T1 // 1000)
    store.publish(partial)  # finishing the publication makes it visible
    assert store.load().generations == (trusted, partial)


def test_publishing_is_idempotent(store: GenerationStore, ring) -> None:
    generation = Generation(T0, build_topology_description(ring, shards=3, rand=1))
    store.publish(generation)
    tables = ("cdc_generation_descriptions_v2", "cdc_streams_descriptions_v2", "cdc_generation_timestamps")
    counts = [count(store, table) for table in tables]
    store.publish(generation)
    store.publish(generation)
    assert [count(store, table) for table in tables] == counts == [16, 16, 1]
    assert store.load().generations == (generation,)
    other = Generation(T0, build_topology_description(ring, shards=3, rand=2))
    with pytest.raises(InvalidTopology, match="already published"):
        store.publish(other)


def test_generations_published_only_in_the_user_facing_table(store: GenerationStore, ring) -> None:
    """A copy of ScyllaDB's tables has no internal rows: streams are matched to shards by token."""
    description = build_topology_description(ring, shards=4, ignore_msb=12, rand=5)
    time_ms = T0 // 1000
    for entry in description.entries:
        store.session.execute(
            f"INSERT INTO {store.keyspace}.cdc_streams_descriptions_v2 (time, range_end, streams) VALUES (%s, %s, %s)",
            (time_ms, entry.token_range_end, {s.value for s in entry.streams}),
        )
    store.session.execute(
        f"INSERT INTO {store.keyspace}.cdc_generation_timestamps (key, time) VALUES ('timestamps', %s)", (time_ms,)
    )
    assert store.load(ignore_msb=12).generations == (Generation(T0, description),)


def test_a_generation_with_no_readable_ranges_is_known_by_timestamp_only(store: GenerationStore) -> None:
    store.session.execute(
        f"INSERT INTO {store.keyspace}.cdc_generation_timestamps (key, time) VALUES ('timestamps', %s)", (T0 // 1000,)
    )
    assert store.load().generations == (Generation(T0),)


V1_SCHEMA = (
    "CREATE TABLE {}.cdc_streams_descriptions"
    " (time timestamp PRIMARY KEY, streams frozen<set<blob>>, expired timestamp)"
)


def write_v1(store: GenerationStore, generation: Generation) -> None:
    store.session.execute(
        f"INSERT INTO {store.keyspace}.cdc_streams_descriptions (time, streams) VALUES (%s, %s)",
        (generation.timestamp_ms, {s.value for s in generation.description.streams}),
    )


def write_internal_only(store: GenerationStore, generation: Generation) -> None:
    entries = generation.description.entries
    for e in entries:
        store.session.execute(
            f"INSERT INTO {store.keyspace}.cdc_generation_descriptions_v2"
            " (time, range_end, streams, ignore_msb, num_ranges) VALUES (%s, %s, %s, %s, %s)",
            (generation.timestamp_ms, e.token_range_end, [s.value for s in e.streams], e.sharding_ignore_msb,
             len(entries)),
        )


def test_rewrite_v1_to_v2(store: GenerationStore, ring) -> None:
    assert rewrite_v1_to_v2(store, ttl_seconds=DAY).outcome == NO_V1_TABLE
    store.session.execute(V1_SCHEMA.format(store.keyspace))
    now = T2 + 3600 * SECOND
    def generation(timestamp: int, *joining: int) -> Generation:
        return Generation(timestamp, build_topology_description(grown(ring, *joining), shards=2, rand=timestamp))

    too_old = generation(now - 3 * DAY * SECOND)
    # Operating when the TTL horizon (now - TTL - 10 s) passed: its rows may still live.
    operating_at_horizon = generation(now - 2 * DAY * SECOND, 1)
    with_internal_rows = generation(now - DAY * SECOND + 5 * SECOND, 1, 2)
    already_published = generation(now - 3600 * SECOND, 1, 2, 3)
    legacy = now - 60 * SECOND  # ids made before versioned ids cannot be placed in ranges
    for generation in (too_old, operating_at_horizon, with_internal_rows, already_published):
        write_v1(store, generation)
    store.session.execute(
        f"INSERT INTO {store.keyspace}.cdc_streams_descriptions (time, streams) VALUES (%s, %s)",
        (legacy // 1000, {bytes.fromhex("365fd1a9ae34373954529ac8169dfb93")}),
    )
    write_internal_only(store, with_internal_rows)
    store.publish(already_published)

    report = rewrite_v1_to_v2(store, ttl_seconds=DAY, now=now)
    assert report.outcome == REWRITTEN
    assert report.too_old == (too_old.timestamp,)
    assert report.rewritten == (operating_at_horizon.timestamp, with_internal_rows.timestamp)
    assert report.already_published == (already_published.timestamp,)
    assert report.unrecoverable == (legacy,)
    assert store.load().generations == (operating_at_horizon, with_internal_rows, already_published)
    marker = store.session.execute(
        f"SELECT toUnixTimestamp(streams_timestamp) AS ts FROM {store.keyspace}.cdc_local WHERE key = 'rewritten'"
    ).one()
    assert marker.ts == legacy // 1000

    # Marked done: a second run changes nothing.
    rows = count(store, "cdc_streams_descriptions_v2")
    assert rewrite_v1_to_v2(store, ttl_seconds=DAY, now=now).outcome == ALREADY_REWRITTEN
    # Without the mark it runs again, finds everything in place and writes nothing new.
    store.session.execute(f"DELETE FROM {store.keyspace}.cdc_local WHERE key = 'rewritten'")
    again = rewrite_v1_to_v2(store, ttl_seconds=DAY, now=now)
    assert again.rewritten == () and len(again.already_published) == 3
    assert count(store, "cdc_streams_descriptions_v2") == rows


def test_rewrite_without_ttl_keeps_every_generation(store: GenerationStore, ring) -> None:
    store.session.execute(V1_SCHEMA.format(store.keyspace))
    generations = [
        Generation(T0, build_topology_description(ring, rand=1)),
        Generation(T1, build_topology_description(grown(ring, 5), rand=2)),
    ]
    for generation in generations:
        write_v1(store, generation)
    report = rewrite_v1_to_v2(store, ttl_seconds=0, now=T2 * 100)
    assert report.rewritten == (T0, T1) and report.too_old == ()
    assert store.load().generations == tuple(generations)
