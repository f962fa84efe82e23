"""Schema history: cdc periods by write time, dropped tables kept while segments may hold them."""
from __future__ import annotations

import uuid

from connector.schema.history import BEGINNING, SchemaChange, SchemaHistory
from connector.schema.store import load_history, save_history
from schemas.change import Cell, Change, ComplexColumn, DeletionTime, Liveness, Op, Position, write_time
from schemas.tables.model import Column, ColumnKind, DroppedColumn, SchemaSnapshot, Table, UserType

ORDERS = uuid.UUID("00000000-0000-0000-0000-000000000001")
AUDIT = uuid.UUID("00000000-0000-0000-0000-000000000002")
KEY = Column("id", "int", ColumnKind.PARTITION_KEY, 0)
HOME = UserType("shop", "address", ("street",), ("text",))


def table(table_id=ORDERS, name="orders", cdc=True, altered_at=None, extra=(), dropped=None) -> Table:
    return Table("shop", name, table_id, (KEY, Column("home", "address", ColumnKind.REGULAR), *extra), cdc,
                 dropped or {}, altered_at)


def snapshot(*tables: Table, types=(HOME,)) -> SchemaSnapshot:
    return SchemaSnapshot.of(tables, types)


def test_a_history_starting_now_captures_every_change_of_cdc_tables():
    history = SchemaHistory.first(snapshot(table(), table(AUDIT, "audit", cdc=False)))
    assert history.captures(ORDERS, BEGINNING) and history.captures(ORDERS, 10**18)
    assert not history.captures(AUDIT, 5)
    assert history.ever_cdc


def test_cdc_switched_on_and_off_applies_by_write_time():
    history = SchemaHistory.first(snapshot(table(cdc=False)))
    assert not history.ever_cdc
    history, changes = history.apply(snapshot(table(cdc=True, altered_at=1_000_000)), None, 7, now=5_000_000)
    assert changes == [SchemaChange("cdc_enabled", "shop.orders")]
    assert [history.captures(ORDERS, t) for t in (999_999, 1_000_000, 1_500_000)] == [False, True, True]
    history, changes = history.apply(snapshot(table(cdc=False, altered_at=2_000_000)), None, 7, now=5_000_000)
    assert changes == [SchemaChange("cdc_disabled", "shop.orders")]
    assert [history.captures(ORDERS, t) for t in (999_999, 1_000_000, 1_999_999, 2_001_000)] == [
        False, True, True, False]


def test_a_write_in_the_millisecond_cdc_went_off_is_captured():
    """Cassandra dates the ALTER to its millisecond; the write made just before it, in that millisecond,
    carries a client timestamp up to 999 µs later: it was CDC data, and is captured."""
    history = SchemaHistory.first(snapshot(table(cdc=True)))
    history = history.record_flag(ORDERS, False, 2_000_000)
    assert [history.captures(ORDERS, t) for t in (2_000_000, 2_000_999, 2_001_000)] == [True, True, False]
    never = SchemaHistory.first(snapshot(table(cdc=False))).record_flag(ORDERS, False, 2_000_000)
    assert not never.captures(ORDERS, 2_000_500)


def test_flags_read_from_the_commit_log_correct_a_snapshot_that_missed_them():
    """CREATE with cdc = true at 100 ms, ALTER to false at 200 ms, both before the first refresh saw the table."""
    history = SchemaHistory.first(snapshot())
    history, _ = history.apply(snapshot(table(cdc=False, altered_at=200_000)), None, 1, now=300_000)
    assert not history.captures(ORDERS, 150_000)
    history = history.record_flag(ORDERS, True, 100_000).record_flag(ORDERS, False, 200_000)
    assert [history.captures(ORDERS, t) for t in (99_999, 100_000, 199_999, 201_000)] == [False, True, True, False]
    assert history.record_flag(ORDERS, False, 200_000) is history
    # And the other way round: created without cdc at 100 ms, switched on at 200 ms, first seen with cdc.
    history = SchemaHistory.first(snapshot())
    history, _ = history.apply(snapshot(table(cdc=True, altered_at=200_000)), None, 1, now=300_000)
    history = history.record_flag(ORDERS, False, 100_000).record_flag(ORDERS, True, 200_000)
    assert [history.captures(ORDERS, t) for t in (150_000, 200_000)] == [False, True]


def test_a_table_created_with_cdc_captures_even_old_client_timestamps():
    history = SchemaHistory.first(snapshot())
    history, changes = history.apply(snapshot(table(altered_at=10**15)), None, 3, now=10**15)
    assert changes == [SchemaChange("table_created", "shop.orders")]
    assert history.captures(ORDERS, 1)


def test_columns_added_and_dropped_are_one_alteration():
    added = Column("note", "text", ColumnKind.REGULAR)
    history = SchemaHistory.first(snapshot(table()))
    history, changes = history.apply(snapshot(table(extra=(added,))), None, 1, now=1)
    assert changes == [SchemaChange("table_altered", "shop.orders")]
    gone = {"note": DroppedColumn("note", "text", 99)}
    history, changes = history.apply(snapshot(table(dropped=gone)), None, 1, now=1)
    assert changes == [SchemaChange("table_altered", "shop.orders")]
    assert history.decoding.table(ORDERS).dropped_columns["note"].type == "text"


def test_a_table_dropped_and_created_again_is_decoded_beside_its_successor_under_one_name():
    again = uuid.UUID("00000000-0000-0000-0000-000000000003")
    history = SchemaHistory.first(snapshot(table()))
    history, _ = history.apply(snapshot(table(again)), None, newest_segment=42, now=1)
    assert {t.id for t in history.decoding.tables_named("shop", "orders")} == {ORDERS, again}
    assert history.current.tables_named("shop", "orders") == [history.current.table(again)]
    assert history.decoding.tables_named("shop", "audit") == []


def test_a_dropped_table_is_kept_until_its_segments_are_released():
    history = SchemaHistory.first(snapshot(table(), table(AUDIT, "audit", cdc=False)))
    # The whole keyspace goes: its type too, which the dropped table still needs.
    history, changes = history.apply(SchemaSnapshot(), None, newest_segment=42, now=1)
    assert set(changes) == {SchemaChange("table_dropped", "shop.orders"), SchemaChange("table_dropped", "shop.audit"),
                            SchemaChange("type_dropped", "shop.address")}
    assert history.decoding.table(ORDERS).name == "orders"
    assert history.decoding.types_of("shop")["address"] == HOME
    assert history.captures(ORDERS, 5)
    assert history.release(41) is history
    released = history.release(42)
    assert released.decoding.table(ORDERS) is None and not released.captures(ORDERS, 5)
    assert not released.ever_cdc


def test_a_dropped_table_learns_a_column_and_a_table_never_seen_is_kept_like_a_dropped_one():
    history = SchemaHistory.first(snapshot(table()))
    history, _ = history.apply(snapshot(), None, newest_segment=42, now=1)
    added = Column("w", "int", ColumnKind.REGULAR)
    patched = history.with_retained_column(ORDERS, added)
    assert patched.decoding.table(ORDERS).column("w") == added and history.decoding.table(ORDERS).column("w") is None
    assert patched.retained[ORDERS].until_segment == 42 and patched.captures(ORDERS, 5)
    wider = UserType("shop", "address", ("street", "zip"), ("text", "int"))
    logged = patched.with_retained_table(table(AUDIT, "audit"), 43, {"address": wider})
    assert logged.decoding.table(AUDIT).name == "audit" and logged.decoding.table(ORDERS).column("w") == added
    assert logged.retained[AUDIT].user_types == {"address": wider}  # the wider of the log's and the cluster's
    assert logged.release(42).decoding.table(AUDIT) is not None and logged.release(43).decoding.table(AUDIT) is None


def test_a_dropped_table_takes_a_wider_version_of_its_type_never_a_narrower_one():
    history, _ = SchemaHistory.first(snapshot(table())).apply(SchemaSnapshot(), None, newest_segment=42, now=1)
    assert history.retained[ORDERS].user_types == {"address": HOME}
    wider = UserType("shop", "address", ("street", "zip"), ("text", "int"))
    widened = history.with_retained_type(wider)
    assert widened.retained[ORDERS].user_types == {"address": wider}
    assert widened.with_retained_type(HOME) is widened
    assert widened.with_retained_type(UserType("other", "address", ("a", "b", "c"), ("int",) * 3)) is widened


def test_a_refresh_keeps_the_objects_of_unchanged_tables():
    history = SchemaHistory.first(snapshot(table(), table(AUDIT, "audit", cdc=False)))
    kept = history.current.table(ORDERS)
    later, changes = history.apply(snapshot(table(), table(AUDIT, "audit", cdc=False, extra=(
        Column("w", "int", ColumnKind.REGULAR),))), None, 1, now=1)
    assert changes == [SchemaChange("table_altered", "shop.audit")]
    assert later.current.table(ORDERS) is kept and later.current.table(AUDIT).column("w") is not None
    retimed, _ = later.apply(snapshot(table(altered_at=5), later.current.table(AUDIT)), None, 1, now=1)
    assert retimed.current.table(ORDERS) is not kept and retimed.current.table(ORDERS).altered_at == 5


def test_types_created_and_altered():
    history = SchemaHistory.first(snapshot(types=()))
    history, changes = history.apply(snapshot(types=(HOME,)), None, 1, now=1)
    assert changes == [SchemaChange("type_created", "shop.address")]
    wider = UserType("shop", "address", ("street", "zip"), ("text", "int"))
    history, changes = history.apply(snapshot(types=(wider,)), None, 1, now=1)
    assert changes == [SchemaChange("type_altered", "shop.address")]


def test_the_stored_history_reads_back_the_same(tmp_path):
    version = uuid.uuid4()
    history = SchemaHistory.first(snapshot(table(cdc=False)), version)
    history, _ = history.apply(snapshot(table(cdc=True, altered_at=1_000),
                                        table(AUDIT, "audit", cdc=False, dropped={"x": DroppedColumn("x", "int", 7)})),
                               version, 1, now=1)
    history, _ = history.apply(snapshot(table(AUDIT, "audit", cdc=False)), version, 9, now=2)
    path = tmp_path / "schema.json"
    save_history(path, history)
    loaded = load_history(path)
    assert loaded.version == version
    assert dict(loaded.cdc_flags) == dict(history.cdc_flags)
    assert loaded.retained[ORDERS].until_segment == 9
    assert loaded.retained[ORDERS].user_types == {"address": HOME}
    for table_id in (ORDERS, AUDIT):
        a, b = loaded.decoding.table(table_id), history.decoding.table(table_id)
        assert (a.columns, dict(a.dropped_columns), a.cdc, a.altered_at) == (
            b.columns, dict(b.dropped_columns), b.cdc, b.altered_at)
    assert load_history(tmp_path / "missing.json") is None


def test_write_time_is_the_newest_timestamp_of_the_change():
    cells = {"a": Cell(1, 10), "b": ComplexColumn(DeletionTime(30, 0), [Cell(2, 20, path=0)])}
    change = Change(Position(1, 2, 0, 0), table(), Op.UPDATE, (1,), cells=cells)
    assert write_time(change) == 30
    change.liveness = Liveness(40)
    assert write_time(change) == 40
    deleted = Change(Position(1, 2, 0, 0), table(), Op.PARTITION_DELETE, (1,), deletion=DeletionTime(50, 0))
    assert write_time(deleted) == 50
