"""A subscription started from a snapshot, on the real stack: a table with rows of several CQL types
(collections, a UDT, a static column), writes going on while the snapshot runs, the runner killed
with `kill -9` in the middle and a generation with finer ranges published before the next runner
takes over; at the end the sink's log, replayed by write time, equals `SELECT *`. (A reset to a new
snapshot is tried on a small table, in test_server.)

The table's size is `RINGTAIL_TEST_SNAPSHOT_PARTITIONS` partitions of 10 rows: 10,000 by default, the
100,000 rows the snapshot is held to; 400 still spreads over every range and several micro-batches.
"""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import threading
import time
import uuid
from collections import Counter

import pyarrow.compute as pc
import pytest
from cassandra.concurrent import execute_concurrent, execute_concurrent_with_args
from cassandra.query import BatchStatement, BatchType

from schemas.avro.serializer import topic_name
from schemas.runtime.kafka import end_offsets
from schemas.runtime.session import connect
from schemas.tables.loader import read_table
from spark import rows as R
from spark.snapshot.raw import raw_rows
from spark.snapshot.rows import TableRows
from spark.snapshot.source import probe
from spark.streams.generations import Generation
from spark.streams.ring import read_ring
from spark.streams.storage import GenerationStore
from spark.streams.tokens import MAX_TOKEN, MIN_TOKEN
from spark.streams.topology import build_topology_description
from spark.subscriptions.model import Change
from tests.integration.lake import delta_log
from tests.integration.serving import runner_process
from tests.support import wait_for

pytestmark = pytest.mark.integration

PARTITIONS = int(os.environ.get("RINGTAIL_TEST_SNAPSHOT_PARTITIONS", "10000"))
ROWS_PER_PARTITION = 10


def create_items(cql, keyspace: str) -> None:
    cql.execute(f"CREATE TYPE {keyspace}.place (city text, zip int)")
    cql.execute(f"CREATE TABLE {keyspace}.items (shop int, id int, qty int, tags set<text>, attrs map<text, int>,"
                f" steps list<int>, at frozen<place>, owner text static, PRIMARY KEY (shop, id)) WITH cdc = true")


def fill(cql, keyspace: str) -> int:
    """PARTITIONS partitions of ROWS_PER_PARTITION rows, a partition per unlogged batch (one mutation)."""
    statement = cql.prepare(f"INSERT INTO {keyspace}.items (shop, id, qty, tags, attrs, steps, at, owner)"
                            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
    rand = random.Random(5)

    def partition(shop: int) -> BatchStatement:
        batch = BatchStatement(BatchType.UNLOGGED)
        for i in range(ROWS_PER_PARTITION):
            n = rand.randrange(1000)
            batch.add(statement, (shop, i, n, {f"t{n % 7}", "all"}, {"w": n, "h": n // 2}, [n, n + 1, n + 2],
                                  (f"c{n % 13}", n), f"o{shop}"))
        return batch

    batches = [(partition(shop), None) for shop in range(PARTITIONS)]
    for ok, result in execute_concurrent(cql, batches, concurrency=32):
        assert ok, result
    return PARTITIONS * ROWS_PER_PARTITION


def writes_during(cql, keyspace: str, stop: threading.Event) -> Counter:
    """Inserts in new partitions, updates and deletes of existing rows, until `stop`; what was done."""
    done: Counter = Counter()
    rand = random.Random(9)
    shop = PARTITIONS
    while not stop.is_set():
        kind = rand.choice(("insert", "update", "delete"))
        if kind == "insert":
            cql.execute(f"INSERT INTO {keyspace}.items (shop, id, qty, tags, steps) VALUES (%s, 0, 1, {{'new'}}, [7])",
                        (shop,))
            shop += 1
        elif kind == "update":
            cql.execute(f"UPDATE {keyspace}.items SET qty = %s, attrs = attrs + {{'u': 1}} WHERE shop = %s AND id = %s",
                        (rand.randrange(10_000), rand.randrange(PARTITIONS), rand.randrange(ROWS_PER_PARTITION)))
        else:  # never the partition's last row: a partition of its static column only reads as a row of it
            cql.execute(f"DELETE FROM {keyspace}.items WHERE shop = %s AND id = %s",
                        (rand.randrange(PARTITIONS), rand.randrange(1, ROWS_PER_PARTITION)))
        done[kind] += 1
        time.sleep(0.05)
    return done


def as_list(value):
    """A non-frozen list as the log writes it (element timeuuid → value), or as read (values)."""
    if isinstance(value, dict):
        return [v for _, v in sorted(value.items(), key=lambda kv: uuid.UUID(kv[0]).time)]
    return value


def replayed(rows) -> dict[tuple, dict]:
    """The state of each row after the sink's log rows, applied in write-time order (the static column
    aside: it belongs to the partition, and the test never changes it)."""
    state: dict[tuple, dict | None] = {}
    for r in sorted(rows, key=lambda r: r["write_time_us"]):
        key = json.loads(r["key"])
        k = (key["shop"], key["id"])
        if r["cdc$operation"] == R.ROW_READ:
            state[k] = {c: json.loads(v) for c, v in r["columns"].items() if c != "owner"}
        elif r["cdc$operation"] in (R.ROW_INSERT, R.ROW_UPDATE):
            current = state.get(k) or {}
            for c in r["deleted_columns"]:
                current.pop(c, None)
            for c, v in r["columns"].items():
                value = json.loads(v)
                if c in ("attrs",) and c not in r["deleted_columns"] and c in current:
                    value = current[c] + value  # map elements added: keys are new or replaced
                    value = list({k_: v_ for k_, v_ in value}.items())
                current[c] = value
            state[k] = current
        elif r["cdc$operation"] == R.ROW_DELETE:
            state[k] = None
    return {k: v for k, v in state.items() if v is not None}


def collected(log) -> list[dict]:
    """The log rows the comparison reads, through Arrow (Row objects cost seconds per 100,000)."""
    fields = ["key", "cdc$operation", "columns", "deleted_columns", "write_time_us", "cdc$stream_id"]
    return [{**r, "columns": dict(r["columns"])}
            for r in log.select(*(f"`{f}`" for f in fields)).toArrow().to_pylist()]


def table_now(cql, keyspace: str) -> dict[tuple, dict]:
    """`SELECT JSON *` of the table but its static column, in the log rows' forms (maps as pairs)."""
    out = {}
    for (text,) in cql.execute(f"SELECT JSON * FROM {keyspace}.items"):
        row = json.loads(text)
        k = (row.pop("shop"), row.pop("id"))
        row.pop("owner")
        if row["attrs"] is not None:
            row["attrs"] = sorted([key, v] for key, v in row["attrs"].items())
        out[k] = {c: v for c, v in row.items() if v is not None}
    return out


def normal(state: dict) -> dict:
    state = dict(state)
    if "attrs" in state:
        state["attrs"] = sorted(list(p) for p in state["attrs"])
    if "steps" in state:
        state["steps"] = as_list(state["steps"])
    if "tags" in state:
        state["tags"] = sorted(state["tags"])
    return state


def split_ranges(cql, generations_keyspace: str) -> int:
    """Publish a generation starting in 2 s whose ranges cut each of the ring's in two, as a node
    joining would; how many ranges the ring had."""
    store = GenerationStore(cql, generations_keyspace)
    ring = read_ring(cql)
    tokens = sorted(t for node in ring.values() for t in node)
    halves = [(a + b) // 2 for a, b in zip(tokens, tokens[1:])]
    node = next(iter(ring))
    finer = {**ring, node: tuple(sorted({*ring[node], *halves}))}
    store.publish(Generation((time.time_ns() // 1_000_000 + 2_000) * 1000, build_topology_description(finer, rand=3)))
    time.sleep(3)
    return len(tokens) + 1  # the wrap-around range is read as two


def test_snapshot_then_log_equals_the_table_after_kill_9_mid_snapshot(spark, cql, keyspace, served, stack,
                                                                     tmp_path):
    control, registry, _, base = served
    create_items(cql, keyspace)
    existing = fill(cql, keyspace)
    topic = topic_name(base["topic_prefix"], keyspace, "items")
    wait_for(lambda: sum(end_offsets({"bootstrap.servers": stack.kafka_bootstrap}, topic).values()) >= existing, 120,
             "the existing rows' changes in Kafka (before the snapshot's version)")
    lake = tmp_path / "lake"
    control.create("copy", Change(table=f"{keyspace}.items", sink="delta", sink_config={"path": str(lake)},
                                  start="snapshot"))
    # Several micro-batches, the first done within seconds at the first runner's pace (250 rows/s a
    # range): a kill lands between two, whatever the table's size.
    step = min(200, max(50, PARTITIONS // 2))
    settings = dict(lease_ttl=8, snapshot_step_partitions=step)
    # The first runner reads slowly, so the kill lands mid-snapshot; the second as fast as it can.
    first = runner_process(stack, base, tmp_path, "first", snapshot_rate_limit=250, **settings)
    second = None
    stop_writes = threading.Event()
    written: Counter = Counter()
    writer = threading.Thread(target=lambda: written.update(writes_during(cql, keyspace, stop_writes)), daemon=True)
    try:
        def reading() -> bool:
            progress = registry.progress("copy", 1)
            return any(p.snapshot_token is not None and p.snapshot_token != p.range_end for p in progress)

        wait_for(reading, 180, "the snapshot part way through a range")
        writer.start()
        time.sleep(2)
        first.send_signal(signal.SIGKILL)
        first.wait(30)
        killed = {p.range_end: p.snapshot_token for p in registry.progress("copy", 1)}
        assert registry.snapshot_version("copy", 1).finished is None, "the kill was meant to land mid-snapshot"
        ranges_before = split_ranges(cql, base["generations_keyspace"])
        # The second runner would publish a generation for the real ring again; not before the end.
        # Larger steps: what is left in a few micro-batches.
        second = runner_process(stack, base, tmp_path, "second", generation_delay=600,
                                **{**settings, "snapshot_step_partitions": 2 * PARTITIONS})
        wait_for(lambda: (v := registry.snapshot_version("copy", 1)) is not None and v.finished is not None, 300,
                 "the snapshot finished by the second runner")
        time.sleep(3)
        stop_writes.set()
        writer.join(30)
        expected = table_now(cql, keyspace)

        def changes_logged() -> int:
            """Log rows of changes (not of reads), counted from the table's files while waiting."""
            operations = delta_log(lake / "cdc_log", ["cdc$operation"])["cdc$operation"]
            return pc.sum(pc.not_equal(operations, R.ROW_READ)).as_py() or 0

        # Every write made during the snapshot is one log row after it; the whole log then compared once,
        # as Spark reads it.
        wait_for(lambda: changes_logged() >= sum(written.values()), 180,
                 "the log rows of the writes made during the snapshot")
        rows = collected(spark.read.format("delta").load(str(lake / "cdc_log")))
        state = {k: normal(v) for k, v in replayed(rows).items()}
        assert state == {k: normal(v) for k, v in expected.items()}, "the sink's replayed log differs from SELECT *"
        reads = Counter((json.loads(r["key"])["shop"], json.loads(r["key"])["id"]) for r in rows
                        if r["cdc$operation"] == R.ROW_READ)
        assert max(reads.values()) == 1, "a row was read twice: a range restarted from its start"
        assert sum(reads.values()) >= existing - written["delete"]
        assert all(r["cdc$stream_id"] is not None for r in rows)
        assert all(json.loads(r["columns"]["owner"]) == f"o{json.loads(r['key'])['shop']}" for r in rows
                   if r["cdc$operation"] == R.ROW_READ and json.loads(r["key"])["shop"] < PARTITIONS)
        progress = registry.progress("copy", 1)
        # Ranges the first runner had finished or started were continued, not read again; the ranges
        # were cut finer by the generation published in between, each part keeping its parent's place.
        assert any(token is not None for token in killed.values())
        assert len([p for p in progress if p.snapshot_token is not None]) > ranges_before
        assert all(p.snapshot_token == p.range_end for p in progress if p.snapshot_token is not None)
        assert written["insert"] and written["update"] and written["delete"]
        print(f"\n{existing} rows, {len(progress)} ranges, writes during the snapshot: {dict(written)}; "
              f"{sum(1 for r in rows if r['cdc$operation'] != R.ROW_READ)} log rows delivered after it")
        shown = control.show("copy")
        assert shown["snapshot"]["finished"] is not None
    finally:
        stop_writes.set()
        for process in (first, second):
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(120)
                except subprocess.TimeoutExpired:
                    process.kill()


def test_a_step_of_more_partitions_than_a_page_ends_at_its_own_partition(cql, keyspace, stack):
    """The probe planning a micro-batch reads its whole answer: a step of more partitions than the driver's
    page (5,000 rows) ends at that many partitions, not at its range's end; every step of a batch is answered."""
    cql.execute(f"CREATE TABLE {keyspace}.many (k int PRIMARY KEY, v int)")
    insert = cql.prepare(f"INSERT INTO {keyspace}.many (k, v) VALUES (?, 0)")
    execute_concurrent_with_args(cql, insert, [(k,) for k in range(6_000)], concurrency=100)
    tokens = sorted(row[0] for row in cql.execute(f"SELECT token(k) FROM {keyspace}.many"))
    assert len(tokens) == 6_000
    cluster, session = connect([stack.cassandra_host], stack.cassandra_port)
    try:
        raw = raw_rows(session)
        statement = raw.prepare(TableRows(*read_table(cql, keyspace, "many")).probe)
        steps = [(MIN_TOKEN, MAX_TOKEN, 5_500), (tokens[100], MAX_TOKEN, 10), (MIN_TOKEN, MAX_TOKEN, 6_001)]
        assert probe(raw, statement, steps) == [tokens[5_499], tokens[110], None]
    finally:
        cluster.shutdown()
