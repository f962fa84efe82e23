"""ringtail on the Cassandra series users run besides 5.0: a 4.0 and a 4.1 node of the local stack
(`RINGTAIL_STACK_CASSANDRA_VERSION`, on Java 11 from PyPI), each on an address of its own for this module
(`side_stacks.CASSANDRA_40`, `CASSANDRA_41`; the broker, registry and PostgreSQL are the main stack's),
one after the other, thrown away after their tests. The connector reads each node's own commit log
(segment format 7, as 5.0's in its default compatibility mode) and learns its schema from that node."""
from __future__ import annotations

import psycopg
import pytest

from spark.subscriptions.model import Change
from tests.integration.conftest import serving
from tests.integration.mirrors import layout_of, postgres_mirror, source_rows
from tests.integration.pipeline import changes_of_every_kind_arrive, has_marker, write_marker
from tests.integration.side_stacks import CASSANDRA_40, CASSANDRA_41, running, session_on
from tests.support import new_keyspace, wait_for


@pytest.fixture(scope="module", params=[CASSANDRA_40, CASSANDRA_41], ids=lambda side: side.name)
def versioned(request, stack):
    """The stack with the node of one older version in place of the main one's (started in turn)."""
    with running(request.param, stack) as described:
        yield described


@pytest.fixture(scope="module")
def versioned_cql(versioned):
    with session_on(versioned) as session:
        yield session


@pytest.fixture
def versioned_keyspace(versioned_cql):
    with new_keyspace(versioned_cql) as name:
        yield name


def test_the_node_runs_the_version_asked_for(versioned, versioned_cql):
    series = versioned.run_dir.name.removeprefix("cassandra-")
    release = versioned_cql.execute("SELECT release_version FROM system.local").one().release_version
    assert release == series, f"asked for {series}, the node runs {release}"
    assert any(p.name.startswith("CommitLog-7-") for p in versioned.cdc_raw.parent.joinpath("commitlog").iterdir())


def test_changes_of_every_kind_arrive_as_events(versioned, versioned_cql, versioned_keyspace, pipeline):
    connector, consumer = pipeline(on=versioned)
    connector.start_from_now()
    connector.start()
    changes_of_every_kind_arrive(versioned_cql, versioned_keyspace, connector, consumer)


def test_tables_created_and_altered_after_start_are_captured(versioned, versioned_cql, versioned_keyspace, pipeline):
    """DBZ-3417 and its family: the connector learns each table and column from the node as it goes."""
    cql, ks = versioned_cql, versioned_keyspace
    connector, consumer = pipeline(on=versioned)
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


def test_a_snapshot_then_the_log_keep_a_mirror_equal_to_select_star(versioned, versioned_cql, versioned_keyspace,
                                                                      pipeline, spark, tmp_path):
    """The rows written before the subscription come from a snapshot — on 4.x without the write times of a
    collection's elements, which take the snapshot version's start — and the changes after it from the log."""
    cql, ks = versioned_cql, versioned_keyspace
    connector, _ = pipeline(on=versioned)
    with serving(versioned, cql, ks, tmp_path, connector, spark) as (control, _, run_runner, _):
        cql.execute(f"CREATE TABLE {ks}.tagged (id int PRIMARY KEY, qty int, tags set<text>, attrs map<text, int>)"
                    " WITH cdc = true")
        insert = cql.prepare(f"INSERT INTO {ks}.tagged (id, qty, tags, attrs) VALUES (?, ?, ?, ?)")
        for k in range(60):
            cql.execute(insert, (k, k, {f"t{k}", "all"}, {"a": k}))
        run_runner(runner_id="only")
        schema = f"{ks}_mirror"
        control.create("pg", Change(table=f"{ks}.tagged", sink="postgres", start="snapshot", sink_config={
            "dsn": versioned.postgres_dsn, "schema": schema, "layout": "mirror"}))
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
            wait_for(lambda: postgres_mirror(versioned.postgres_dsn, layout) == source, 180,
                     "the mirror equal to SELECT *")
            wait_for(lambda: control.show("pg")["snapshot"]["finished"], 60, "the snapshot recorded as finished")
        finally:
            with psycopg.connect(versioned.postgres_dsn, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS {schema}, "{ks}" CASCADE')
    assert len(source) == 89
