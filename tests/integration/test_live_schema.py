"""Schema changes while the connector runs: no change lost, no pause in writes, no restart.

Each test starts the connector's read side (live schema + segment tails) before its DDL, as a
connector running beside the node would be, and reads the real `cdc_raw`.
"""
from __future__ import annotations

import threading
import time

import pytest

from connector.commitlog import Op, UnknownTable
from connector.schema.live import LiveSchema, SchemaUnavailable
from tests.integration.capture import Capture, synced
from tests.support import unused_port, wait_for


@pytest.fixture
def capture(stack, tmp_path):
    with Capture(stack, tmp_path / "schema.json") as running:
        yield running


def rows(changes, table: str) -> list:
    return sorted(c.partition_key[0] for c in changes if c.table.name == table)


def test_table_created_after_start_is_captured(cql, keyspace, capture):
    """DBZ-3417: a CDC table created after the connector started; written at once, no pause."""
    cql.execute(f"CREATE TABLE {keyspace}.late (id int PRIMARY KEY, v text) WITH cdc = true")
    for i in range(50):
        cql.execute(f"INSERT INTO {keyspace}.late (id, v) VALUES ({i}, 'v{i}')")
    changes = capture.until_marker(cql, keyspace)
    assert rows(changes, "late") == list(range(50))
    assert all(c.op is Op.INSERT and c.cells["v"].value == f"v{c.partition_key[0]}" for c in changes)
    assert capture.live.applied >= 1


def test_cdc_switched_on_then_off_applies_to_later_writes(cql, keyspace, capture):
    cql.execute(f"CREATE TABLE {keyspace}.t (id int PRIMARY KEY, v int) WITH cdc = false")
    for i in range(0, 5):
        cql.execute(f"INSERT INTO {keyspace}.t (id, v) VALUES ({i}, 0)")
    # DDL is dated to the millisecond: a write in the same millisecond as the ALTER cannot be told
    # apart from one after it and is captured (kept beats lost), so the writes keep a few ms away.
    time.sleep(0.003)
    cql.execute(f"ALTER TABLE {keyspace}.t WITH cdc = true")
    for i in range(5, 10):
        cql.execute(f"INSERT INTO {keyspace}.t (id, v) VALUES ({i}, 1)")
    cql.execute(f"ALTER TABLE {keyspace}.t WITH cdc = false")
    time.sleep(0.003)
    for i in range(10, 15):
        cql.execute(f"INSERT INTO {keyspace}.t (id, v) VALUES ({i}, 2)")
    # Read only now: by then the live schema says cdc = false, yet the rows written while it was
    # true are CDC data.
    changes = capture.until_marker(cql, keyspace)
    assert rows(changes, "t") == list(range(5, 10))
    decoded = sorted(c.partition_key[0] for c in capture.decoded if c.table.name == "t")
    assert decoded == list(range(15)), "non-CDC writes are decoded (and filtered), not skipped blindly"


def test_columns_added_and_dropped_while_writes_continue(cql, keyspace, capture):
    cql.execute(f"CREATE TABLE {keyspace}.t (id int PRIMARY KEY, old map<text, int>, v int) WITH cdc = true")
    written: list[int] = []
    stop = threading.Event()

    def writer() -> None:
        insert = cql.prepare(f"INSERT INTO {keyspace}.t (id, v) VALUES (?, ?)")
        i = 1000
        while not stop.is_set():
            cql.execute(insert, (i, i))
            written.append(i)
            i += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        cql.execute(f"UPDATE {keyspace}.t SET old = {{'a': 1}} WHERE id = 1")
        cql.execute(f"ALTER TABLE {keyspace}.t ADD added text")
        cql.execute(f"UPDATE {keyspace}.t SET added = 'new' WHERE id = 2")
        cql.execute(f"ALTER TABLE {keyspace}.t DROP old")
        cql.execute(f"UPDATE {keyspace}.t SET added = 'after drop' WHERE id = 3")
        time.sleep(0.5)
    finally:
        stop.set()
        thread.join()
    changes = capture.until_marker(cql, keyspace)
    assert len(written) > 10
    assert rows(changes, "t") == [1, 2, 3, *written]
    by_id = {c.partition_key[0]: c for c in changes}
    # Written before the DROP, read after it: decoded with the dropped column's recorded type.
    assert [cell.path for cell in by_id[1].cells["old"].cells] == ["a"]
    assert by_id[1].cells["old"].cells[0].value == 1
    assert by_id[2].cells["added"].value == "new" and by_id[3].cells["added"].value == "after drop"


def test_unlogged_batch_of_a_cdc_and_a_non_cdc_table(cql, keyspace, capture):
    cql.execute(f"CREATE TABLE {keyspace}.tracked (id int PRIMARY KEY, v text) WITH cdc = true")
    cql.execute(f"CREATE TABLE {keyspace}.plain (id int PRIMARY KEY, v text)")
    # One partition key: both partition updates travel in one mutation.
    cql.execute(f"BEGIN UNLOGGED BATCH"
                f" INSERT INTO {keyspace}.plain (id, v) VALUES (7, 'not captured');"
                f" INSERT INTO {keyspace}.tracked (id, v) VALUES (7, 'captured');"
                f" APPLY BATCH")
    changes = capture.until_marker(cql, keyspace)
    assert [(c.table.name, c.cells["v"].value) for c in changes] == [("tracked", "captured")]
    both = [c for c in capture.decoded if c.table.keyspace == keyspace and c.table.name in ("tracked", "plain")]
    assert {c.table.name for c in both} == {"tracked", "plain"}
    assert len({c.position.entry_offset for c in both}) == 1, "the batch is one mutation"


def test_dropped_table_with_unread_segments(stack, cql, keyspace, capture, tmp_path):
    cql.execute(f"CREATE TABLE {keyspace}.doomed (id int PRIMARY KEY, v text) WITH cdc = true")
    for i in range(20):
        cql.execute(f"INSERT INTO {keyspace}.doomed (id, v) VALUES ({i}, 'x')")
    table_id = wait_for(lambda: capture.live.history.current.table_by_name(keyspace, "doomed")).id
    cql.execute(f"DROP TABLE {keyspace}.doomed")
    wait_for(lambda: capture.live.history.current.table(table_id) is None)
    changes = capture.until_marker(cql, keyspace)
    assert rows(changes, "doomed") == list(range(20))

    # A restarted connector knows the dropped table from its stored copy.
    with LiveSchema([stack.cassandra_host], stack.cassandra_port, store=tmp_path / "schema.json") as restarted:
        assert restarted.snapshot.table(table_id).name == "doomed"
        assert restarted.history.captures(table_id, changes[0].liveness.timestamp)


def test_user_type_altered_while_in_use(cql, keyspace, capture):
    cql.execute(f"CREATE TYPE {keyspace}.address (street text)")
    cql.execute(f"CREATE TABLE {keyspace}.t (id int PRIMARY KEY, home address, fixed frozen<address>)"
                f" WITH cdc = true")
    cql.execute(f"INSERT INTO {keyspace}.t (id, home, fixed) VALUES (1, {{street: 'Main'}}, {{street: 'Elm'}})")
    cql.execute(f"ALTER TYPE {keyspace}.address ADD zip int")
    cql.execute(f"INSERT INTO {keyspace}.t (id, home, fixed) VALUES (2, {{street: 'Oak', zip: 5}},"
                f" {{street: 'Ash', zip: 6}})")
    cql.execute(f"UPDATE {keyspace}.t SET home.zip = 7 WHERE id = 1")
    changes = capture.until_marker(cql, keyspace)
    assert [c.partition_key[0] for c in changes] == [1, 2, 1]
    first, second, third = changes
    assert _fields(first.cells["home"]) == {"street": "Main"}
    assert first.cells["fixed"].value == {"street": "Elm"}  # written before the field existed
    assert _fields(second.cells["home"]) == {"street": "Oak", "zip": 5}
    assert second.cells["fixed"].value == {"street": "Ash", "zip": 6}
    assert _fields(third.cells["home"]) == {"zip": 7}


def _fields(column) -> dict:
    return {cell.path: cell.value for cell in column.cells if not cell.tombstone}




def test_a_table_created_and_dropped_before_any_refresh_is_learnt_from_the_commit_log(stack, cql, keyspace,
                                                                                      tmp_path):
    """Created, written and dropped before the schema was ever read: the table is built from its
    CREATE's schema rows in the commit log, and its changes are decoded and captured."""
    capture = Capture(stack, tmp_path / "schema.json")  # positions taken now, schema loaded later
    cql.execute(f"CREATE TABLE {keyspace}.fleeting (id int, c text, v text, PRIMARY KEY (id, c)) WITH cdc = true")
    cql.execute(f"INSERT INTO {keyspace}.fleeting (id, c, v) VALUES (1, 'a', 'kept')")
    cql.execute(f"DROP TABLE {keyspace}.fleeting")
    with capture:
        changes = capture.until_marker(cql, keyspace)
    [change] = [c for c in changes if c.table.name == "fleeting"]
    assert (change.partition_key, change.clustering, change.cells["v"].value) == ((1,), ("a",), "kept")
    assert not capture.undecodable


def test_a_table_never_seen_comes_whole_and_the_read_goes_on(stack, cql, keyspace, tmp_path):
    """Created before the read starts, written and dropped before the schema was ever read: nothing
    tells its columns, and as CDC tables exist its changes may be CDC data — the entry comes whole,
    with its position, and the changes after it are read."""
    cql.execute(f"CREATE TABLE {keyspace}.fleeting (id int PRIMARY KEY, v text) WITH cdc = true")
    table_id = next(r.id for r in cql.execute(
        "SELECT id FROM system_schema.tables WHERE keyspace_name = %s AND table_name = 'fleeting'", (keyspace,)))
    synced(cql, keyspace, stack.cdc_raw)
    capture = Capture(stack, tmp_path / "schema.json")  # positions taken after the CREATE
    cql.execute(f"INSERT INTO {keyspace}.fleeting (id, v) VALUES (1, 'lost?')")
    cql.execute(f"DROP TABLE {keyspace}.fleeting")
    cql.execute(f"CREATE TABLE {keyspace}.after (id int PRIMARY KEY) WITH cdc = true")
    cql.execute(f"INSERT INTO {keyspace}.after (id) VALUES (2)")
    with capture:
        changes = capture.until_marker(cql, keyspace)
    [entry] = capture.undecodable
    assert isinstance(entry.error, UnknownTable) and entry.error.table_id == table_id
    assert entry.position.entry_offset == entry.error.position > 0 and b"lost?" in entry.mutation
    assert rows(changes, "after") == [2]


def test_a_table_dropped_before_its_last_column_was_seen(stack, cql, keyspace, tmp_path):
    """The schema last seen of a table lacks a column added just before the table was dropped: the
    column is learnt from the ALTER's schema rows in the commit log, and the rows written with it are
    decoded."""
    cql.execute(f"CREATE TABLE {keyspace}.brief (id int PRIMARY KEY, v text) WITH cdc = true")
    store = tmp_path / "schema.json"
    with LiveSchema([stack.cassandra_host], stack.cassandra_port, store=store):
        pass  # the stored schema knows `brief` without `w`
    capture = Capture(stack, store)  # positions taken now
    cql.execute(f"INSERT INTO {keyspace}.brief (id, v) VALUES (1, 'before')")
    cql.execute(f"ALTER TABLE {keyspace}.brief ADD w int")
    cql.execute(f"INSERT INTO {keyspace}.brief (id, v, w) VALUES (2, 'with w', 7)")
    cql.execute(f"DROP TABLE {keyspace}.brief")
    with capture:  # loads the stored schema, then finds `brief` dropped
        changes = capture.until_marker(cql, keyspace)
    assert rows(changes, "brief") == [1, 2] and not capture.undecodable
    assert changes[-1].cells["w"].value == 7 and changes[-1].cells["v"].value == "with w"


def test_a_table_dropped_before_its_type_was_seen_altered(stack, cql, keyspace, tmp_path):
    """As above, with a field added to a user type the table holds, the type dropped after the table:
    the field is learnt from the ALTER TYPE's row in the commit log."""
    cql.execute(f"CREATE TYPE {keyspace}.addr (street text)")
    cql.execute(f"CREATE TABLE {keyspace}.brief (id int PRIMARY KEY, u frozen<addr>) WITH cdc = true")
    store = tmp_path / "schema.json"
    with LiveSchema([stack.cassandra_host], stack.cassandra_port, store=store):
        pass  # the stored schema knows `addr` without `zip`
    capture = Capture(stack, store)
    cql.execute(f"INSERT INTO {keyspace}.brief (id, u) VALUES (1, {{street: 'Elm'}})")
    cql.execute(f"ALTER TYPE {keyspace}.addr ADD zip int")
    cql.execute(f"INSERT INTO {keyspace}.brief (id, u) VALUES (2, {{street: 'Oak', zip: 7}})")
    cql.execute(f"DROP TABLE {keyspace}.brief")
    cql.execute(f"DROP TYPE {keyspace}.addr")  # only the dropped table's copy of the type is left
    with capture:
        changes = capture.until_marker(cql, keyspace)
    assert rows(changes, "brief") == [1, 2] and not capture.undecodable
    assert changes[-1].cells["u"].value == {"street": "Oak", "zip": 7}


def test_a_column_never_seen_of_a_dropped_table_comes_whole_and_the_read_goes_on(stack, cql, keyspace, tmp_path):
    """As above, but reading starts after the ALTER: nothing tells the column's type. The entry that
    does not fit comes whole (a refresh that brings nothing new ends the retries), the read goes on."""
    cql.execute(f"CREATE TABLE {keyspace}.brief (id int PRIMARY KEY, v text) WITH cdc = true")
    store = tmp_path / "schema.json"
    with LiveSchema([stack.cassandra_host], stack.cassandra_port, store=store):
        pass
    cql.execute(f"ALTER TABLE {keyspace}.brief ADD w int")
    synced(cql, keyspace, stack.cdc_raw)
    capture = Capture(stack, store)  # positions taken after the ALTER
    cql.execute(f"INSERT INTO {keyspace}.brief (id, v, w) VALUES (2, 'with w', 7)")
    cql.execute(f"DROP TABLE {keyspace}.brief")
    cql.execute(f"CREATE TABLE {keyspace}.after (id int PRIMARY KEY) WITH cdc = true")
    cql.execute(f"INSERT INTO {keyspace}.after (id) VALUES (3)")
    with capture:
        changes = capture.until_marker(cql, keyspace)
    [entry] = capture.undecodable
    assert "w" in str(entry.error) and b"with w" in entry.mutation
    assert rows(changes, "brief") == [] and rows(changes, "after") == [3]


def test_stored_schema_answers_while_cassandra_is_down(stack, cql, keyspace, capture, tmp_path):
    cql.execute(f"CREATE TABLE {keyspace}.kept (id int PRIMARY KEY) WITH cdc = true")
    table = wait_for(lambda: capture.live.history.current.table_by_name(keyspace, "kept"))
    port = unused_port()
    with LiveSchema(["127.0.0.1"], port, store=tmp_path / "schema.json", check_interval=60) as offline:
        assert offline.snapshot.table(table.id).name == "kept"
        assert offline.history.captures(table.id, 1)
    with pytest.raises(SchemaUnavailable):
        LiveSchema(["127.0.0.1"], port, store=tmp_path / "missing.json").start()
