"""ringtail on the Cassandra series users run besides 5.0: a 4.0 and a 4.1 node of the local stack
(`RINGTAIL_STACK_CASSANDRA_VERSION`, on Java 11 from PyPI), each on an address of its own for this module
(`side_stacks.CASSANDRA_40`, `CASSANDRA_41`; the broker, registry, PostgreSQL and MariaDB are the main stack's),
one after the other, thrown away after their tests. The connector reads each node's own commit log
(segment format 7, as 5.0's in its default compatibility mode) and learns its schema from that node.

Besides this module's own tests, the suites the main (5.0) node runs (`tests/integration/suites`) run here
on each older node: the golden workload (every CQL type but `vector`, 5.0's) decoded from the node's
segments, the generation built from its ring, and the job into Delta. This module's `node` and `cql` are
the older node and a session on it (and `keyspace` is made there)."""
from __future__ import annotations

import json
import random
import shutil
import time
from collections import Counter

import psycopg
import pytest
from pyspark.sql import functions as F

from connector.commitlog import CommitLogError, skip_unknown_tables
from connector.native_changes import native_changes
from schemas.tables.loader import read_snapshot
from spark import rows as R

from spark.subscriptions.model import Change
from tests.integration.conftest import serving
from tests.integration.mirrors import layout_of, postgres_mirror, source_rows
from tests.integration.pipeline import changes_of_every_kind_arrive, frontier_past, has_marker, write_marker
from tests.integration.side_stacks import CASSANDRA_40, CASSANDRA_41, running, session_on
from tests.integration.suites.golden import GoldenWorkload, flush_commitlog
from tests.integration.suites.job import JobIntoDelta
from tests.integration.suites.ring_streams import StreamsOfTheRing
from tests.support import wait_for
from tests.unit.connector.commitlog.damage import entry_spans, with_fixed_crcs
from tests.unit.connector.commitlog.native_oracle import reference_changes


@pytest.fixture(scope="module", params=[CASSANDRA_40, CASSANDRA_41], ids=lambda side: side.name)
def node(request, stack):
    """The stack with the node of one older version in place of the main one's (started in turn)."""
    with running(request.param, stack, request) as described:
        yield described


@pytest.fixture(scope="module")
def cql(node):
    with session_on(node) as session:
        yield session


def test_the_node_runs_the_version_asked_for(node, cql):
    series = node.run_dir.name.removeprefix("cassandra-")
    release = cql.execute("SELECT release_version FROM system.local").one().release_version
    assert release == series and series.startswith("4."), f"asked for {series}, the node runs {release}"
    assert any(p.name.startswith("CommitLog-7-") for p in node.cdc_raw.parent.joinpath("commitlog").iterdir())


def test_changes_of_every_kind_arrive_as_events(node, cql, keyspace, pipeline):
    """And the node's frontier follows them: its host id, its sync bound read from 4.x's settings names."""
    connector, consumer = pipeline(on=node)
    connector.start_from_now()
    connector.start()
    changes_of_every_kind_arrive(cql, keyspace, connector, consumer)
    written = time.time_ns() // 1000
    record = frontier_past(node, connector.prefix, written)
    assert record.host_id == str(cql.execute("SELECT host_id FROM system.local").one().host_id)
    assert record.bound_ms == 2500  # the stack's 1000 ms period and Cassandra's lag, 1.5 periods
    assert f"{connector.prefix}.{keyspace}.orders" in record.offsets


def test_tables_created_and_altered_after_start_are_captured(node, cql, keyspace, pipeline):
    """DBZ-3417 and its family: the connector learns each table and column from the node as it goes."""
    ks = keyspace
    connector, consumer = pipeline(on=node)
    connector.start_from_now()
    connector.start()
    cql.execute(f"CREATE TABLE {ks}.late (id int PRIMARY KEY, old map<text, int>, v int) WITH cdc = true")
    cql.execute(f"INSERT INTO {ks}.late (id, old, v) VALUES (1, {{'a': 1}}, 10)")
    cql.execute(f"ALTER TABLE {ks}.late ADD added text")
    cql.execute(f"UPDATE {ks}.late SET added = 'new' WHERE id = 2")
    cql.execute(f"ALTER TABLE {ks}.late DROP old")
    cql.execute(f"UPDATE {ks}.late SET added = 'after drop' WHERE id = 3")
    cql.execute(f"CREATE TABLE {ks}.plain (id int PRIMARY KEY, v int)")
    cql.execute(f"INSERT INTO {ks}.plain (id, v) VALUES (1, 1)")
    cql.execute(f"ALTER TABLE {ks}.plain WITH cdc = true")
    cql.execute(f"INSERT INTO {ks}.plain (id, v) VALUES (2, 2)")
    events = [e for e in consumer.until(has_marker(write_marker(cql, ks))) if e["source"]["table"] != "marker"]
    late = {e["_key"]["id"]: e for e in events if e["source"]["table"] == "late"}
    assert sorted(late) == [1, 2, 3]
    assert late[1]["after"]["v"]["value"] == 10
    assert late[2]["after"]["added"]["value"] == "new" and late[3]["after"]["added"]["value"] == "after drop"
    assert "old" not in late[3]["after"], "a dropped column in an event written after the drop"
    assert [e["_key"]["id"] for e in events if e["source"]["table"] == "plain"] == [2]


def test_a_snapshot_then_the_log_keep_a_mirror_equal_to_select_star(node, cql, keyspace, pipeline, spark,
                                                                      tmp_path):
    """The rows written before the subscription come from a snapshot — on 4.x without the write times of a
    collection's elements, which take the snapshot version's start — and the changes after it from the log.
    A second subscription snapshots the same table into a Delta log: its read rows, which the native core
    makes from the node's own pages, hold each row's values as `SELECT *` does."""
    ks = keyspace
    connector, _ = pipeline(on=node)
    with serving(node, cql, ks, tmp_path, connector, spark) as (control, _, run_runner, _):
        cql.execute(f"CREATE TABLE {ks}.tagged (id int PRIMARY KEY, qty int, tags set<text>, attrs map<text, int>)"
                    " WITH cdc = true")
        insert = cql.prepare(f"INSERT INTO {ks}.tagged (id, qty, tags, attrs) VALUES (?, ?, ?, ?)")
        for k in range(60):
            cql.execute(insert, (k, k, {f"t{k}", "all"}, {"a": k}))
        run_runner(runner_id="only")
        schema = f"{ks}_mirror"
        control.create("pg", Change(table=f"{ks}.tagged", sink="postgres", start="snapshot", sink_config={
            "dsn": node.postgres_dsn, "schema": schema, "layout": "mirror"}))
        lake = tmp_path / "lake"
        control.create("lake", Change(table=f"{ks}.tagged", sink="delta", start="snapshot",
                                      sink_config={"path": str(lake)}))
        for k in range(60, 90):
            cql.execute(insert, (k, k, {f"t{k}"}, None))
        cql.execute(f"UPDATE {ks}.tagged SET tags = tags + {{'x'}}, attrs['b'] = 2 WHERE id = 3")
        cql.execute(f"UPDATE {ks}.tagged SET tags = tags - {{'all'}} WHERE id = 4")
        cql.execute(f"DELETE attrs['a'] FROM {ks}.tagged WHERE id = 5")
        cql.execute(f"UPDATE {ks}.tagged USING TTL 3600 SET qty = 0 WHERE id = 6")
        cql.execute(f"DELETE FROM {ks}.tagged WHERE id = 7")
        layout = layout_of(cql, ks, "tagged")
        source = source_rows(cql.cluster, layout)
        try:
            # Rows 0-59 can only come from the snapshot: the log is read from after them (its version's offsets).
            wait_for(lambda: postgres_mirror(node.postgres_dsn, layout) == source, 180,
                     "the mirror equal to SELECT *")
            wait_for(lambda: control.show("pg")["snapshot"]["finished"], 60, "the snapshot recorded as finished")
            wait_for(lambda: control.show("lake")["snapshot"]["finished"], 60, "the log's snapshot finished")
        finally:
            with psycopg.connect(node.postgres_dsn, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS {schema}, "{ks}" CASCADE')
    assert len(source) == 89
    reads = (spark.read.format("delta").load(str(lake / "cdc_log")).where(F.col("`cdc$operation`") == R.ROW_READ)
             .select("key", "columns", "write_time_us", "`cdc$stream_id`").toArrow().to_pylist())
    read = Counter(json.loads(r["key"])["id"] for r in reads)
    # Rows 8-59 are never changed after they are written (row 7 may be deleted before it is read): each is read
    # once, at any time, and holds what it was given.
    assert set(range(8, 60)) <= set(read) and max(read.values()) == 1, "a row written before the snapshot not read once"
    assert all(r["write_time_us"] > 0 and r["cdc$stream_id"] is not None for r in reads)
    values = {json.loads(r["key"])["id"]: {c: json.loads(v) for c, v in r["columns"]} for r in reads}
    assert all(values[k] == {"qty": k, "tags": sorted(["all", f"t{k}"]), "attrs": [["a", k]]} for k in range(8, 60))


def _read_to_damage(read, path, schema, limit):
    """The changes read before the first error, and that error's class and position (None if none)."""
    changes = []
    try:
        for change in read(path, schema, limit, skip_unknown_tables):
            changes.append(change)
    except CommitLogError as error:
        return changes, (type(error).__name__, error.position)
    return changes, None


class TestGoldenWorkload(GoldenWorkload):
    """The golden workload on the older node, without `vector` (5.0's), and damage to its segment."""

    def test_damaged_copies_of_the_nodes_segment_read_alike_and_lose_nothing_before_the_damage(
            self, node, cql, workload, tmp_path):
        """Seeded damage to copies of the segment the node wrote the golden workload into — bytes of an entry
        changed with its CRC left (framing damage) or fixed (damage the decoder meets): both decoders give the
        same changes and the same typed error at the same position, and every change of the entries before
        the damaged one is read."""
        segments = flush_commitlog(cql, workload, node.cdc_raw)
        segment, limit = max(segments.items(), key=lambda item: int(item[0].stem.rsplit("-", 1)[1]))
        original = tmp_path / segment.name
        shutil.copyfile(segment, original)
        _, schema = read_snapshot(cql)
        undamaged, error = _read_to_damage(native_changes, original, schema, limit)
        assert error is None and undamaged == list(reference_changes(original, schema, limit, skip_unknown_tables))
        spans = entry_spans(original, schema, limit)
        pristine = original.read_bytes()
        damaged = tmp_path / "damaged" / segment.name
        damaged.parent.mkdir()
        rng = random.Random(38)
        errors = set()
        for case in range(40):
            offset, size = rng.choice(spans)
            data = bytearray(pristine)
            for _ in range(rng.randint(1, 3)):
                position = offset + 8 + rng.randrange(size)
                data[position] = (data[position] + rng.randrange(1, 256)) % 256  # never the byte it was
            fixed = case % 2 == 1
            if fixed:
                with_fixed_crcs(data, offset, size)
            damaged.write_bytes(data)
            native = _read_to_damage(native_changes, damaged, schema, limit)
            assert native == _read_to_damage(reference_changes, damaged, schema, limit), f"case {case}: entry {offset}"
            changes, error = native
            before = [c for c in undamaged if c.position.entry_offset < offset]
            assert changes[:len(before)] == before, f"case {case}: changes before the damaged entry {offset} lost"
            if not fixed:
                assert error is not None and error[1] == offset, f"case {case}: framing damage at {offset} not reported"
            errors.add(error and error[0])
        assert len(errors - {None}) >= 2, errors


class TestStreamsOfTheRing(StreamsOfTheRing):
    """The generation built from the older node's ring."""


class TestJobIntoDelta(JobIntoDelta):
    """The job into Delta, reading the older node's connector."""
