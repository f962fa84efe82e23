"""``python -m spark.streams`` against the real Cassandra: describe, stream and generation --cassandra."""

from __future__ import annotations

import functools
import json

import pytest

from spark.streams import Generation, build_topology_description, generations_to_json, read_ring, token_of
from spark.streams.storage import GenerationStore
from tests.support import streams_cli, streams_cli_json

SECOND = 1_000_000
T0 = 1_700_000_000 * SECOND
T1 = T0 + 3600 * SECOND


# Reading the ring and the generations from a live node takes longer than the unit tests' runs.
run = functools.partial(streams_cli, timeout=120)
run_json = functools.partial(streams_cli_json, timeout=120)


@pytest.fixture
def address(stack) -> str:
    return f"{stack.cassandra_host}:{stack.cassandra_port}"


@pytest.fixture
def published(cql, keyspace: str):
    ring = read_ring(cql)
    store = GenerationStore(cql, keyspace)
    store.create_schema()
    old = Generation(T0, build_topology_description(ring, shards=2, rand=1))
    new = Generation(T1, build_topology_description({**ring, "joining": (42,)}, shards=2, rand=2))
    store.publish(old)
    store.publish(new)
    return store, old, new


def test_describe(published, address, keyspace: str) -> None:
    store, old, new = published
    assert run_json("describe", "--cassandra", address, "--keyspace", keyspace) == generations_to_json(
        store.load().generations
    )
    text = run("describe", "--cassandra", address, "--keyspace", keyspace).stdout
    assert f"generation {T0} (2023-11-14 22:13:20.000 UTC), until {T1}" in text
    assert "16 token ranges, 32 streams" in text and "17 token ranges, 34 streams" in text
    assert f"shard 1: {new.description.entries[0].streams[1].hex()}" in text


def test_stream_of_a_row_written_to_the_node(published, address, cql, keyspace: str) -> None:
    _, old, new = published
    cql.execute(f"CREATE TABLE {keyspace}.t (a int, b text, PRIMARY KEY ((a, b)))")
    cql.execute(f"INSERT INTO {keyspace}.t (a, b) VALUES (7, 'ünïcode')")
    live_token = cql.execute(f"SELECT token(a, b) AS tok FROM {keyspace}.t").one().tok
    key = ["--type", "int,text", "7", "ünïcode"]
    before = run_json("stream", "--ts", str(T1 - 1), "--cassandra", address, "--keyspace", keyspace, *key)
    at = run_json("stream", "--ts", str(T1), "--cassandra", address, "--keyspace", keyspace, *key)
    assert before["token"] == at["token"] == live_token == token_of([7, "ünïcode"], ["int", "text"])
    placement = old.description.place(live_token)
    assert before == {
        "token": live_token,
        "generation": T0,
        "range": {"start": placement.start, "end": placement.end},
        "index": placement.index,
        "shard": placement.shard,
        "stream_id": placement.stream.hex(),
    }
    assert (at["generation"], at["stream_id"]) == (T1, new.description.get_stream(live_token).hex())


def test_stream_outcomes_against_the_node(published, address, keyspace: str) -> None:
    early = run("stream", "--ts", str(T0 - 1), "--cassandra", address, "--keyspace", keyspace, "--type", "int", "1")
    assert early.returncode == 2 and "could not find any CDC stream" in early.stderr
    past = run(
        "stream", "--ts", str(T0), "--now", str(T1 + SECOND), "--cassandra", address, "--keyspace", keyspace,
        "--type", "int", "1",
    )
    assert past.returncode == 2 and "precedes the current generation" in past.stderr


def test_generation_from_the_live_ring(cql, address) -> None:
    result = run_json("generation", "--cassandra", address, "--shards", "2")
    (tokens,) = read_ring(cql).values()
    assert [entry["token_range_end"] for entry in result["entries"]] == list(tokens)
    assert {len(entry["streams"]) for entry in result["entries"]} == {2}


def test_empty_and_missing_stores(cql, keyspace: str, address) -> None:
    GenerationStore(cql, keyspace).create_schema()
    assert run("describe", "--cassandra", address, "--keyspace", keyspace).stdout.strip() == "no generations published"
    missing = run("describe", "--cassandra", address, "--keyspace", "no_such_keyspace")
    assert missing.returncode == 2 and "no_such_keyspace" in missing.stderr and "Traceback" not in missing.stderr


def test_unreachable_cassandra(stack) -> None:
    completed = run("describe", "--cassandra", f"{stack.cassandra_host}:1", "--json")
    assert completed.returncode == 2
    assert f"Cassandra at {stack.cassandra_host}:1" in completed.stderr and "Traceback" not in completed.stderr
    assert json.loads(completed.stdout)["kind"] == "StoreUnavailable"
